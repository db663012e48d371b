"""One line at the bottom: model, state, tokens and context use, MCP servers, the permission mode and
the sandbox, pending approvals, watch results waiting in the inbox."""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Label

from ..core.types import SessionState, StatusInfo
from . import clock
from .tick_label import TickLabel

_STATE_LABELS: dict[SessionState, str] = {
    SessionState.IDLE: "idle",
    SessionState.THINKING: "thinking",
    SessionState.RUNNING: "running",
    SessionState.ATTENTION: "attention",
    SessionState.ERROR: "error",
}


def format_tokens(count: int) -> str:
    """``950``, ``12.3k``, ``1.2M``."""
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.1f}k"
    return f"{count / 1_000_000:.1f}M"


class StatusBar(Horizontal):
    """Reactive status line; the app sets ``status`` and ``state`` from engine messages."""

    status: reactive[StatusInfo | None] = reactive(None, init=False)
    state: reactive[SessionState] = reactive(SessionState.IDLE, init=False)
    pending: reactive[int] = reactive(0, init=False)
    busy_since: reactive[float | None] = reactive(None, init=False)
    activity: reactive[str] = reactive("", init=False)
    inbox: reactive[int] = reactive(0, init=False)
    """Watch results waiting for sessions that are not open (F3 shows them)."""
    """What a busy state is doing, when more precise than the state ("writing", "compacting")."""

    def __init__(self, model: str = "", provider: str = "", *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._model = model
        self._provider = provider

    def compose(self) -> ComposeResult:
        yield TickLabel(id="status-state", classes="-idle")
        yield Label(id="status-model")
        yield Label(id="status-tokens")
        yield Label(id="status-mcp")
        yield Label(id="status-mode")
        yield Label(id="status-pending")
        yield Label(id="status-inbox")

    def on_mount(self) -> None:
        self._refresh_all()
        self._refresh_state()
        self.set_interval(0.25, self._tick)

    def _tick(self) -> None:
        if self.state in (SessionState.THINKING, SessionState.RUNNING) and not clock.is_frozen():
            self._refresh_state()

    def watch_status(self) -> None:
        self._refresh_all()

    def watch_state(self) -> None:
        self._refresh_state()

    def watch_pending(self) -> None:
        self._refresh_pending()

    def watch_inbox(self) -> None:
        self._refresh_inbox()

    def watch_busy_since(self) -> None:
        self._refresh_state()

    def watch_activity(self) -> None:
        self._refresh_state()

    def _refresh_all(self) -> None:
        if not self.children:
            return
        status = self.status
        model = status.model if status else self._model
        provider = status.provider if status else self._provider
        self.query_one("#status-model", Label).update(
            Content(f"{model or 'no model'}" + (f" · {provider}" if provider else ""))
        )
        tokens = self.query_one("#status-tokens", Label)
        if status is not None and status.context_window:
            used = format_tokens(status.prompt_tokens + status.completion_tokens)
            percent = status.context_percent
            tokens.update(Content(f"{used} tok · {percent:.0f}% of {format_tokens(status.context_window)}"))
            tokens.set_class(percent >= 80, "-high")
        elif status is not None:
            tokens.update(Content(f"{format_tokens(status.prompt_tokens + status.completion_tokens)} tok"))
        else:
            tokens.update(Content("0 tok"))
        mcp = self.query_one("#status-mcp", Label)
        if status is not None and status.mcp_total:
            mcp.update(Content(f"MCP {status.mcp_connected}/{status.mcp_total}"))
            mcp.set_class(status.mcp_connected < status.mcp_total, "-degraded")
            mcp.display = True
        else:
            mcp.display = False
        self._refresh_mode()
        self._refresh_pending()
        self._refresh_inbox()

    def _refresh_mode(self) -> None:
        """The permission mode (unless default) and whether commands run sandboxed: ``plan · sandbox``."""
        status = self.status
        label = self.query_one("#status-mode", Label)
        if status is None:
            label.display = False
            return
        # the default mode is not named (as Claude Code does): only a mode that changes what runs is
        parts = ([status.mode] if status.mode != "default" else []) + (
            [status.sandbox] if status.sandbox else []
        )
        label.update(Content(" · ".join(parts)))
        label.set_class(status.mode != "default", "-mode")
        label.set_class(status.sandbox not in ("", "sandbox"), "-unconfined")
        label.display = bool(parts)

    def _refresh_state(self) -> None:
        if not self.children:
            return
        label = self.query_one("#status-state", TickLabel)
        state = self.state
        text = _STATE_LABELS.get(state, str(state))
        if state in (SessionState.THINKING, SessionState.RUNNING):
            text = f"{clock.spinner_frame()} {self.activity or text}"
            if self.busy_since is not None:
                text += f" {clock.format_elapsed(clock.now() - self.busy_since)}"
        elif state is SessionState.ATTENTION:
            text = f"! {text}"
        else:
            text = f"● {text}"
        label.tick(Content(text))
        label.set_classes(f"-{state.value}")

    def _refresh_pending(self) -> None:
        if not self.children:
            return
        status = self.status
        pending = max(self.pending, status.pending_approvals if status else 0)
        label = self.query_one("#status-pending", Label)
        label.update(Content(f"{pending} pending approval{'s' if pending != 1 else ''}"))
        label.display = pending > 0

    def _refresh_inbox(self) -> None:
        if not self.children:
            return
        count = self.inbox
        label = self.query_one("#status-inbox", Label)
        label.update(Content(f"inbox: {count} watch result{'s' if count != 1 else ''} (F3)"))
        label.display = count > 0

    def on_click(self, event: events.Click) -> None:
        if event.widget is not None and event.widget.id == "status-inbox":
            self.post_message(self.InboxClicked())

    class InboxClicked(Message):
        """The inbox count was clicked (the app opens the inbox)."""
