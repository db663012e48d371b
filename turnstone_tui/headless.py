"""Headless front end: ``turnstone-tui -p PROMPT`` runs one turn without the full-screen UI.

Assistant text goes to stdout; tool activity (headers, live output, results) to stderr.
Tools that need approval are denied (with a message to the model) unless --skip-permissions
or --allow TOOL was given. A command that fails in the sandbox because of it is never run again
outside it here (there is no user to ask, --skip-permissions or not): the model is told.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from .core.model_output import clean_text
from .core.outcomes import STATUS_LABELS
from .core.types import (
    ApprovalDecision,
    EscalationRequest,
    OutputStream,
    PlanReview,
    PreparedItem,
    SessionState,
    StatusInfo,
    ToolResult,
)

MCP_PREFIX = "mcp__"
PROGRESS_INTERVAL = 0.25
"""Seconds between two progress lines of one call."""
MAX_PROGRESS_MESSAGE = 200

DENIAL_FEEDBACK = (
    "headless mode: this tool needs approval and no user can approve it "
    "(the user may re-run with --skip-permissions or --allow {tools})"
)


# Every C0 control but newline and tab, DEL and the C1 controls: written raw, tool output (or a
# model) could move the cursor, retitle the window, or set the clipboard via OSC 52.
_CONTROL_ESCAPES = {
    code: f"\\x{code:02x}" for code in (*range(0x00, 0x20), *range(0x7F, 0xA0)) if code not in (0x09, 0x0A)
}


def terminal_safe(text: str) -> str:
    """``text`` with control characters shown as ``\\xNN`` escapes and lone surrogates replaced."""
    return clean_text(text).translate(_CONTROL_ESCAPES)


class HeadlessUI:
    shows_status = False
    """``on_status`` prints nothing: the session skips the sandbox probe at start (a bwrap run on
    the way to the first request), which the first sandboxed command makes anyway."""

    def __init__(
        self, out: TextIO | None = None, err: TextIO | None = None, *, color: bool | None = None
    ) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.errors: list[str] = []
        self._wrote_content = False
        self._in_reasoning = False
        self._names: dict[str, str] = {}
        self._progress_shown: dict[str, float] = {}  # call id -> when its last progress line was printed
        self.progress_interval = PROGRESS_INTERVAL
        self.clock = time.monotonic
        use_color = self.err.isatty() if color is None else color
        self._dim = "\x1b[2m" if use_color else ""
        self._red = "\x1b[31m" if use_color else ""
        self._reset = "\x1b[0m" if use_color else ""

    def _log(self, text: str) -> None:
        """``text`` must already be terminal-safe (it may hold this UI's own colour codes)."""
        self.err.write(text + "\n")
        self.err.flush()

    def on_turn_start(self, user_text: str) -> None: ...

    def on_content_token(self, text: str) -> None:
        if self._in_reasoning:
            self.err.write(self._reset + "\n")
            self._in_reasoning = False
        self.out.write(terminal_safe(text))
        self.out.flush()
        self._wrote_content = True

    def on_reasoning_token(self, text: str) -> None:
        if not self._in_reasoning:
            self.err.write(self._dim + "thinking: ")
            self._in_reasoning = True
        self.err.write(terminal_safe(text))
        self.err.flush()

    def on_message_end(self) -> None:
        if self._in_reasoning:
            self.err.write(self._reset + "\n")
            self._in_reasoning = False
        if self._wrote_content:
            self.out.write("\n")
            self.out.flush()
            self._wrote_content = False

    def on_tools_prepared(self, items: list[PreparedItem]) -> None:
        for item in items:
            self._names[item.call_id] = item.func_name
            self._log(f"▶ {terminal_safe(item.header)}")
            if item.error:
                self._log(f"  {self._red}error: {terminal_safe(item.error)}{self._reset}")

    async def approve_tools(self, items: list[PreparedItem]) -> ApprovalDecision:
        tools = " ".join(sorted({i.approval_label for i in items}))
        for item in items:
            self._log(f"  {self._red}denied (needs approval): {terminal_safe(item.header)}{self._reset}")
        return ApprovalDecision(approved=False, feedback=DENIAL_FEEDBACK.format(tools=tools))

    async def confirm_unsandboxed(self, request: EscalationRequest) -> bool | None:
        self._log(
            f"  {self._red}not run outside the sandbox (no user to ask): "
            f"{terminal_safe(request.failure)}{self._reset}"
        )
        return None

    def on_tool_start(self, item: PreparedItem) -> None: ...

    def on_tool_output(self, call_id: str, lines: list[str], stream: OutputStream) -> None:
        prefix = "│ " if stream == "stdout" else "│ [stderr] "
        dim, reset = self._dim, self._reset
        self.err.write(
            "".join(f"{dim}{prefix}{terminal_safe(line.rstrip(chr(10)))}{reset}\n" for line in lines)
        )

    def on_tool_progress(
        self, call_id: str, progress: float, total: float | None, message: str | None
    ) -> None:
        """``[progress] server/tool 3/10 message`` on stderr, so a long MCP call is seen to move: at most
        one line per call every ``progress_interval`` seconds (a chatty server sends thousands), and
        always the first and the one that reaches the total."""
        now = self.clock()
        last = self._progress_shown.get(call_id)
        final = total is not None and total > 0 and progress >= total
        if last is not None and not final and now - last < self.progress_interval:
            return
        self._progress_shown[call_id] = now
        name = self._names.get(call_id, call_id)
        if name.startswith(MCP_PREFIX) and "__" in name[len(MCP_PREFIX) :]:
            name = "/".join(name[len(MCP_PREFIX) :].split("__", 1))
        amount = f"{progress:g}/{total:g}" if total is not None and total > 0 else f"{progress:g}"
        words = " ".join((message or "").split())  # one line
        text = f"[progress] {name} {amount} {words[:MAX_PROGRESS_MESSAGE]}".rstrip()
        self._log(f"{self._dim}{terminal_safe(text)}{self._reset}")

    def on_tool_result(self, call_id: str, name: str, result: ToolResult) -> None:
        status = STATUS_LABELS[result.status] if result.status is not None else "ok"
        first = result.text.strip().splitlines()[:1]
        summary = first[0][:160] if first else ""
        if name == "bash":
            summary = result.text.strip().splitlines()[-1] if result.text.strip() else ""
        self._log(f"◀ {terminal_safe(name)} [{terminal_safe(status)}] {terminal_safe(summary)}")

    async def review_plan(self, plan: str, path: str, version: int = 1) -> PlanReview:
        self._log(
            f"plan v{version} written to {terminal_safe(path)} (headless mode accepts plans without review)"
        )
        return PlanReview("accept")

    def on_state(self, state: SessionState) -> None: ...
    def on_status(self, status: StatusInfo) -> None: ...

    def on_info(self, message: str) -> None:
        self._log(f"{self._dim}{terminal_safe(message)}{self._reset}")

    def on_notification(self, text: str) -> None:
        self.err.write("\a")
        self.on_info(f"🔔 {text}")

    def on_error(self, message: str) -> None:
        self.errors.append(message)
        self._log(f"{self._red}error: {terminal_safe(message)}{self._reset}")

    def on_turn_end(self) -> None:
        self.out.flush()
        self.err.flush()
