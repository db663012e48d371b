"""The main screen: the chat, the live bash panes, the prompt and the status bar, with typed getters."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, cast

from textual.app import ComposeResult
from textual.binding import Binding
from textual.markup import escape
from textual.message import Message
from textual.screen import UPDATE_PERIOD, Screen
from textual.timer import Timer
from textual.widget import Widget

from ..core.input_gate import GATE
from ..core.resources import styles_dir
from ..widgets.chat_view import ChatView, NewOutputMarker
from ..widgets.footer import Footer
from ..widgets.prompt_input import PromptArea, PromptCompleter, PromptInput
from ..widgets.status_bar import StatusBar
from .compositor import LayoutCompositor
from .frame_timer import FrameTimer

if TYPE_CHECKING:
    from ..core.provider import Provider
    from ..widgets.mcp_panel import ManagerLike
    from ..widgets.pane_grid import ParallelPanes

WidgetT = TypeVar("WidgetT", bound=Widget)


class MainScreen(Screen[None]):
    """The app's base screen (never popped). The getters are used for every streamed item, so each
    widget is looked up once, on this screen (an app-level query would search the screen on top)."""

    AUTO_FOCUS = "#prompt"
    BINDINGS = [
        # priority: the prompt (a TextArea) would take them for its own cursor otherwise
        Binding("pageup", "scroll_chat('up')", "Scroll up", show=False, priority=True),
        Binding("pagedown", "scroll_chat('down')", "Scroll down", show=False, priority=True),
        # Not priority: the prompt decides End itself (widgets/prompt_input.py), in the order its
        # keys were typed; from any other widget that does not take it, End comes here.
        Binding("end", "scroll_chat('end')", "Follow the chat", show=False),
        Binding("shift+tab", "app.cycle_mode", "Permission mode", show=False, priority=True),
    ]
    CSS_PATH = styles_dir() / "main.tcss"

    def __init__(
        self,
        *,
        cwd: Path,
        completer: PromptCompleter | None,
        max_chat_widgets: int = 400,
        max_pane_lines: int = 5000,
    ) -> None:
        super().__init__()
        self._compositor = LayoutCompositor()
        self._cwd = cwd
        self._completer = completer
        self._max_chat_widgets = max_chat_widgets
        self._max_pane_lines = max_pane_lines
        self._found: dict[str, Widget] = {}

    @property
    def _update_timer(self) -> Timer:
        """The screen's frame clock (Textual's, made as Textual makes it), a :class:`FrameTimer`:
        after a frame a little longer than a period the next one waits for the next boundary."""
        timer: Timer | None = self._Screen__update_timer  # type: ignore[attr-defined]
        if timer is None:
            timer = FrameTimer(
                self, UPDATE_PERIOD, name="screen_update", callback=self._on_timer_update, pause=True
            )
            timer._start()
            self._timers.add(timer)
            self._Screen__update_timer = timer
        return timer

    class Ready(Message):
        """The layout is mounted (posted once; the app starts the session on it)."""

    def compose(self) -> ComposeResult:
        yield ChatView(id="chat", max_widgets=self._max_chat_widgets)
        yield NewOutputMarker(id="new-output")
        # the bash panes (hidden while nothing runs) are mounted here by the first bash call
        yield PromptArea(id="prompt-area", cwd=self._cwd, completer=self._completer)
        yield StatusBar(id="status-bar")
        yield Footer(id="footer")

    def on_mount(self) -> None:
        self.post_message(self.Ready())

    def _on_timer_update(self) -> None:
        # A key the terminal sent has not reached the app yet: a frame now (the panes' output,
        # a spinner) would hold the key back by its length. The update timer stays active and
        # comes back next tick; the key's own frame is drawn as soon as it is handled
        # (app/key_frame.py). The gate bounds this to MAX_HOLD after the key.
        if GATE.undispatched:
            return
        # A batch update is open (a streamed append mounting its blocks): Textual draws nothing
        # now; the clock ticks again once the batch closes, not a period later.
        held = bool(self.app._batch_count) and self.is_current
        super()._on_timer_update()
        timer = self._Screen__update_timer  # type: ignore[attr-defined]
        if held and isinstance(timer, FrameTimer):
            timer.retick()

    def on_chat_view_below_fold(self, message: ChatView.BelowFold) -> None:
        """Output arrived below the scrolled-up chat: show the marker (hidden once it follows again)."""
        self._widget("#new-output", NewOutputMarker).set_class(message.unseen, "-shown")

    def on_prompt_input_follow_chat(self, message: PromptInput.FollowChat) -> None:
        message.stop()
        self.action_scroll_chat("end")

    def on_new_output_marker_pressed(self, message: NewOutputMarker.Pressed) -> None:
        self.action_scroll_chat("end")

    def action_scroll_chat(self, where: str) -> None:
        chat = self.chat
        if where == "up":
            chat.scroll_page_up(animate=False)
        elif where == "down":
            chat.scroll_page_down(animate=False)
        else:
            chat.scroll_end(animate=False)  # back at the end: the chat follows new output again

    def _widget(self, selector: str, kind: type[WidgetT]) -> WidgetT:
        widget = self._found.get(selector)
        if widget is None:
            widget = self._found[selector] = self.query_one(selector, kind)
        return cast(WidgetT, widget)

    @property
    def chat(self) -> ChatView:
        return self._widget("#chat", ChatView)

    @property
    def panes(self) -> ParallelPanes:
        """The bash panes' grid, mounted (above the prompt) on first use: not part of the first
        frame, where it would only be hidden."""
        panes = self.mounted_panes
        if panes is None:
            from ..widgets.pane_grid import ParallelPanes

            panes = ParallelPanes(max_lines=self._max_pane_lines, id="panes")
            self.mount(panes, before=self.query_one("#prompt-area"))
            self._found["#panes"] = panes
        return panes

    @property
    def mounted_panes(self) -> ParallelPanes | None:
        """The bash panes' grid if a bash call has mounted it (it stays once mounted), else None."""
        return cast("ParallelPanes | None", self._found.get("#panes"))

    @property
    def prompt(self) -> PromptInput:
        return self._widget("#prompt", PromptInput)

    @property
    def status_bar(self) -> StatusBar:
        return self._widget("#status-bar", StatusBar)

    def show_model(self, model: str, provider: str) -> None:
        bar = self.status_bar
        bar._model = model
        bar._provider = provider
        bar._refresh_all()

    def toggle_mcp_panel(self, mcp: ManagerLike) -> None:
        """Show the MCP side panel (mounted on first use), or hide it."""
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
            self.mount(McpPanel(mcp), before=self.chat)


def welcome_text(provider: Provider, cwd: Path) -> str:
    """The first chat entry: model, provider, folder and the keys a newcomer needs (markup)."""
    return (
        f"[b]turnstone[/b] · [b]{escape(provider.model or 'no model')}[/b] via {escape(provider.name)}"
        f" · in [b]{escape(cwd.name or str(cwd))}[/b]\n"
        "[dim]enter[/dim] send · [dim]shift+enter[/dim] newline · [dim]/[/dim] commands · "
        "[dim]@[/dim] files · [dim]esc[/dim] cancel · [dim]f1[/dim] help"
    )
