"""A compact card for one tool call: status, header, elapsed time, result summary, expandable output.

A finished bash pane "collapses into its card": the app passes the pane's bounded lines to
`set_result(result, output_lines)`; enter or a click expands the card to show them in a line-API
`OutputLog` (so 5000 lines cost nothing until they are on screen).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Literal

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

from ..core.outcomes import CANCELLED_BY_USER, STATUS_LABELS, cancelled_result
from ..core.types import PreparedItem, ToolResult, ToolStatus
from . import clock
from .bash_pane import OutputLog, bash_outcome, clean_line, plain_line
from .tick_label import TickLabel
from .ticker import Subscription, on_tick

CardStatus = Literal["pending", "awaiting", "running", "ok", "warning", "error", "denied", "cancelled"]

SUMMARY_LINES = 3
EXPANDED_MAX_LINES = 5000
DIFF_TOOLS = frozenset({"edit_file", "write_file", "diff_file"})
"""Tools whose result ends in a unified diff: the preview shows the changed lines, coloured."""
_DIFF_ANSI = {"+": "\x1b[32m", "-": "\x1b[31m", "@": "\x1b[36m"}

_ICONS: dict[CardStatus, str] = {
    "pending": "○",
    "awaiting": "?",
    "running": "",
    "ok": "✓",
    "warning": "!",
    "error": "✗",
    "denied": "⊘",
    "cancelled": "■",
}
_LABELS: dict[CardStatus, str] = {
    "pending": "pending",
    "awaiting": "awaiting approval",
    "running": "running",
    "ok": "ok",
    "warning": "warning",
    "error": "error",
    "denied": "denied",
    "cancelled": "cancelled",
}

_STATUS_CLASSES: dict[CardStatus, dict[str, bool]] = {
    status: {f"-{name}": name == status for name in _ICONS} for status in _ICONS
}
"""Each status's class switches, applied in one ``update_classes`` (one restyle)."""


def classify_result(item: PreparedItem, result: ToolResult) -> tuple[CardStatus, str]:
    """Status and short label for a finished call, from the result's status (never its text)."""
    status = result.status
    if status is ToolStatus.DENIED:
        return "denied", STATUS_LABELS[status]
    if status is ToolStatus.CANCELLED:
        return "cancelled", STATUS_LABELS[status]
    if item.func_name == "bash":
        outcome = bash_outcome(result)
        return outcome.kind, outcome.label
    if status is ToolStatus.TIMED_OUT:
        return "error", STATUS_LABELS[status]
    return ("error", "error") if result.is_error else ("ok", "ok")


class ToolCard(Vertical, can_focus=True):
    """One tool call in the conversation."""

    BINDINGS = [
        Binding("enter", "toggle", "Expand", show=True),
        Binding("space", "toggle", "Expand", show=False),
    ]

    DEFAULT_CSS = """
    ToolCard {
        height: auto;
        width: 1fr;
        padding: 0 1;
        margin: 0 0 1 0;
        background: $boost;
        border-left: outer $primary 50%;
        &.-ok { border-left: outer $success 70%; }
        &.-warning { border-left: outer $warning 70%; }
        &.-error, &.-denied { border-left: outer $error 70%; }
        &.-cancelled { border-left: outer $foreground 30%; }
        &.-awaiting { border-left: outer $warning; }
        /* (The status classes style the card alone: _set_status_classes restyles just the card.) */
        /* Focus must show in 256-colour terminals too, where a faint tint rounds to the same grey:
           a full-block edge (a different character) and a header bar in the accent colour. After the
           status rules, so it wins over them. */
        &:focus {
            border-left: thick $accent;
            & > .tool-card--header { background: $accent 30%; }
            & .tool-card--title { text-style: bold; }
        }
        & > .tool-card--header { height: 1; width: 1fr; }
        & .tool-card--title { width: 1fr; height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
        & .tool-card--status { width: auto; height: 1; padding-left: 1; color: $text-muted; }
        & .tool-card--status.-ok { color: $text-success; }
        & .tool-card--status.-warning, & .tool-card--status.-awaiting { color: $text-warning; }
        & .tool-card--status.-error, & .tool-card--status.-denied { color: $text-error; }
        & > .tool-card--summary {
            height: auto; max-height: 3; color: $text-muted; padding-left: 2;
            text-wrap: nowrap; text-overflow: ellipsis;
        }
        & > OutputLog { height: auto; max-height: 20; margin-left: 2; display: none; }
        &.-expanded > OutputLog { display: block; }
        &.-expanded > .tool-card--summary { display: none; }
    }
    """

    expanded: reactive[bool] = reactive(False, init=False)

    class Toggled(Message):
        """The card was expanded or collapsed."""

        def __init__(self, card: ToolCard, expanded: bool) -> None:
            super().__init__()
            self.card = card
            self.expanded = expanded

    def __init__(self, item: PreparedItem, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.item = item
        self.call_id = item.call_id
        self.status: CardStatus = "pending"
        self.status_label = ""
        self.result: ToolResult | None = None
        self.output_lines: list[str] = []
        self.started_at: float | None = None
        self.finished_at: float | None = None
        self.progress_text = ""
        self._title = Static(self._title_content(), classes="tool-card--title", markup=False)
        self._status_view = TickLabel("", classes="tool-card--status", markup=False)
        self._summary = Static("", classes="tool-card--summary", markup=False)
        self._output = OutputLog(max_lines=EXPANDED_MAX_LINES)
        self._ticker: Subscription | None = None
        self._bindings_expandable = False  # can_expand as the footer last showed it
        if item.error:
            self._finish("error", "error", ToolResult(item.error, is_error=True), None)

    def compose(self) -> ComposeResult:
        with Horizontal(classes="tool-card--header"):
            yield self._title
            yield self._status_view
        yield self._summary
        yield self._output

    def on_mount(self) -> None:
        self._refresh_view()

    # --- public API ---------------------------------------------------------------------
    @property
    def elapsed(self) -> float | None:
        if self.started_at is None:
            return None
        end = self.finished_at if self.finished_at is not None else clock.now()
        return end - self.started_at

    @property
    def can_expand(self) -> bool:
        return bool(self.output_lines)

    def mark_awaiting(self) -> None:
        """The call waits for the user's approval."""
        if self.finished_at is None:
            self.status = "awaiting"
            self._refresh_view()

    def mark_running(self) -> None:
        """The call started executing."""
        if self.finished_at is not None:
            return
        self.status = "running"
        self.started_at = clock.now()
        if self.is_mounted and self._ticker is None:
            self._ticker = on_tick(self, self._refresh_status)
        self._refresh_view()

    def set_progress(self, text: str) -> None:
        """What a running call last reported (MCP progress): shown after the spinner."""
        if self.finished_at is None:
            self.progress_text = text
            self._refresh_status()

    def mark_cancelled(self, reason: str = CANCELLED_BY_USER) -> None:
        self._finish("cancelled", "cancelled", cancelled_result(reason), None)

    def set_result(self, result: ToolResult, output_lines: list[str] | None = None) -> None:
        """The call finished; ``output_lines`` are a bash pane's lines (else the result text)."""
        status, label = classify_result(self.item, result)
        self._finish(status, label, result, output_lines)

    def recipe(self) -> Callable[[], ToolCard]:
        """How to build a new card showing this finished call as it ended (the chat mounts it
        again when the view scrolls back to it). Holds the call's data, not this widget."""
        return partial(
            _finished_card,
            self.item,
            self.status,
            self.status_label,
            self.result,
            list(self.output_lines),
            self.started_at,
            self.finished_at,
        )

    def action_toggle(self) -> None:
        if self.can_expand:
            self.expanded = not self.expanded

    def watch_expanded(self, expanded: bool) -> None:
        self.set_class(expanded, "-expanded")
        if expanded:
            self._output.scroll_end(animate=False, immediate=True)
        self.post_message(self.Toggled(self, expanded))
        self._refresh_view()

    def on_click(self, event: events.Click) -> None:
        if event.widget is self._output:
            return
        self.focus()
        self.action_toggle()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "toggle":
            return self.can_expand
        return True

    # --- internals ----------------------------------------------------------------------
    def _finish(
        self, status: CardStatus, label: str, result: ToolResult, output_lines: list[str] | None
    ) -> None:
        self.finished_at = clock.now()
        if result.elapsed is not None and not clock.is_frozen():
            # The engine's measure: the card was marked running and finished when the screen got
            # to it, which on a busy loop is late by different amounts (a sleep 1 showed 0.8-2.0 s).
            self.started_at = self.finished_at - result.elapsed
        self.status = status
        self.status_label = label
        self.result = result
        if output_lines is None:
            output_lines = result.text.splitlines()
        self.output_lines = [clean_line(line) for line in output_lines[-EXPANDED_MAX_LINES:]]
        if self.item.func_name in DIFF_TOOLS:
            self.output_lines = colour_diff_lines(self.output_lines)
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None
        self._output.clear()
        if self.output_lines:
            self._output.write_lines(self.output_lines)
        self._refresh_view()

    def _title_content(self) -> Content:
        header = self.item.header or self.item.func_name
        first = header.strip().splitlines()[0] if header.strip() else self.item.func_name
        arrow = ""
        if self.output_lines:
            arrow = "▾ " if self.expanded else "▸ "
        return Content.assemble((arrow, "$text-muted"), (first, "bold" if not arrow else ""))

    def _refresh_title(self) -> None:
        self._title.update(self._title_content())

    def _refresh_status(self) -> None:
        elapsed = self.elapsed
        elapsed_text = f" · {clock.format_elapsed(elapsed)}" if elapsed is not None else ""
        view = self._status_view
        view.update_classes(_STATUS_CLASSES[self.status])
        if self.status == "running":
            progress = f" · {self.progress_text}" if self.progress_text else ""
            view.tick(
                Content.assemble((clock.spinner_frame(), "$text-accent"), f" running{elapsed_text}{progress}")
            )
            return
        label = self.status_label or _LABELS[self.status]
        view.tick(f"{_ICONS[self.status]} {label}{elapsed_text}")

    def _set_status_classes(self, classes: dict[str, bool]) -> None:
        """The status classes in one change, restyling the card alone: they style its own border
        (DEFAULT_CSS), no rule of its children reads them, and Textual restyles a node's whole
        subtree for a class change (header, title, status, preview, log: ~2.5 ms a card on a quiet
        machine, four of them between a batch's last result and the model's answer)."""
        before = self.classes
        self.update_classes(classes, update=False)
        if self.classes != before and self.is_attached:
            self.app.stylesheet.update_nodes([self], animate=True)

    def _refresh_view(self) -> None:
        self._set_status_classes({**_STATUS_CLASSES[self.status], "-done": self.finished_at is not None})
        self._refresh_title()
        self._refresh_status()
        summary_lines: list[Content] = []
        if self.finished_at is not None:
            if self.item.func_name in DIFF_TOOLS:
                summary_lines = diff_preview(self.output_lines, SUMMARY_LINES)
            else:
                summary_lines = [Content(text) for text in first_lines(self.output_lines, SUMMARY_LINES)]
            more = len(self.output_lines) - SUMMARY_LINES
            if more > 0 and summary_lines:
                summary_lines[-1] += f"   (+{more} lines, enter to expand)"
        self._summary.update(Content("\n").join(summary_lines))
        # Expanded, the full output replaces the preview (the preview is its first lines).
        self._summary.display = bool(summary_lines) and not self.expanded
        expandable = self.can_expand
        if expandable != self._bindings_expandable:
            self._bindings_expandable = expandable
            if self.is_mounted and self.has_focus_within:
                # Only the focused card's bindings are in the footer (focus itself refreshes them);
                # a refresh recomposes the whole footer, for every card on every status change.
                self.refresh_bindings()


def warm() -> None:
    """Load what a session's first tool batch needs beyond this module (for a worker thread once
    the app has started): the panes' grid, and rich's table of character widths, which rich
    imports (~11 ms) the first time it measures a character outside its fast ranges: the "✓" of
    the first finished card, on the event loop between the batch's last result and the answer."""
    from rich.cells import cell_len

    from . import pane_grid  # noqa: F401 (the import is the point)

    cell_len("".join(_ICONS.values()))


def first_lines(lines: list[str], limit: int) -> list[str]:
    """The first ``limit`` non-blank lines, without escape sequences."""
    shown: list[str] = []
    for line in lines:
        text = plain_line(line).rstrip()
        if text:
            shown.append(text)
            if len(shown) >= limit:
                break
    return shown


def _diff_start(lines: list[str]) -> int | None:
    for index, line in enumerate(lines[:-1]):
        if plain_line(line).startswith("--- ") and plain_line(lines[index + 1]).startswith("+++ "):
            return index
    return None


def diff_preview(lines: list[str], limit: int) -> list[Content]:
    """A diff tool's preview: the summary lines before the diff, then its changed lines, coloured
    (the ``---``/``+++``/``@@`` headers and context lines say nothing a glance needs)."""
    start = _diff_start(lines)
    if start is None:
        return [Content(text) for text in first_lines(lines, limit)]
    shown = [Content(text) for text in first_lines(lines[:start], limit)]
    for line in lines[start + 2 :]:
        if len(shown) >= limit:
            break
        text = plain_line(line).rstrip()
        if text.startswith("+"):
            shown.append(Content.styled(text, "$text-success"))
        elif text.startswith("-"):
            shown.append(Content.styled(text, "$text-error"))
    return shown


def colour_diff_lines(lines: list[str]) -> list[str]:
    """The diff part of a result with ANSI colours for the expanded log (+ green, - red, @@ cyan)."""
    start = _diff_start(lines)
    if start is None:
        return lines
    coloured = lines[: start + 2]
    for line in lines[start + 2 :]:
        colour = _DIFF_ANSI.get(line[:1]) if not line.startswith("\x1b") else None
        coloured.append(f"{colour}{line}\x1b[0m" if colour else line)
    return coloured


def _finished_card(
    item: PreparedItem,
    status: CardStatus,
    label: str,
    result: ToolResult | None,
    output_lines: list[str],
    started_at: float | None,
    finished_at: float | None,
) -> ToolCard:
    card = ToolCard(item)
    if result is not None:
        card._finish(status, label, result, output_lines)
        card.started_at, card.finished_at = started_at, finished_at  # as the live card showed them
    return card
