"""Running bash calls side by side: one `BashPane` per call_id, fed in batches once per frame.

`write_lines()` is called for every batch of output lines (a flood is hundreds of thousands of lines
a second), so it only keeps a reference to the batch; a single timer flushes what is pending into
the panes once per frame, and only the newest lines a pane keeps are ever looked at. Each pane is
bounded, so a flood in one pane costs the others nothing.

Input goes first: while the user types (``yield_to_input()``, called for every key), the flush waits,
so the frame that shows a typed character is not also the frame that redraws four scrolling panes;
the panes catch up once typing pauses, and at least every ``MAX_INPUT_HOLD`` seconds meanwhile.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from textual.app import ComposeResult
from textual.containers import Container
from textual.timer import Timer

from ..core.input_gate import GATE
from ..core.types import OutputStream, ToolResult
from .bash_pane import BashPane, clean_line

Chunk = tuple[Sequence[str], OutputStream]

FLUSH_INTERVAL = 1 / 30
INPUT_HOLD = 0.05
"""Seconds after a key press during which output waits (the key's frame is drawn first)."""
MAX_INPUT_HOLD = 0.25
"""While the user keeps typing, the panes still update at least this often (seconds)."""
LEAVE_DELAY = 1.0
"""Seconds a finished (hidden) pane stays in the DOM: removed off the path from the last result of
a batch to the answer, with every pane that finished by then."""
MIN_ROWS_FOR_BORDERS = 9
"""A pane with fewer rows than this drops its border (header + output only)."""
MIN_WIDTH_FOR_THREE_COLUMNS = 120


class ParallelPanes(Container):
    """A grid of live bash panes keyed by call_id; hidden while nothing runs."""

    DEFAULT_CSS = """
    /* The grid never takes more than about half the screen (vh), so the chat, the prompt and the status
       bar keep their rows in small terminals (90x30, 80x24); ParallelPanes sets -compact when a pane gets
       too few rows for a border (the header row still shows the command and its status) and -narrow
       when three columns would not fit. */
    ParallelPanes {
        layout: grid;
        grid-size: 1;
        grid-gutter: 0 1;
        grid-rows: 1fr;
        height: 12;
        max-height: 40vh;
        width: 1fr;
        padding: 0;
        margin: 0 0 1 0;
        &.-two { grid-size: 2; height: 14; max-height: 45vh; }
        &.-four { grid-size: 2 2; height: 24; max-height: 50vh; }
        &.-many { grid-size: 3; height: 30; max-height: 50vh; }
        &.-many.-narrow { grid-size: 2; }
    }

    ParallelPanes > BashPane {
        height: 1fr;
        width: 1fr;
    }

    ParallelPanes.-compact > BashPane {
        border: none;
        min-height: 2;
    }
    """
    SCOPED_CSS = False

    def __init__(
        self,
        max_lines: int = 5000,
        *,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.max_lines = max_lines
        self._panes: dict[str, BashPane] = {}
        self._pending: dict[str, list[Chunk]] = {}
        self._pending_lines: dict[str, int] = {}
        self._pending_skipped: dict[str, int] = {}
        self._flush_timer: Timer | None = None
        self._call_ids: tuple[str, ...] | None = None
        self._input_until = 0.0
        self._pending_since = 0.0  # when output began waiting for the next flush
        self._leaving: list[BashPane] = []  # finished panes, hidden, removed after LEAVE_DELAY
        self._ended: set[str] = set()  # calls that ended: their last lines wait for finish()
        self._classes_queued = False

    def compose(self) -> ComposeResult:
        return iter(())

    def on_mount(self) -> None:
        self._call_ids = None
        self.display = bool(self._panes)
        self._update_layout_classes()  # before the first frame that shows the grid
        if self._pending:
            self._schedule_flush()

    # --- public API ---------------------------------------------------------------------
    @property
    def call_ids(self) -> tuple[str, ...]:
        """The running calls (a snapshot: cheap, called per output line; safe to iterate while finishing)."""
        ids = self._call_ids
        if ids is None:
            ids = self._call_ids = tuple(self._panes)
        return ids

    def __contains__(self, call_id: object) -> bool:
        return call_id in self._panes

    def pane(self, call_id: str) -> BashPane | None:
        return self._panes.get(call_id)

    def __len__(self) -> int:
        return len(self._panes)

    def start(self, call_id: str, command: str) -> BashPane:
        """Open a pane for a bash call that starts running."""
        existing = self._panes.get(call_id)
        if existing is not None:
            return existing
        pane = BashPane(call_id, command, max_lines=self.max_lines)
        self._panes[call_id] = pane
        if self.is_attached:
            self.mount(pane)
        self._relayout()
        if self._pending.get(call_id):
            self._schedule_flush()
        return pane

    def write(self, call_id: str, line: str, stream: OutputStream = "stdout") -> None:
        """Queue one output line."""
        self.write_lines(call_id, [line], stream)

    def write_lines(self, call_id: str, lines: Sequence[str], stream: OutputStream = "stdout") -> None:
        """Queue a batch of output lines (kept by reference until the next frame's flush; the
        oldest batches beyond what a pane keeps are dropped and counted, never copied)."""
        if not lines:
            return
        pending = self._pending.get(call_id)
        if pending is None:
            pending = self._pending[call_id] = []
        pending.append((lines, stream))
        count = self._pending_lines.get(call_id, 0) + len(lines)
        if count - len(pending[0][0]) >= self.max_lines:  # the oldest batch would be cut anyway
            skipped = 0
            while len(pending) > 1 and count - len(pending[0][0]) >= self.max_lines:
                dropped = len(pending.pop(0)[0])
                skipped += dropped
                count -= dropped
            self._pending_skipped[call_id] = self._pending_skipped.get(call_id, 0) + skipped
        self._pending_lines[call_id] = count
        if self._flush_timer is None:
            self._schedule_flush()

    def ended(self, call_id: str) -> None:
        """The call ended and its result is on the way (``finish``): its last lines are not drawn
        into the pane before that (a line written into a pane is a full layout of the screen, for a
        pane that leaves the screen with the result)."""
        if call_id in self._panes:
            self._ended.add(call_id)

    def finish(self, call_id: str, result: ToolResult) -> list[str]:
        """The call ended: its pane leaves the grid; returns the pane's (bounded) lines."""
        self._ended.discard(call_id)
        pane = self._panes.pop(call_id, None)
        pending = self._pending.pop(call_id, [])
        self._pending_lines.pop(call_id, None)
        skipped = self._pending_skipped.pop(call_id, 0)
        if pane is None:
            lines = [line for chunk, _ in pending for line in chunk][-self.max_lines :]
            return [clean_line(line) for line in lines]
        pane.write_chunks(pending, skipped)
        lines = pane.lines
        if pane.is_attached:
            pane.end(result)
            # Out of the grid now, out of the DOM ``LEAVE_DELAY`` later, with every pane that
            # finished by then: a removal is awaited after the message that asked for it (its
            # widgets' tasks must end, over several loop turns), so removing each pane at once
            # held the next result (and the answer behind it) for a frame per pane; and removing
            # them after the next frame cost a full layout and repaint of the screen between the
            # batch's results and the model's answer to them.
            pane.display = False
            self._leaving.append(pane)
            if len(self._leaving) == 1:
                self.set_timer(LEAVE_DELAY, self._remove_leaving, name="panes-leave")
        else:
            pane.set_result(result)
        self._relayout()
        return lines

    def _remove_leaving(self) -> None:
        leaving, self._leaving = self._leaving, []
        if leaving and self.is_attached:
            self.remove_children(leaving)

    def yield_to_input(self) -> None:
        """A key was pressed: hold pending output back for ``INPUT_HOLD`` seconds."""
        self._input_until = time.monotonic() + INPUT_HOLD

    def _flush_due(self) -> None:
        now = time.monotonic()
        # A key on its way to the screen always goes first (the gate bounds its own hold); after
        # a key was shown, output waits while typing goes on, up to MAX_INPUT_HOLD.
        if GATE.held or (now < self._input_until and now - self._pending_since < MAX_INPUT_HOLD):
            self._flush_timer = None
            if self.is_attached:  # looked at again next frame
                self._flush_timer = self.set_timer(FLUSH_INTERVAL, self._flush_due, name="panes-flush")
            return
        self.flush()

    def flush(self) -> None:
        """Write every pending batch into its pane now."""
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        for call_id in list(self._pending):
            pane = self._panes.get(call_id)
            if pane is None or not pane.is_attached or call_id in self._ended:
                continue  # kept until the pane exists (or finish() takes them)
            chunks = self._pending.pop(call_id)
            self._pending_lines.pop(call_id, None)
            if chunks:
                pane.write_chunks(chunks, self._pending_skipped.pop(call_id, 0))

    # --- internals ----------------------------------------------------------------------
    def _schedule_flush(self) -> None:
        if self._flush_timer is None and self.is_attached:
            self._pending_since = time.monotonic()
            self._flush_timer = self.set_timer(FLUSH_INTERVAL, self._flush_due, name="panes-flush")

    def _relayout(self) -> None:
        """Hide the grid when no pane runs; show it with its layout classes once per turn of the loop."""
        self._call_ids = None
        if not self._panes:
            self.display = False  # at once; shown again with the classes for its panes
        if not self._classes_queued and self.is_attached:
            self._classes_queued = True
            self.call_later(self._update_layout_classes)

    def _update_layout_classes(self) -> None:
        """The grid's classes for the panes running now, in one update (each class changed on its
        own restyled every pane again). Panes starting or finishing together (a batch approved,
        four results at once) restyle the grid once, not once per pane; an empty grid is hidden
        and keeps its classes until a pane starts (restyling it and its leaving panes was 10-17 ms
        per finished pane, on the way from the last result to the next request)."""
        self._classes_queued = False
        count = len(self._panes)
        if not count or not self.is_attached:
            return
        self.display = True
        classes = {"-one": count == 1, "-two": count == 2, "-four": 3 <= count <= 4, "-many": count > 4}
        width = self.size.width
        if width:
            classes["-narrow"] = width < MIN_WIDTH_FOR_THREE_COLUMNS
        # -compact waits for the height these classes give (on_resize; judged on the old height it
        # flipped and flipped back: two restyles for one change); the same classes keep the height
        before = set(self.classes)
        self.update_classes(classes)
        if set(self.classes) == before:
            self._refit()

    def on_resize(self) -> None:
        self._refit()

    def _refit(self) -> None:
        if self._panes and self.is_attached:
            self.update_classes(self._fit_classes())

    def _fit_classes(self) -> dict[str, bool]:
        """Small terminals: panes drop their border when it would leave them too few output rows,
        and more than four panes use two columns where three would be too narrow."""
        width, height = self.size
        if not height:
            return {}
        count = len(self._panes)
        narrow = width < MIN_WIDTH_FOR_THREE_COLUMNS
        columns = 1 if count <= 1 else 2 if count <= 4 or narrow else 3
        rows = max(1, -(-count // columns))
        return {"-narrow": narrow, "-compact": height // rows < MIN_ROWS_FOR_BORDERS}
