"""A live bash output pane: a header (command, spinner, elapsed, exit status) over a line-API log.

`OutputLog` stores raw lines (bounded) and only turns the lines on screen into styled strips
(`Text.from_ansi`, cached per line), so a pane takes 200k lines without rendering 200k lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.cache import LRUCache
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip
from textual.widgets import Static

from ..core.outcomes import STATUS_LABELS
from ..core.types import OutputStream, ToolResult, ToolStatus
from . import clock
from .tick_label import TickLabel
from .ticker import Subscription, on_tick

MAX_LINE_CHARS = 4000
_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f]")

OutcomeKind = Literal["ok", "warning", "error"]
_OUTCOME_KINDS: tuple[OutcomeKind, ...] = ("ok", "warning", "error")


@dataclass(frozen=True, slots=True)
class BashOutcome:
    """How a finished bash call ended, for colour-coded status text."""

    kind: OutcomeKind
    label: str
    exit_code: int | None = None


def bash_outcome(result: ToolResult) -> BashOutcome:
    """How a bash call ended, from the result's status and process outcome (never its text)."""
    process = result.process
    exit_code = process.exit_code if process is not None else None
    status = result.status
    if status in (ToolStatus.CANCELLED, ToolStatus.DENIED, ToolStatus.TIMED_OUT):
        return BashOutcome("error", STATUS_LABELS[status], exit_code)
    if process is not None and process.signal:
        return BashOutcome("error", f"killed ({process.signal})", exit_code)
    if exit_code is None:
        return BashOutcome("error", "error", None) if result.is_error else BashOutcome("ok", "done", None)
    if exit_code == 0 and not result.is_error:
        return BashOutcome("ok", "exit 0", 0)
    if exit_code == 1 and not result.is_error:
        return BashOutcome("warning", "exit 1", 1)
    return BashOutcome("error", f"exit {exit_code}", exit_code)


def clean_line(line: str) -> str:
    """One display line: no trailing newline, last carriage-return segment, bounded length."""
    if line.endswith("\n"):
        line = line[:-1]
    if line.endswith("\r"):
        line = line[:-1]
    if "\r" in line:
        line = line.rsplit("\r", 1)[-1]
    if len(line) > MAX_LINE_CHARS:
        line = line[:MAX_LINE_CHARS] + "…"
    return line


def plain_line(line: str) -> str:
    """A line without ANSI escape sequences and control characters."""
    if "\x1b" in line:
        line = _ANSI_RE.sub("", line)
    return _CONTROL_RE.sub("", line.expandtabs())


class OutputLog(ScrollView, can_focus=True):
    """A bounded, line-API log of command output with ANSI colours, rendered lazily."""

    ALLOW_SELECT = True
    COMPONENT_CLASSES = {"output-log--stderr"}
    DEFAULT_CSS = """
    OutputLog {
        background: $surface;
        color: $text;
        overflow-x: auto;
        overflow-y: auto;
        scrollbar-size-vertical: 1;
        scrollbar-size-horizontal: 1;
        &:focus { background-tint: $foreground 5%; }
        & > .output-log--stderr { color: $text-error; }
    }
    """

    def __init__(
        self,
        max_lines: int = 5000,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.max_lines = max(1, max_lines)
        self._lines: list[str] = []
        self._stderr = bytearray()
        self._dropped = 0  # absolute index of self._lines[0] (also the line cache's key base)
        self._skipped = 0  # lines dropped before they ever reached the log (upstream bounds)
        self._width = 0
        self._cache: LRUCache[int, Strip] = LRUCache(1024)
        self._follow = True  # stick to the end until the user scrolls up

    # --- data ---------------------------------------------------------------------------
    @property
    def lines(self) -> list[str]:
        """The stored (bounded) lines, raw (ANSI kept)."""
        return list(self._lines)

    @property
    def line_count(self) -> int:
        return len(self._lines)

    @property
    def total_lines(self) -> int:
        """Every line ever written, including those dropped by the bound."""
        return self._skipped + self._dropped + len(self._lines)

    def note_skipped(self, count: int) -> None:
        """Count lines an upstream buffer dropped (they still count in ``total_lines``)."""
        self._skipped += max(0, count)

    def write_lines(self, lines: Iterable[str], stream: OutputStream = "stdout") -> None:
        """Append lines from one stream."""
        self.write_chunks([(list(lines), stream)])

    def write_batch(self, batch: Sequence[tuple[str, OutputStream]]) -> None:
        """Append a batch of (line, stream) pairs; keep the newest ``max_lines``."""
        self.write_chunks([([line], stream) for line, stream in batch])

    def write_chunks(self, chunks: Sequence[tuple[Sequence[str], OutputStream]]) -> None:
        """Append runs of lines, each from one stream; keep the newest ``max_lines``. Lines older
        than that are counted and never looked at (a flood costs what the screen can show)."""
        keep = self.max_lines
        kept: list[tuple[Sequence[str], OutputStream]] = []
        for lines, stream in reversed(chunks):
            if keep <= 0:
                self._dropped += len(lines)
                continue
            if len(lines) > keep:
                self._dropped += len(lines) - keep
                lines = lines[-keep:]
            kept.append((lines, stream))
            keep -= len(lines)
        if not kept:
            return
        new_lines: list[str] = []
        flags = bytearray()
        for lines, stream in reversed(kept):
            new_lines.extend(lines)
            flags.extend((b"\x01" if stream == "stderr" else b"\x00") * len(lines))
        if not new_lines:
            return
        joined = "\n".join(new_lines)
        if (
            joined.count("\n") != len(new_lines) - 1
            or "\r" in joined
            or max(map(len, new_lines)) > MAX_LINE_CHARS
        ):
            new_lines, flags = self._normalise(new_lines, flags)
        if len(new_lines) > self.max_lines:
            skipped = len(new_lines) - self.max_lines
            self._dropped += skipped
            new_lines = new_lines[skipped:]
            flags = flags[skipped:]
        following = self._follow and not self.is_vertical_scrollbar_grabbed
        self._lines.extend(new_lines)
        self._stderr.extend(flags)
        removed = len(self._lines) - self.max_lines
        if removed > 0:
            del self._lines[:removed]
            del self._stderr[:removed]
            self._dropped += removed
        self._width = max(self._width, max(map(len, new_lines)))
        self._grow(Size(self._width, len(self._lines)))
        if following:
            self._scroll_to_end()
            if not self.size.height:  # not laid out yet: follow once it is
                self.call_after_refresh(self._follow_end)
        elif removed > 0:
            # Keep the lines the user is reading where they are.
            self.scroll_to(y=max(0, self.scroll_y - removed), animate=False, immediate=True)
        self.refresh()

    def _grow(self, size: Size) -> None:
        """The log's new virtual size. Textual's ``virtual_size`` is a layout reactive: setting it
        lays out the whole screen, though a log whose own size does not depend on its lines (a pane
        in the grid: ``height: 1fr``) is only scrolled by them. Such a log takes the new size
        without a layout and updates its scroll bars as Textual does after a layout
        (``ScrollView._size_updated``); a scroll bar appearing or going is still a layout (Textual's
        ``show_*_scrollbar`` reactives ask for it). A log sized by its lines (``height: auto`` in a
        tool card) is laid out as before."""
        if size == self.virtual_size:
            return
        if self.styles.auto_dimensions or not self.size:
            self.virtual_size = size
            return
        self.set_reactive(OutputLog.virtual_size, size)
        self._scroll_update(size)

    @staticmethod
    def _normalise(lines: list[str], flags: bytearray) -> tuple[list[str], bytearray]:
        """The slow path: split embedded newlines, keep the last carriage-return segment, bound length."""
        out: list[str] = []
        out_flags = bytearray()
        for raw, flag in zip(lines, flags, strict=True):
            stripped = raw.rstrip("\n")
            for part in stripped.split("\n") if "\n" in stripped else (stripped,):
                out.append(clean_line(part))
                out_flags.append(flag)
        return out, out_flags

    def clear(self) -> None:
        self._lines.clear()
        self._stderr.clear()
        self._dropped = 0
        self._skipped = 0
        self._width = 0
        self._cache.clear()
        self.virtual_size = Size(0, 0)
        self.refresh()

    @property
    def following(self) -> bool:
        """True while new output scrolls the view to the end."""
        return self._follow

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self.size.height:
            self._follow = new_value >= self.max_scroll_y

    def on_resize(self) -> None:
        self._follow_end()

    def watch_show_vertical_scrollbar(self, shown: bool) -> None:
        """A scroll made while the scrollbar was hidden (the first batch that overflows) does not
        reach it (Textual moves the thumb only while it shows): place the thumb when it appears."""
        if shown:
            self.vertical_scrollbar.position = self.scroll_y

    def _follow_end(self) -> None:
        if self._follow:
            self._scroll_to_end()

    def _scroll_to_end(self) -> None:
        # force: the scrollbar may not be shown yet for the very first batch.
        self.scroll_to(y=self.max_scroll_y, animate=False, force=True, immediate=True)

    # --- rendering ----------------------------------------------------------------------
    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        rich_style = self.rich_style
        if index >= len(self._lines):
            return Strip.blank(width, rich_style)
        strip = self._line_strip(index, rich_style)
        return strip.crop_extend(scroll_x, scroll_x + width, rich_style).apply_offsets(scroll_x, index)

    def _line_strip(self, index: int, rich_style: Style) -> Strip:
        key = self._dropped + index
        selection = self.text_selection
        if selection is None:
            cached = self._cache.get(key)
            if cached is not None:
                return cached
        raw = self._lines[index]
        base = rich_style
        if self._stderr[index]:
            base = rich_style + self.get_component_rich_style("output-log--stderr", partial=True)
        if "\x1b" in raw:
            text = Text.from_ansi(raw.expandtabs(), no_wrap=True, end="")
        else:
            text = Text(plain_line(raw), no_wrap=True, end="")
        # Text.render ignores Text.style, so the base style goes in as the first span.
        text.stylize_before(base)
        if selection is not None and (span := selection.get_span(index)) is not None:
            start, end = span
            if end == -1:
                end = len(text)
            text.stylize(self.screen.get_component_rich_style("screen--selection"), start, end)
        strip = Strip(text.render(self.app.console), text.cell_len)
        if selection is None:
            self._cache[key] = strip
        return strip

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        text = "\n".join(plain_line(line) for line in self._lines)
        return selection.extract(text), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self._cache.clear()
        self.refresh()


def command_content(command: str, limit: int = 400) -> Content:
    """The command, first line only, syntax-highlighted as bash."""
    first, *rest = command.strip().splitlines() or [""]
    if len(first) > limit:
        first = first[:limit] + "…"
    from textual.highlight import highlight  # pygments: loaded with the first pane, not at start-up

    content = highlight(first, language="bash")
    if rest:
        content = content + Content.styled(f"  (+{len(rest)} lines)", "dim")
    return content


class BashPane(Vertical):
    """One running (or finished) bash call: header with status, then its output."""

    DEFAULT_CSS = """
    BashPane {
        height: 1fr;
        min-height: 4;
        border: round $primary 60%;
        border-title-color: $text-primary;
        background: $surface;
        padding: 0;
        &.-ok { border: round $success 70%; }
        &.-warning { border: round $warning 70%; }
        &.-error { border: round $error 70%; }
        &:focus-within { border: round $accent; }
        & > .bash-pane--header { height: 1; width: 1fr; padding: 0 1; background: $panel; }
        & .bash-pane--command { width: 1fr; height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
        & .bash-pane--status { width: auto; height: 1; padding-left: 1; color: $text-muted; }
        & .bash-pane--status.-ok { color: $text-success; }
        & .bash-pane--status.-warning { color: $text-warning; }
        & .bash-pane--status.-error { color: $text-error; }
        & > OutputLog { height: 1fr; }
    }
    """

    def __init__(
        self,
        call_id: str,
        command: str,
        max_lines: int = 5000,
        *,
        started_at: float | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.call_id = call_id
        self.command = command
        self.started_at = clock.now() if started_at is None else started_at
        self.finished_at: float | None = None
        self.outcome: BashOutcome | None = None
        self.log_view = OutputLog(max_lines=max_lines)
        self._command_label = Static(command_content(command), classes="bash-pane--command", markup=False)
        self._status_label = TickLabel("", classes="bash-pane--status", markup=False)
        self._ticker: Subscription | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(classes="bash-pane--header"):
            yield self._command_label
            yield self._status_label
        yield self.log_view

    def on_mount(self) -> None:
        self._render_status()
        if self.finished_at is None:
            self._ticker = on_tick(self, self._render_status)

    @property
    def running(self) -> bool:
        return self.finished_at is None

    @property
    def elapsed(self) -> float:
        end = self.finished_at if self.finished_at is not None else clock.now()
        return end - self.started_at

    @property
    def lines(self) -> list[str]:
        return self.log_view.lines

    def write_chunks(self, chunks: Sequence[tuple[Sequence[str], OutputStream]], skipped: int = 0) -> None:
        if skipped:
            self.log_view.note_skipped(skipped)
        self.log_view.write_chunks(chunks)

    def write_line(self, line: str, stream: OutputStream = "stdout") -> None:
        self.log_view.write_chunks([([line], stream)])

    def set_result(self, result: ToolResult) -> BashOutcome:
        """Stop the spinner and show the exit status."""
        outcome = self.end(result)
        self.update_classes({f"-{kind}": kind == outcome.kind for kind in _OUTCOME_KINDS})
        self._render_status()
        return outcome

    def end(self, result: ToolResult) -> BashOutcome:
        """Stop the spinner and record how the call ended, without repainting (for a pane that
        leaves the screen now: restyling it first would cost a restyle of the pane for nothing)."""
        self.finished_at = clock.now()
        self.outcome = bash_outcome(result)
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None
        return self.outcome

    def _render_status(self) -> None:
        elapsed = clock.format_elapsed(self.elapsed)
        label = self._status_label
        if self.outcome is None:
            label.tick(Content.assemble((clock.spinner_frame(), "$text-accent"), f" {elapsed}"))
            return
        icon = {"ok": "✓", "warning": "!", "error": "✗"}[self.outcome.kind]
        label.update_classes({f"-{kind}": kind == self.outcome.kind for kind in _OUTCOME_KINDS})
        label.tick(f"{icon} {self.outcome.label} · {elapsed}")
