"""TurnstoneApp: the full-screen Textual front end.

The engine runs each turn in a worker on the app's own event loop and talks to the app only through
:class:`~turnstone_tui.app.ui_bridge.TextualSessionUI`, which posts the messages handled here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events, on, work
from textual.app import App
from textual.binding import Binding
from textual.driver import Driver
from textual.filter import LineFilter
from textual.reactive import var
from textual.timer import Timer

from ..config import ConfigError
from ..core.input_gate import GATE
from ..core.outcomes import cancelled_result
from ..core.resources import styles_dir
from ..core.types import SessionState
from ..widgets import clock
from ..widgets.chat_view import ChatView
from ..widgets.prompt_input import PromptInput
from ..widgets.status_bar import StatusBar
from . import messages as m
from .command_palette import SlashCommandProvider
from .commands import SlashCommand, SlashCompleter, parse_slash
from .gc_pacing import GcPacer
from .input_driver import input_gated
from .key_frame import after_key
from .line_filter import InvisibleFilter
from .main_screen import MainScreen, welcome_text
from .mcp_wait import FirstTurnMcpWait
from .prompt_queue import PromptQueue
from .questions import QuestionBroker
from .stream_applier import StreamApplier
from .textual_caches import release_dead_widget_caches
from .ui_bridge import TextualSessionUI

if TYPE_CHECKING:
    from ..core.session import ChatSession
    from ..runtime import Runtime
    from ..widgets.mcp_panel import McpPanel
    from ..widgets.pane_grid import ParallelPanes

log = logging.getLogger(__name__)

QUIT_CONFIRM_SECONDS = 2.0
NO_MCP_SERVERS = (
    "No MCP servers are configured. Add a [mcp.servers.NAME] table to config.toml, or start with"
    " --mcp-config FILE (a standard mcpServers JSON file); `turnstone-tui mcp list` checks them."
)
RuntimeFactory = Callable[[], Awaitable["Runtime"]]
StoredHistory = Callable[[], Awaitable[list[dict[str, Any]]]]

INBOX_REFRESH_SECONDS = 15.0
"""How often the inbox count is read again (another process may have queued results)."""

GC_QUIET_SECONDS = 1.0
"""No streamed output for this long: a good moment for a long turn's full collection."""

SCROLL_SETTLE_SECONDS = 1.0
"""The chat was not scrolled for this long: the full collection put off while it was runs."""


class TurnstoneApp(App[None]):
    """The chat app. Give it a ready ``runtime`` (created on the same event loop that runs the app,
    e.g. ``await TurnstoneApp(runtime).run_async()``), or a ``runtime_factory`` the app awaits on
    start (then the app owns the runtime and closes it on exit).

    The layout is :class:`MainScreen`'s; engine messages go to the :class:`StreamApplier`, the
    engine's questions to the :class:`QuestionBroker`, slash commands to their handlers in
    :mod:`.commands`. The app owns the session's lifecycle, sending, and the app-wide keys."""

    TITLE = "turnstone"
    # The main screen's file is read with the app's: the main screen is the default screen, never a
    # mode (a mode's base screen has its CSS_PATH read on install, which re-parses every stylesheet
    # from scratch twice before the first frame).
    CSS_PATH = [styles_dir() / "app.tcss", MainScreen.CSS_PATH]
    COMMANDS = App.COMMANDS | {SlashCommandProvider}
    ENABLE_COMMAND_PALETTE = True

    BINDINGS = [
        Binding("escape", "cancel_turn", "Cancel turn", tooltip="Stop the model and any running tools"),
        Binding("ctrl+c", "ctrl_c", "Quit", show=False, priority=True),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True),
        Binding("f2", "toggle_mcp", "MCP panel"),
        # Taken when the panel's binding is hidden (no servers): says how to add one.
        Binding("f2", "mcp_help", show=False),
        Binding("f3", "inbox", "Inbox", show=False),
        Binding("f1", "help", "Help"),
        Binding("ctrl+l", "clear_screen", "Clear", show=False),
    ]

    busy: var[bool] = var(False, init=False)
    """A turn is running (the engine is streaming or running tools). Its watcher runs when a turn
    starts or ends, not at start-up: there the after-turn collection's timer read the chat before
    the first screen had one on a loaded machine (NoMatches, the app gone)."""
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
        stored_history: StoredHistory | None = None,
    ) -> None:
        if runtime is None and runtime_factory is None:
            raise ValueError("TurnstoneApp needs a runtime or a runtime_factory")
        super().__init__()
        self._invisible_filter = InvisibleFilter()
        """Last of the line filters: no control character reaches the terminal (line_filter.py)."""
        self.runtime: Runtime | None = runtime
        self._runtime_factory = runtime_factory
        self._owns_runtime = runtime is None
        self._stored_history = stored_history
        """Reads the resumed conversation from the database, so it is drawn while the engine loads."""
        self.resume_id = resume_id
        self.cwd = cwd or (runtime.options.cwd if runtime and runtime.options.cwd else None) or Path.cwd()
        self.session: ChatSession | None = None
        self.bridge = TextualSessionUI(self)
        self.questions = QuestionBroker(self)
        self.applier = StreamApplier(self, self.questions)
        self.turns_finished = 0
        """How many turns this app ran to their end (tests and benchmarks wait on it)."""
        self.compaction: asyncio.Future[str] | None = None
        """A running /compact (esc cancels it)."""
        self._quit_armed_at: float | None = None
        self._model_notice_shown = False
        self._engine_closed = False  # not `_closed`: that is MessagePump state
        self._queued = PromptQueue()
        self._remove_mcp_listener: Callable[[], None] | None = None
        self._remove_inbox_listener: Callable[[], None] | None = None
        self._mcp_wait = FirstTurnMcpWait()
        self._session_ready = asyncio.Event()
        # (dead widgets' drawn lines let go before each collection: then it need not walk them)
        self._gc = GcPacer(before_collection=release_dead_widget_caches)
        self._scroll_settle: Timer | None = None
        config = runtime.config if runtime else None
        self.main = MainScreen(
            cwd=self.cwd,
            completer=SlashCompleter(self),
            max_chat_widgets=config.ui.max_chat_widgets if config else 400,
            max_pane_lines=config.ui.max_pane_lines if config else 5000,
        )

    # --- layout -----------------------------------------------------------------------------

    def get_line_filters(self) -> Sequence[LineFilter]:
        return [*super().get_line_filters(), self._invisible_filter]

    def get_default_screen(self) -> MainScreen:
        return self.main

    @property
    def chat(self) -> ChatView:
        return self.main.chat

    @property
    def panes(self) -> ParallelPanes:
        return self.main.panes

    @property
    def prompt(self) -> PromptInput:
        return self.main.prompt

    @property
    def status_bar(self) -> StatusBar:
        return self.main.status_bar

    def on_mount(self) -> None:
        self.bridge.bind_loop(asyncio.get_running_loop())

    async def on_event(self, event: events.Event) -> None:
        # Every key reaches the app first: output waiting for the panes lets the key's frame go first.
        if not isinstance(event, (events.Key, events.Paste)):
            await super().on_event(event)
            return
        self._gc.key_pressed()  # (a full collection waits for a pause in the typing)
        if self.main.is_attached:
            panes = self.main.mounted_panes
            if panes is not None:
                panes.yield_to_input()
        dispatched = time.monotonic()
        GATE.dispatched(dispatched)
        await super().on_event(event)
        # The input thread held output back when it read the key (app/input_driver.py): open the
        # gate once a frame that shows the key has been drawn.
        target = self.focused or self.screen
        target.call_next(after_key, target, dispatched)

    def get_driver_class(self) -> type[Driver]:
        return input_gated(super().get_driver_class())

    @on(MainScreen.Ready)
    def _on_layout_ready(self) -> None:
        if self.runtime is not None:
            self.show_model(self.runtime)
        self._start_session(self.resume_id)

    async def wait_ready(self) -> None:
        """Wait until the first session started (tests and benchmarks; wrap in a timeout)."""
        await self._session_ready.wait()

    # --- session lifecycle ------------------------------------------------------------------

    def show_model(self, runtime: Runtime) -> None:
        self.main.show_model(runtime.provider.model, runtime.provider.name)
        theme = runtime.config.ui.theme
        if theme and theme != self.theme:  # [ui] theme
            if theme in self.available_themes:
                self.theme = theme
            else:
                known = ", ".join(sorted(self.available_themes))
                self.notify(f"Unknown theme {theme!r} in [ui] theme; known: {known}", severity="warning")

    @work(group="session", exclusive=True, exit_on_error=False)
    async def _start_session(self, session_id: str | None, *, replay: bool = True) -> None:
        shown_early = False
        try:
            if self.runtime is None:
                assert self._runtime_factory is not None
                if session_id and replay and self._stored_history is not None:
                    shown_early = await self._show_stored_history()
                self.runtime = await self._runtime_factory()
                self.show_model(self.runtime)
            runtime = self.runtime
            try:
                self.session = await runtime.create_session(self.bridge, session_id)
            except ValueError as exc:  # unknown session id: say so, start fresh
                if shown_early:  # (or held by another process) not the conversation drawn early
                    await self.chat.clear_chat()
                    shown_early = False
                await self.chat.add_error(str(exc))
                self.session = await runtime.create_session(self.bridge, None)
            if runtime.mcp is not None and self._remove_mcp_listener is None:
                self._remove_mcp_listener = runtime.mcp.add_listener(lambda _event: self.refresh_status())
            if runtime.mcp is not None:
                from .server_asks import AppServerAsks, server_errors_as_toasts

                runtime.mcp.set_asks(AppServerAsks(self, lambda: runtime.provider.model))
                runtime.mcp.add_listener(server_errors_as_toasts(self))
        except Exception as exc:  # storage or provider problems: shown, the app stays up
            log.exception("could not start a session")
            await self.chat.add_error(f"Could not start a session: {exc}")
            self.status_bar.state = SessionState.ERROR
            if not self._session_ready.is_set():
                self._gc.freeze_startup()  # start-up is over (the collector back on)
            return
        await self.chat.add_welcome(welcome_text(self.runtime.provider, self.cwd))
        banner = self.runtime.provider.banner()
        if banner:
            await self.chat.add_info(banner)
        if self.runtime.model_notice and not self._model_notice_shown:
            self._model_notice_shown = True
            await self.chat.add_info(self.runtime.model_notice)
        if self.session.instructions.files:
            await self.chat.add_info(self.session.instructions.describe(self.session.cwd))
        if session_id and replay and self.session.messages:
            from ..core.mentions import strip_attachments  # only for a resumed chat

            if not shown_early:
                from .replay import replay_messages

                await replay_messages(self.chat, self.session.messages)
            for message in self.session.messages:
                if (
                    message.get("role") == "user"
                    and isinstance(message.get("content"), str)
                    and not message.get("kind")
                ):
                    self.prompt.add_history(strip_attachments(message["content"])[0])
        self.refresh_status()
        self.ready = True
        # watch results: this session's are delivered at its idle moments (those that waited
        # for it first); the others' are counted in the inbox
        self.session.watch_delivery = True
        self.session.schedule_watch_delivery()
        if self._remove_inbox_listener is None:
            self._remove_inbox_listener = self.runtime.add_inbox_listener(self.refresh_inbox)
            self.set_interval(INBOX_REFRESH_SECONDS, self.refresh_inbox)
        self.refresh_inbox()
        if not self._session_ready.is_set():
            # Once this frame is drawn: a provider built in the background starts its build (the
            # SDK's import) then, if no request started it, and a build that fails is said at once.
            self.call_after_refresh(self._report_provider_problem)
            # A second after start-up (a full collection takes ~100 ms: not on the first frame).
            self.set_timer(1.0, self._gc.freeze_startup)
            # Before that, in a worker thread: what the first answer needs (frozen with the rest).
            self.set_timer(0.3, self._warm_markdown)
            self.set_interval(1, self._gc_tick)
        self._session_ready.set()
        self.refresh_bindings()
        self.call_later(self.send_queued)  # type-ahead from while the session started

    @work(group="provider-check", exit_on_error=False)
    async def _report_provider_problem(self) -> None:
        """A provider built in the background (its SDK loads once the session is on the screen)
        that could not be built is said at once, not only when the first prompt fails."""
        from ..core.provider import ProviderError  # the engine's module: loaded after the first frame

        ready = getattr(self.runtime.provider, "ready", None) if self.runtime is not None else None
        if ready is None:
            return
        try:
            await ready()
        except ProviderError as exc:
            await self.chat.add_error(f"The model provider is not usable: {exc}")

    async def _show_stored_history(self) -> bool:
        """Draw the resumed conversation as stored, before the engine is built (the provider's SDK
        takes seconds to import); True if it was drawn."""
        assert self._stored_history is not None
        try:
            messages = await self._stored_history()
        except Exception:  # the session start reports problems with the database
            log.exception("could not read the stored conversation early")
            return False
        if not messages:
            return False
        from .replay import replay_messages

        await replay_messages(self.chat, messages)
        return True

    def refresh_status(self) -> None:
        if self.session is not None:
            self.status_bar.status = self.session.status()

    @work(group="inbox-count", exclusive=True, exit_on_error=False)
    async def refresh_inbox(self) -> None:
        """Count the watch results waiting for sessions that are open nowhere (the status bar)."""
        if self.runtime is None:
            return
        try:
            self.status_bar.inbox = len(await self.runtime.inbox())
        except Exception:  # a count is not worth an error on screen
            log.warning("could not read the inbox", exc_info=True)

    def action_inbox(self) -> None:
        self._show_inbox()

    @on(StatusBar.InboxClicked)
    def _inbox_clicked(self) -> None:
        self._show_inbox()

    @work(group="inbox", exclusive=True, exit_on_error=False)
    async def _show_inbox(self) -> None:
        from .screens.inbox import InboxScreen

        if self.runtime is None:
            self.notify("The engine is still starting.", severity="warning")
            return
        results = await self.runtime.inbox()
        self.status_bar.inbox = len(results)
        chosen = await self.push_screen_wait(InboxScreen(results))
        if chosen:
            await self.replace_session(chosen)

    async def replace_session(self, session_id: str | None) -> None:
        """``/new`` and ``/resume``: stop the current turn, close the session, start another."""
        await self._stop_turn()
        old, self.session = self.session, None
        self.ready = False
        if old is not None and self.runtime is not None:
            with contextlib.suppress(Exception):
                await self.runtime.close_session(old)
        await self.chat.clear_chat()
        panes = self.main.mounted_panes
        for call_id in panes.call_ids if panes is not None else ():
            panes.finish(call_id, cancelled_result())
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
        if self._remove_inbox_listener is not None:
            self._remove_inbox_listener()
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
        """Start a turn; False while another turn runs or the session is starting: then the prompt
        is queued (shown in the chat) and sent when the session is ready."""
        if self.session is None or not self.ready or self.busy:  # sent once the session is free
            self._queued.add(text, self.chat)
            return False
        self.busy = True
        self.status_bar.busy_since = clock.now()
        self._run_turn(self.session, text)
        return True

    def send_queued(self) -> None:
        if self._queued and self.ready and not self.busy:
            self.send_prompt(self._queued.pop() or "")

    def _unqueue_to_prompt(self) -> None:
        """esc: queued prompts go back into the input instead of being sent."""
        texts = self._queued.take_all()
        if not texts:
            return
        current = self.prompt.text
        self.prompt.load_text("\n\n".join([*texts, current] if current.strip() else texts))
        self.prompt.move_cursor(self.prompt.document.end)

    @work(group="turn", exit_on_error=False)
    async def _run_turn(self, session: ChatSession, text: str) -> None:
        try:
            await self._mcp_wait.wait(self.runtime, self.chat)
            await session.send(text)
        except Exception as exc:  # the engine reports its own errors; this is a last resort
            log.exception("turn failed")
            await self.chat.add_error(f"The turn failed: {type(exc).__name__}: {exc}")
        finally:
            self.turns_finished += 1
            if session is self.session:
                self.busy = False
                self.status_bar.busy_since = None
                self.call_later(self.send_queued)

    # --- engine messages --------------------------------------------------------------------

    @on(m.EngineMessage)
    async def _on_engine_message(self, message: m.EngineMessage) -> None:
        await self.applier.receive(message)

    # --- actions ----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_turn":
            return self.busy
        if action == "toggle_mcp":
            return self._has_mcp()
        if action == "mcp_help":
            return not self._has_mcp()
        return True

    def watch_busy(self, busy: bool) -> None:
        if busy:
            self.refresh_bindings()
            self._gc.turn_started()
        else:
            # The key bar loses "esc Cancel turn": a rebuild of its keys and a layout. The engine
            # ends its turn as soon as the answer's last words are read, and they are still on their
            # way (its messages are queued before this callback): the key bar changes after the
            # frame that shows them, not on their way. (check_action reads ``busy`` itself: esc no
            # longer cancels anything from now on.)
            self.call_later(self.call_after_refresh, self.refresh_bindings)
            # After the last frame of the turn is drawn, and only if no new turn started.
            self.set_timer(0.2, self._collect_after_turn)

    def _gc_tick(self) -> None:
        # Quiet: no answer text or tool output reached the screen for a second.
        self._gc.tick(quiet=time.monotonic() - self.applier.last_batch_at > GC_QUIET_SECONDS)

    def on_chat_view_user_scrolled(self, message: ChatView.UserScrolled) -> None:
        message.stop()
        self._gc.scrolling()
        if self._scroll_settle is None:
            self._scroll_settle = self.set_timer(SCROLL_SETTLE_SECONDS, self._scroll_settled)
        else:
            self._scroll_settle.reset()

    def _scroll_settled(self) -> None:
        self._scroll_settle = None
        self._gc.scroll_settled()

    def _collect_after_turn(self) -> None:
        if self.busy or self._engine_closed:  # (a new turn, or the app is closing its screens)
            return
        answer = self.chat.last_answer
        if not self.applier.caught_up or (answer is not None and not answer.settled):
            self.set_timer(0.2, self._collect_after_turn)  # the screen is still catching up
            return
        # Settled means the answer's widgets hold all of it, not that the frame showing its end
        # was drawn: on a loaded machine that frame can still be pending, and a full collection
        # (up to a second) before it would hold the answer's last line off the screen.
        self.call_after_refresh(self._collect_once_drawn)

    def _warm_markdown(self) -> None:
        from ..providers.deferred import IMPORT_LOCK
        from ..widgets.chat_messages import warm_markdown

        def warm() -> None:
            try:
                with IMPORT_LOCK:  # (never beside the SDK's import: see IMPORT_LOCK)
                    warm_markdown()
                    from ..widgets import tool_card

                    tool_card.warm()  # (the first tool batch's cards and panes)
            except Exception:  # the first answer (or batch) then loads it itself, as it did
                log.exception("could not load the Markdown and tool-card machinery in the background")

        asyncio.get_running_loop().run_in_executor(None, warm)

    def _collect_once_drawn(self) -> None:
        if not self.busy:
            self._gc.turn_ended()

    def watch_ready(self) -> None:
        self.refresh_bindings()

    def action_cancel_turn(self) -> None:
        if self._mcp_wait.skip():
            return
        if self.compaction is not None:
            self.compaction.cancel()
            return
        if self.session is not None and self.busy:
            self._unqueue_to_prompt()
            self.session.cancel()
            self.notify("Cancelling…", timeout=2)

    async def action_ctrl_c(self) -> None:
        """As in Claude Code and Codex: copy a selection, else clear the prompt's text, else
        interrupt the running turn (as esc), and only when idle with an empty prompt arm quit."""
        focused = self.focused
        if isinstance(focused, PromptInput) and focused.selected_text:
            focused.action_copy()
            return
        armed_at, self._quit_armed_at = self._quit_armed_at, None  # any other use disarms quit
        if self.prompt.text:
            self.prompt.clear()
            return
        if self.busy:
            self.action_cancel_turn()
            return
        now = clock.now() if not clock.is_frozen() else asyncio.get_running_loop().time()
        if armed_at is not None and now - armed_at <= QUIT_CONFIRM_SECONDS:
            await self.action_quit()
            return
        self._quit_armed_at = now
        self.notify("Press ctrl+c again to quit.", title="Quit?", timeout=QUIT_CONFIRM_SECONDS)

    def action_cycle_mode(self) -> None:
        """shift+tab: default -> accept-edits -> plan -> full-auto -> default (shown in the status bar)."""
        from ..core.permissions import MODE_HELP

        session = self.session
        if session is None:
            return
        mode = session.policy.mode.next()
        session.set_mode(mode)
        self.refresh_status()
        self.notify(f"{mode.value}: {MODE_HELP[mode]}", title="Permission mode", timeout=3)

    def action_help(self) -> None:
        from .screens.help import HelpScreen

        self.push_screen(HelpScreen())

    def action_clear_screen(self) -> None:
        self.run_slash_command("/clear")

    def action_toggle_mcp(self) -> None:
        self.toggle_mcp_panel()

    def action_mcp_help(self) -> None:
        if self.runtime is None:
            self.notify("The session is still starting…", timeout=3)
            return
        self.notify(NO_MCP_SERVERS, title="MCP", severity="warning", timeout=8)

    def _has_mcp(self) -> bool:
        mcp = self.runtime.mcp if self.runtime is not None else None
        return mcp is not None and bool(mcp.statuses())

    def on_mcp_panel_login_requested(self, message: McpPanel.LoginRequested) -> None:
        """``l`` in the MCP panel: log in to that server in the browser."""
        from .mcp_login import start_mcp_login

        start_mcp_login(self, message.server)

    def toggle_mcp_panel(self) -> None:
        runtime = self.runtime
        if runtime is None or runtime.mcp is None or not self._has_mcp():
            self.notify(NO_MCP_SERVERS, title="MCP", severity="warning", timeout=8)
            return
        self.main.toggle_mcp_panel(runtime.mcp)

    # --- slash commands ---------------------------------------------------------------------

    def run_slash_command(self, text: str) -> None:
        """Run ``/name [argument]`` (also what the command palette calls)."""
        parsed = parse_slash(text)
        if parsed is None:
            return
        if parsed.command is None:
            self.notify(f"Unknown command /{parsed.name} — try /help.", severity="error")
            return
        self._slash_worker(parsed.command, parsed.argument)

    @work(group="slash", exit_on_error=False)
    async def _slash_worker(self, command: SlashCommand, argument: str) -> None:
        from ..core.provider import ProviderError

        try:
            await command.run(self, argument)
        except (ConfigError, ProviderError, ValueError) as exc:
            await self.chat.add_error(f"/{command.name}: {exc}")
        except Exception as exc:
            log.exception("/%s failed", command.name)
            await self.chat.add_error(f"/{command.name} failed: {type(exc).__name__}: {exc}")

    def need_runtime(self) -> Runtime:
        if self.runtime is None:
            raise ValueError("the engine is still starting")
        return self.runtime


__all__ = ["TurnstoneApp"]
