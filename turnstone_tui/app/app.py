"""TurnstoneApp: the full-screen Textual front end.

The engine runs each turn in a worker on the app's own event loop and talks to the app only through
:class:`~turnstone_tui.app.ui_bridge.TextualSessionUI`, which posts the messages handled here.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.reactive import var
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer

from ..config import ConfigError
from ..core.resources import styles_dir
from ..core.types import ApprovalDecision, PlanReview, SessionState
from ..providers.base import ProviderError
from ..widgets import clock
from ..widgets.chat_messages import InfoMessage
from ..widgets.chat_view import ChatView
from ..widgets.pane_grid import ParallelPanes
from ..widgets.prompt_input import PromptArea, PromptInput
from ..widgets.status_bar import StatusBar
from . import messages as m
from .commands import SLASH_COMMANDS, SlashCommandProvider, parse_slash
from .gc_pacing import GcPacer
from .replay import replay_messages
from .ui_bridge import TextualSessionUI

if TYPE_CHECKING:
    from ..core.session import ChatSession
    from ..runtime import Runtime

log = logging.getLogger(__name__)

QUIT_CONFIRM_SECONDS = 2.0
RuntimeFactory = Callable[[], Awaitable["Runtime"]]

STREAM_SLICE_SECONDS = 0.005
"""How long one turn of applying streamed items may take before key presses and other events get
a turn (the rest is applied by a continuation queued behind them)."""
STREAM_SLICE_LINES = 1000
"""Output lines written between two looks at the clock."""
GC_QUIET_SECONDS = 1.0
"""No streamed output for this long: a good moment for a long turn's full collection."""

EngineMessageT = TypeVar("EngineMessageT", bound=m.EngineMessage)
WidgetT = TypeVar("WidgetT", bound=Widget)
EngineHandler = Callable[[Any, EngineMessageT], Awaitable[None] | None]
Deferred = Callable[[], Awaitable[None] | None]


def in_stream_order(handler: EngineHandler[EngineMessageT]) -> EngineHandler[EngineMessageT]:
    """Wrap the handler of a discrete engine message so it runs only after every streamed item the
    bridge sent before it: while streamed items are still waiting, the call is queued behind them."""

    @functools.wraps(handler)
    async def run_in_order(app: TurnstoneApp, message: EngineMessageT) -> None:
        if app._stream_backlog:
            app._stream_backlog.append(functools.partial(handler, app, message))
            app._schedule_stream_slice()
            return
        result = handler(app, message)
        if inspect.isawaitable(result):
            await result

    return run_in_order


class TurnstoneApp(App[None]):
    """The chat app. Give it a ready ``runtime`` (created on the same event loop that runs the app,
    e.g. ``await TurnstoneApp(runtime).run_async()``), or a ``runtime_factory`` the app awaits on
    start (then the app owns the runtime and closes it on exit)."""

    TITLE = "turnstone"
    CSS_PATH = [styles_dir() / "app.tcss", styles_dir() / "chat.tcss"]
    COMMANDS = App.COMMANDS | {SlashCommandProvider}
    AUTO_FOCUS = "#prompt"
    ENABLE_COMMAND_PALETTE = True

    BINDINGS = [
        Binding("escape", "cancel_turn", "Cancel turn", tooltip="Stop the model and any running tools"),
        Binding("ctrl+c", "ctrl_c", "Quit", show=False, priority=True),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True),
        Binding("f2", "toggle_mcp", "MCP panel"),
        Binding("f1", "help", "Help"),
        Binding("ctrl+l", "clear_screen", "Clear", show=False),
    ]

    busy: var[bool] = var(False)
    """A turn is running (the engine is streaming or running tools)."""
    ready: var[bool] = var(False)
    """The session exists; prompts can be sent."""
    raw_mode: var[bool] = var(False)

    def __init__(
        self,
        runtime: Runtime | None = None,
        resume_id: str | None = None,
        *,
        runtime_factory: RuntimeFactory | None = None,
        cwd: Path | None = None,
    ) -> None:
        if runtime is None and runtime_factory is None:
            raise ValueError("TurnstoneApp needs a runtime or a runtime_factory")
        super().__init__()
        self.runtime: Runtime | None = runtime
        self._runtime_factory = runtime_factory
        self._owns_runtime = runtime is None
        self.resume_id = resume_id
        self.cwd = cwd or (runtime.options.cwd if runtime and runtime.options.cwd else None) or Path.cwd()
        self.session: ChatSession | None = None
        self.bridge = TextualSessionUI(self)
        self._state = SessionState.IDLE
        self._state_before_attention = SessionState.IDLE
        self._questions: dict[asyncio.Future[Any], Screen[Any]] = {}
        self._quit_armed_at: float | None = None
        self._engine_closed = False  # not `_closed`: that is MessagePump state
        self.turns_finished = 0
        self._queued: list[tuple[str, InfoMessage]] = []
        """How many turns this app ran to their end (tests and benchmarks wait on it)."""
        self._remove_mcp_listener: Callable[[], None] | None = None
        self._session_ready = asyncio.Event()
        self._gc = GcPacer()
        self._last_stream_batch = 0.0
        self._compaction: asyncio.Future[str] | None = None  # a running /compact (esc cancels it)
        config = runtime.config if runtime else None
        self._max_chat_widgets = config.ui.max_chat_widgets if config else 400
        self._max_pane_lines = config.ui.max_pane_lines if config else 5000
        # Streamed items (and discrete events that arrived behind them) not applied yet, in order.
        self._stream_backlog: deque[m.StreamItem | Deferred] = deque()
        self._stream_line_offset = 0  # lines of the backlog's first OutputLines already written
        self._stream_slice_queued = False
        self._widgets: dict[str, Any] = {}

    # --- layout -----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield ChatView(id="chat", max_widgets=self._max_chat_widgets)
        yield ParallelPanes(max_lines=self._max_pane_lines, id="panes")
        yield PromptArea(id="prompt-area", cwd=self.cwd, argument_completer=self._complete_argument)
        yield StatusBar(id="status-bar")
        yield Footer(id="footer")

    def _widget(self, selector: str, kind: type[WidgetT]) -> WidgetT:
        """A widget of the main screen, looked up once (these are used per streamed item, and a
        query would search whichever screen is on top)."""
        widget = self._widgets.get(selector)
        if widget is None:
            widget = self._widgets[selector] = self.query_one(selector, kind)
        return widget  # type: ignore[no-any-return]

    @property
    def chat(self) -> ChatView:
        return self._widget("#chat", ChatView)

    @property
    def panes(self) -> ParallelPanes:
        return self._widget("#panes", ParallelPanes)

    @property
    def prompt(self) -> PromptInput:
        return self._widget("#prompt", PromptInput)

    @property
    def status_bar(self) -> StatusBar:
        return self._widget("#status-bar", StatusBar)

    def on_mount(self) -> None:
        for selector, kind in (("#chat", ChatView), ("#panes", ParallelPanes), ("#status-bar", StatusBar)):
            self._widget(selector, kind)
        self.bridge.bind_loop(asyncio.get_running_loop())
        if self.runtime is not None:
            self._show_model(self.runtime)
        self._start_session(self.resume_id)

    async def wait_ready(self) -> None:
        """Wait until the first session started (tests and benchmarks; wrap in a timeout)."""
        await self._session_ready.wait()

    # --- session lifecycle ------------------------------------------------------------------

    def _show_model(self, runtime: Runtime) -> None:
        bar = self.status_bar
        bar._model = runtime.provider.model
        bar._provider = runtime.provider.name
        bar._refresh_all()

    @work(group="session", exclusive=True, exit_on_error=False)
    async def _start_session(self, session_id: str | None, *, replay: bool = True) -> None:
        try:
            if self.runtime is None:
                assert self._runtime_factory is not None
                self.runtime = await self._runtime_factory()
                self._show_model(self.runtime)
            runtime = self.runtime
            try:
                self.session = await runtime.create_session(self.bridge, session_id)
            except ValueError as exc:  # unknown session id: say so, start fresh
                await self.chat.add_error(str(exc))
                self.session = await runtime.create_session(self.bridge, None)
            if (
                runtime.mcp is not None
                and self._remove_mcp_listener is None
                and hasattr(runtime.mcp, "add_listener")
            ):
                self._remove_mcp_listener = runtime.mcp.add_listener(lambda _event: self._refresh_status())
            if runtime.mcp is not None and hasattr(runtime.mcp, "set_asks"):
                from .server_asks import AppServerAsks

                runtime.mcp.set_asks(AppServerAsks(self, lambda: runtime.provider.model))
        except Exception as exc:  # storage or provider problems: shown, the app stays up
            log.exception("could not start a session")
            await self.chat.add_error(f"Could not start a session: {exc}")
            self.status_bar.state = SessionState.ERROR
            return
        await self.chat.add_welcome(self._welcome_text())
        banner = getattr(self.runtime.provider, "banner", None)
        if callable(banner):
            with contextlib.suppress(Exception):
                await self.chat.add_info(str(banner()))
        if session_id and replay and self.session.messages:
            await replay_messages(self.chat, self.session.messages, limit=self._max_chat_widgets // 2)
            for message in self.session.messages:
                if message.get("role") == "user" and isinstance(message.get("content"), str):
                    self.prompt.add_history(message["content"])
        self._refresh_status()
        self.ready = True
        if not self._session_ready.is_set():
            # A second after start-up (a full collection takes ~100 ms: not on the first frame).
            self.set_timer(1.0, self._gc.freeze_startup)
            self.set_interval(1, self._gc_tick)
        self._session_ready.set()
        self.refresh_bindings()

    def _welcome_text(self) -> str:
        assert self.runtime is not None and self.session is not None
        provider = self.runtime.provider
        return (
            f"[b]turnstone[/b] · [b]{_escape(provider.model or 'no model')}[/b] via {_escape(provider.name)}"
            f" · in [b]{_escape(self.cwd.name or str(self.cwd))}[/b]\n"
            "[dim]enter[/dim] send · [dim]shift+enter[/dim] newline · [dim]/[/dim] commands · "
            "[dim]@[/dim] files · [dim]esc[/dim] cancel · [dim]f1[/dim] help"
        )

    def _refresh_status(self) -> None:
        if self.session is not None:
            self.status_bar.status = self.session.status()

    async def _replace_session(self, session_id: str | None) -> None:
        """``/new`` and ``/resume``: stop the current turn, close the session, start another."""
        await self._stop_turn()
        old, self.session = self.session, None
        self.ready = False
        if old is not None and self.runtime is not None:
            with contextlib.suppress(Exception):
                await self.runtime.close_session(old)
        await self.chat.clear_chat()
        for call_id in self.panes.call_ids:
            self.panes.finish(call_id, _cancelled_result())
        self.status_bar.pending = 0
        worker = self._start_session(session_id)
        await worker.wait()

    async def _stop_turn(self) -> None:
        if self.session is not None and self.busy:
            self.session.cancel()
            for worker in self.workers:
                if worker.group == "turn":
                    with contextlib.suppress(Exception):
                        await worker.wait()

    async def _shutdown_engine(self) -> None:
        if self._engine_closed:
            return
        self._engine_closed = True
        if self._remove_mcp_listener is not None:
            self._remove_mcp_listener()
        runtime, session = self.runtime, self.session
        if session is not None:
            session.cancel()
        try:
            if runtime is not None and self._owns_runtime:
                await asyncio.wait_for(runtime.aclose(), 10)
            elif runtime is not None and session is not None:
                await asyncio.wait_for(runtime.close_session(session), 10)
        except Exception:  # closing must never keep the app from exiting
            log.exception("error while closing the engine")

    async def action_quit(self) -> None:
        await self._shutdown_engine()
        self.exit()

    async def on_unmount(self) -> None:
        await self._shutdown_engine()
        self._gc.restore()

    # --- sending ----------------------------------------------------------------------------

    @on(PromptInput.Submitted)
    def _on_prompt_submitted(self, event: PromptInput.Submitted) -> None:
        event.stop()
        text = event.text
        if parse_slash(text) is not None:
            self.run_slash_command(text)
            return
        if text.startswith("//"):
            text = text[1:]
        self.send_prompt(text)

    def send_prompt(self, text: str) -> bool:
        """Start a turn; False (with a notice) while another turn runs or no session is ready."""
        if self.session is None or not self.ready:
            self.notify("The session is still starting…", severity="warning")
            return False
        if self.busy:
            self._queue_prompt(text)
            return False
        self.busy = True
        self.status_bar.busy_since = clock.now()
        self._run_turn(self.session, text)
        return True

    def _queue_prompt(self, text: str) -> None:
        notice = InfoMessage(f"queued: {text}", classes="-queued")
        self._queued.append((text, notice))
        self.call_later(self.chat.add, notice)

    def _send_next_queued(self) -> None:
        if not self._queued or self.busy:
            return
        text, notice = self._queued.pop(0)
        notice.remove()
        self.send_prompt(text)

    def _unqueue_to_prompt(self) -> None:
        """esc: queued prompts go back into the input instead of being sent."""
        if not self._queued:
            return
        texts = [text for text, _ in self._queued]
        for _, notice in self._queued:
            notice.remove()
        self._queued.clear()
        current = self.prompt.text
        self.prompt.load_text("\n\n".join([*texts, current] if current.strip() else texts))
        self.prompt.move_cursor(self.prompt.document.end)

    @work(group="turn", exit_on_error=False)
    async def _run_turn(self, session: ChatSession, text: str) -> None:
        try:
            await session.send(text)
        except Exception as exc:  # the engine reports its own errors; this is a last resort
            log.exception("turn failed")
            await self.chat.add_error(f"The turn failed: {type(exc).__name__}: {exc}")
        finally:
            self.turns_finished += 1
            if session is self.session:
                self.busy = False
                self.status_bar.busy_since = None
                self.call_later(self._send_next_queued)

    # --- engine messages --------------------------------------------------------------------

    @on(m.TurnStarted)
    @in_stream_order
    async def _on_turn_started(self, message: m.TurnStarted) -> None:
        await self.chat.add_user(message.user_text)
        if not self.busy:  # a watch injected this turn
            self.busy = True
            self.status_bar.busy_since = clock.now()

    @on(m.StreamBatch)
    async def _on_stream_batch(self, message: m.StreamBatch) -> None:
        self._last_stream_batch = time.monotonic()
        buffer = message.buffer
        if not buffer.consumed:
            buffer.consumed = True  # the bridge puts later items into a new batch (a new message)
            self._stream_backlog.extend(buffer.items)
        await self._apply_stream()

    def _schedule_stream_slice(self) -> None:
        if not self._stream_slice_queued:
            self._stream_slice_queued = True
            self.call_later(self._continue_stream)

    async def _continue_stream(self) -> None:
        self._stream_slice_queued = False
        await self._apply_stream()

    async def _apply_stream(self) -> None:
        """Apply backlog items in order for about ``STREAM_SLICE_SECONDS``; queue the rest behind the
        events waiting now (key presses stay responsive while panes stream)."""
        backlog = self._stream_backlog
        deadline = time.perf_counter() + STREAM_SLICE_SECONDS
        while backlog:
            item = backlog[0]
            if isinstance(item, m.OutputLines):
                if self._write_output(item):
                    backlog.popleft()
            else:
                backlog.popleft()
                if isinstance(item, m.TextPiece):
                    if item.kind == "content":
                        await self.chat.append_content(item.text)
                    else:
                        await self.chat.append_reasoning(item.text)
                else:  # a discrete event that arrived behind streamed items
                    result = item()
                    if inspect.isawaitable(result):
                        await result
            if backlog and time.perf_counter() > deadline:
                self._schedule_stream_slice()
                return

    def _write_output(self, item: m.OutputLines) -> bool:
        """Write up to ``STREAM_SLICE_LINES`` of ``item`` into its pane; True once all are written."""
        panes = self.panes
        call_id = item.call_id
        if call_id not in panes:
            card = self.chat.tool_card(call_id)
            panes.start(call_id, _command_of(card.item) if card else call_id)
        lines = item.lines
        start = self._stream_line_offset
        end = start + STREAM_SLICE_LINES
        write, stream = panes.write, item.stream
        for line in lines[start:end] if start or end < len(lines) else lines:
            write(call_id, line, stream)
        if end < len(lines):
            self._stream_line_offset = end
            return False
        self._stream_line_offset = 0
        return True

    @on(m.MessageEnded)
    @in_stream_order
    async def _on_message_ended(self, message: m.MessageEnded) -> None:
        await self.chat.end_message()

    @on(m.ToolsPrepared)
    @in_stream_order
    async def _on_tools_prepared(self, message: m.ToolsPrepared) -> None:
        await self.chat.add_tool_cards(message.items)

    @on(m.ToolStarted)
    @in_stream_order
    def _on_tool_started(self, message: m.ToolStarted) -> None:
        item = message.item
        card = self.chat.tool_card(item.call_id)
        if card is not None:
            card.mark_running()
        if item.func_name == "bash":
            self.panes.start(item.call_id, _command_of(item))

    @on(m.ToolFinished)
    @in_stream_order
    def _on_tool_finished(self, message: m.ToolFinished) -> None:
        lines: list[str] | None = None
        if message.call_id in self.panes.call_ids:
            lines = self.panes.finish(message.call_id, message.result)
        card = self.chat.tool_card(message.call_id)
        if card is not None:
            card.set_result(message.result, lines)

    @on(m.ApprovalRequested)
    @in_stream_order
    def _on_approval_requested(self, message: m.ApprovalRequested) -> None:
        from .screens.approval import ApprovalScreen

        future = message.future
        if future.done():
            return
        for item in message.items:
            card = self.chat.tool_card(item.call_id)
            if card is not None:
                card.mark_awaiting()
        self._raise_attention(len(message.items))

        def answered(decision: ApprovalDecision | None) -> None:
            self._questions.pop(future, None)
            self._lower_attention(len(message.items))
            if not future.done():
                future.set_result(decision if decision is not None else ApprovalDecision(approved=False))

        screen = ApprovalScreen(message.items)
        self._questions[future] = screen
        self.push_screen(screen, answered)

    @on(m.PlanReviewRequested)
    @in_stream_order
    def _on_plan_review_requested(self, message: m.PlanReviewRequested) -> None:
        from .screens.plan_review import PlanReviewScreen

        future = message.future
        if future.done():
            return
        self._raise_attention(0)

        def answered(review: PlanReview | None) -> None:
            self._questions.pop(future, None)
            self._lower_attention(0)
            if not future.done():
                future.set_result(review if review is not None else PlanReview("reject"))

        screen = PlanReviewScreen(message.plan, message.path)
        self._questions[future] = screen
        self.push_screen(screen, answered)

    @on(m.QuestionWithdrawn)
    @in_stream_order
    def _on_question_withdrawn(self, message: m.QuestionWithdrawn) -> None:
        screen = self._questions.pop(message.future, None)
        if screen is None:
            return
        if screen not in self.screen_stack:
            return
        while not screen.is_current:  # close whatever was opened on top of the question first
            self.pop_screen()
        screen.dismiss(None)

    def _raise_attention(self, count: int) -> None:
        self.bell()
        bar = self.status_bar
        if bar.state is not SessionState.ATTENTION:
            self._state_before_attention = bar.state
        bar.state = SessionState.ATTENTION
        bar.pending += count

    def _lower_attention(self, count: int) -> None:
        bar = self.status_bar
        bar.pending = max(0, bar.pending - count)
        if not self._questions and bar.state is SessionState.ATTENTION:
            bar.state = self._state_before_attention

    @on(m.StateChanged)
    @in_stream_order
    def _on_state_changed(self, message: m.StateChanged) -> None:
        if self._questions:  # a question is open: stay in attention, restore this state afterwards
            self._state_before_attention = message.state
            return
        self.status_bar.state = message.state

    @on(m.StatusChanged)
    @in_stream_order
    def _on_status_changed(self, message: m.StatusChanged) -> None:
        self.status_bar.status = message.status

    @on(m.InfoPosted)
    @in_stream_order
    async def _on_info_posted(self, message: m.InfoPosted) -> None:
        await self.chat.add_info(message.text)

    @on(m.ErrorPosted)
    @in_stream_order
    async def _on_error_posted(self, message: m.ErrorPosted) -> None:
        await self.chat.add_error(message.text)

    @on(m.TurnEnded)
    @in_stream_order
    async def _on_turn_ended(self, message: m.TurnEnded) -> None:
        await self.chat.end_message()
        # Anything still shown as running was cut off (cancel): collapse its pane into the card.
        for call_id in self.panes.call_ids:
            lines = self.panes.finish(call_id, _cancelled_result())
            card = self.chat.tool_card(call_id)
            if card is not None and card.status in ("pending", "awaiting", "running"):
                card.set_result(_cancelled_result(), lines)
        # Cards that never ran (the turn was cancelled before their approval / start) say so.
        for card in self.chat.tool_cards():
            if card.status in ("pending", "awaiting", "running"):
                card.mark_cancelled()

    # --- actions ----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_turn":
            return self.busy
        if action == "toggle_mcp":
            return self._has_mcp()
        return True

    def watch_busy(self, busy: bool) -> None:
        self.refresh_bindings()
        if busy:
            self._gc.turn_started()
        else:
            # After the last frame of the turn is drawn, and only if no new turn started.
            self.set_timer(0.2, self._collect_after_turn)

    def _gc_tick(self) -> None:
        # Quiet: no answer text or tool output reached the screen for a second.
        self._gc.tick(quiet=time.monotonic() - self._last_stream_batch > GC_QUIET_SECONDS)

    def _collect_after_turn(self) -> None:
        if self.busy:
            return
        answer = self.chat.last_answer
        if self._stream_backlog or (answer is not None and not answer.settled):
            self.set_timer(0.2, self._collect_after_turn)  # the screen is still catching up
            return
        self._gc.turn_ended()

    def watch_ready(self) -> None:
        self.refresh_bindings()

    def action_cancel_turn(self) -> None:
        if self._compaction is not None:
            self._compaction.cancel()
            return
        if self.session is not None and self.busy:
            self._unqueue_to_prompt()
            self.session.cancel()
            self.notify("Cancelling…", timeout=2)

    async def action_ctrl_c(self) -> None:
        focused = self.focused
        if isinstance(focused, PromptInput) and focused.selected_text:
            focused.action_copy()
            return
        now = clock.now() if not clock.is_frozen() else asyncio.get_running_loop().time()
        if self._quit_armed_at is not None and now - self._quit_armed_at <= QUIT_CONFIRM_SECONDS:
            await self.action_quit()
            return
        self._quit_armed_at = now
        self.notify("Press ctrl+c again to quit.", title="Quit?", timeout=QUIT_CONFIRM_SECONDS)

    def action_help(self) -> None:
        from .screens.help import HelpScreen

        self.push_screen(HelpScreen())

    def action_clear_screen(self) -> None:
        self.run_slash_command("/clear")

    def action_toggle_mcp(self) -> None:
        self._toggle_mcp_panel()

    def _has_mcp(self) -> bool:
        mcp = self.runtime.mcp if self.runtime is not None else None
        return mcp is not None and bool(mcp.statuses())

    def _toggle_mcp_panel(self) -> None:
        runtime = self.runtime
        if runtime is None or runtime.mcp is None or not self._has_mcp():
            self.notify("No MCP servers are configured.", severity="warning")
            return
        from ..widgets.mcp_panel import McpPanel

        panels = self.query(McpPanel)
        if panels:
            panel = panels.first()
            panel.display = not panel.display
            if panel.display:
                panel.server_tree.focus()
            else:
                self.prompt.focus()
        else:
            self.mount(McpPanel(runtime.mcp), before=self.chat)

    # --- slash commands ---------------------------------------------------------------------

    def run_slash_command(self, text: str) -> None:
        """Run ``/name [argument]`` (also what the command palette calls)."""
        parsed = parse_slash(text)
        if parsed is None:
            return
        if parsed.command is None:
            self.notify(f"Unknown command /{parsed.name} — try /help.", severity="error")
            return
        self._slash_worker(parsed.command.name, parsed.argument)

    @work(group="slash", exit_on_error=False)
    async def _slash_worker(self, name: str, argument: str) -> None:
        handler = getattr(self, f"_cmd_{name}")
        try:
            await handler(argument)
        except (ConfigError, ProviderError, ValueError) as exc:
            await self.chat.add_error(f"/{name}: {exc}")
        except Exception as exc:
            log.exception("/%s failed", name)
            await self.chat.add_error(f"/{name} failed: {type(exc).__name__}: {exc}")

    async def _cmd_help(self, argument: str) -> None:
        self.action_help()

    async def _cmd_new(self, argument: str) -> None:
        await self._replace_session(None)
        self.notify("Started a new conversation.", timeout=2)

    async def _cmd_clear(self, argument: str) -> None:
        await self.chat.clear_chat()
        await self.chat.add_info("Screen cleared (the conversation continues; /new starts afresh).")

    async def _cmd_resume(self, argument: str) -> None:
        runtime = self._need_runtime()
        if argument:
            await self._replace_session(argument)
            return
        from .screens.sessions import SessionPickerScreen

        sessions = await runtime.list_sessions()
        current = self.session.session_id if self.session else ""
        sessions = [s for s in sessions if s.get("id") != current and s.get("message_count")]
        if not sessions:
            await self.chat.add_info("No saved conversations to resume.")
            return
        chosen = await self.push_screen_wait(SessionPickerScreen(sessions))
        if chosen:
            await self._replace_session(chosen)

    async def _cmd_history(self, argument: str) -> None:
        runtime = self._need_runtime()
        if not argument:
            sessions = await runtime.list_sessions(limit=20)
            await self.chat.add_markdown_info(format_session_list(sessions))
            return
        hits = await runtime.search_history(argument)
        await self.chat.add_markdown_info(format_search_hits(argument, hits))

    async def _cmd_model(self, argument: str) -> None:
        runtime = self._need_runtime()
        if not argument:
            aliases = runtime.model_aliases()
            lines = [f"Model: **{runtime.provider.model or '(none)'}** via {runtime.provider.name}"]
            if aliases:
                lines.append("")
                lines.append("Aliases (`/model <alias>`): " + ", ".join(f"`{a}`" for a in aliases))
            await self.chat.add_markdown_info("\n".join(lines))
            return
        if self.busy:
            await self.chat.add_error("/model: wait for the turn to finish (or press esc) before switching.")
            return
        provider = await runtime.switch_model(argument)
        self._show_model(runtime)
        self._refresh_status()
        note = "" if argument in runtime.config.models else " (not a configured alias: used as a model name)"
        await self.chat.add_info(f"Switched to {provider.model} via {provider.name}{note}.")

    async def _cmd_mcp(self, argument: str) -> None:
        words = argument.split()
        if words and (words[0] != "refresh" or len(words) > 2):
            await self.chat.add_error("usage: /mcp [refresh [server]]")
            return
        runtime = self._need_runtime()
        if runtime.mcp is None:
            await self.chat.add_error("/mcp: no MCP servers are configured.")
            return
        if not words:  # the spec's /mcp: list the connected tools (the panel has its own key, F2)
            from ..mcp.listing import format_tool_table

            await self.chat.add_markdown_info(format_tool_table(runtime.mcp.statuses()))
            return
        report = await runtime.mcp.refresh(words[1] if len(words) == 2 else None)
        await self.chat.add_info(report)
        self._refresh_status()

    async def _cmd_permissions(self, argument: str) -> None:
        from .screens.permissions import Permission, PermissionsScreen

        runtime = self._need_runtime()
        session = self.session
        persisted = set(await runtime.persisted_allow())
        from_config = set(runtime.config.tools.allow)
        session_set = set(session.auto_approve) if session else set()
        entries = [
            Permission(name, _permission_source(name, persisted, from_config))
            for name in sorted(session_set | persisted | from_config)
        ]
        revoked = await self.push_screen_wait(PermissionsScreen(entries))
        if not revoked:
            return
        for name in revoked:
            if name in persisted:
                await runtime.revoke_allow(name)
            for open_session in runtime.sessions.values():
                open_session.auto_approve.discard(name)
        note = ", ".join(sorted(revoked))
        in_file = sorted(set(revoked) & from_config)
        message = f"Revoked: {note}. These tools ask for approval again."
        if in_file:
            where = runtime.config.path or "the config file"
            message += f" ({', '.join(in_file)} also listed in tools.allow of {where}: remove it there too.)"
        await self.chat.add_info(message)

    async def _cmd_compact(self, argument: str) -> None:
        session = self.session
        if session is None:
            return
        if self.busy:
            await self.chat.add_error("/compact: wait for the turn to finish first.")
            return
        self.busy = True
        self.status_bar.state = SessionState.THINKING
        self._compaction = asyncio.ensure_future(session.compact())
        try:
            summary = await self._compaction
        except asyncio.CancelledError:
            if self._compaction.cancelled():  # esc: the history is only replaced at the end
                await self.chat.add_info("Compaction cancelled; the conversation is unchanged.")
                return
            raise
        finally:
            self._compaction = None
            self.busy = False
            self.status_bar.state = SessionState.IDLE
        if not summary:
            await self.chat.add_info("Nothing to compact yet.")
            return
        await self.chat.add_info("Conversation compacted; the model continues from this summary:")
        await self.chat.add_markdown_info(summary)
        self._refresh_status()

    async def _cmd_raw(self, argument: str) -> None:
        self.raw_mode = not self.raw_mode
        self.chat.set_raw(self.raw_mode)
        self.notify("Raw Markdown on." if self.raw_mode else "Raw Markdown off.", timeout=2)

    async def _cmd_exit(self, argument: str) -> None:
        await self.action_quit()

    def _need_runtime(self) -> Runtime:
        if self.runtime is None:
            raise ValueError("the engine is still starting")
        return self.runtime

    def _complete_argument(self, command: str, partial: str) -> list[tuple[str, str]]:
        runtime = self.runtime
        if runtime is None:
            return []
        if command == "model":
            return [
                (alias, runtime.config.models[alias].name or "")
                for alias in runtime.model_aliases()
                if alias.startswith(partial)
            ]
        if command == "mcp" and runtime.mcp is not None:
            return (
                [("refresh", "re-read tools, resources and prompts")] if "refresh".startswith(partial) else []
            )
        return []


# --- helpers -----------------------------------------------------------------------------------


def _escape(text: str) -> str:
    from textual.markup import escape

    return escape(text)


def _command_of(item: Any) -> str:
    args = getattr(item, "args", None)
    if isinstance(args, dict) and isinstance(args.get("command"), str):
        return args["command"]
    return getattr(item, "header", "")


def _cancelled_result() -> Any:
    from ..core.types import ToolResult

    return ToolResult("cancelled by user", is_error=True)


def _permission_source(name: str, persisted: set[str], from_config: set[str]) -> str:
    if name in persisted:
        return "saved"
    if name in from_config:
        return "config"
    return "session"


def format_session_list(sessions: list[dict[str, Any]]) -> str:
    if not sessions:
        return "No saved conversations yet."
    lines = ["**Recent conversations** (`/resume <id>` to continue one)", ""]
    for s in sessions:
        first = " ".join(str(s.get("first_prompt") or s.get("name") or "").split())[:70]
        lines.append(
            f"- `{str(s.get('id', ''))[:12]}` · {s.get('message_count', 0)} msgs · {first or '(empty)'}"
        )
    return "\n".join(lines)


def format_search_hits(query: str, hits: list[dict[str, Any]]) -> str:
    if not hits:
        return f"No messages match **{query}**."
    lines = [f"**{len(hits)} match{'es' if len(hits) != 1 else ''} for {query}** (`/resume <id>`)", ""]
    for hit in hits:
        snippet = " ".join(str(hit.get("snippet") or "").split())
        lines.append(f"- `{str(hit.get('session_id', ''))[:12]}` {hit.get('role', '')}: {snippet}")
    return "\n".join(lines)


__all__ = ["SLASH_COMMANDS", "TurnstoneApp"]
