"""watch: create / list / cancel polled shell commands (the polling itself is watch_runner.py).

Limits: 5 active watches per session, poll interval 10 s to 24 h, duplicate names refused within
a session, max_polls 1..10,000 (default 100). ``stop_on`` is checked by watch_expr at prepare, so
a refused expression never reaches the database.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from typing import TYPE_CHECKING, Any

from ..core.child_env import sandbox_policy
from ..core.tools import Preparer, ToolContext, error_item, require_str
from ..core.types import ExecContext, PreparedItem, Subject, ToolResult
from ..sandbox import plan
from .bash_guard import check_command
from .bash_parts import command_parts
from .watch_expr import WatchExprError, compile_condition

if TYPE_CHECKING:
    from ..storage.db import Storage

MAX_ACTIVE = 5
MIN_POLL = 10.0
MAX_POLL = 24 * 3600.0
DEFAULT_POLL = "5m"
DEFAULT_MAX_POLLS = 100
MAX_MAX_POLLS = 10_000
MAX_COMMAND_CHARS = 10_000
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd])")


class DurationError(ValueError):
    pass


def parse_duration(text: str) -> float:
    """'30s', '5m', '1h', '1d', '1h30m' or a bare number of seconds -> seconds."""
    raw = text.strip().lower() if isinstance(text, str) else ""
    if not raw:
        raise DurationError("empty duration")
    if re.fullmatch(r"\d+(\.\d+)?", raw):
        return float(raw)
    compact = raw.replace(" ", "")
    if not re.fullmatch(r"(\d+(\.\d+)?[smhd])+", compact):
        raise DurationError(f"cannot read duration {text!r}: use forms like 30s, 5m, 1h, 1d")
    return sum(float(n) * _UNITS[u] for n, u in _DURATION.findall(compact))


def format_duration(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def _describe(w: dict[str, Any], now: float) -> str:
    due = max(0.0, w["next_run"] - now)
    cond = f"stop_on: {w['stop_on']}" if w.get("stop_on") else "fires on output change"
    return (
        f"- {w['name']} (id {w['id']}): `{w['command']}` every {format_duration(w['poll_every'])}, "
        f"{cond}; polls {w['polls']}/{w['max_polls']}, next in {format_duration(round(due))}"
    )


async def _create_problem(storage: Storage, session_id: str, name: str) -> str | None:
    active = await storage.list_watches(session_id, active_only=True)
    if any(w["name"] == name for w in active):
        return f"a watch named {name!r} is already active in this session (cancel it or pick another name)"
    if len(active) >= MAX_ACTIVE:
        return f"at most {MAX_ACTIVE} active watches per session: cancel one first"
    return None


async def _prepare_create(ctx: ToolContext, call_id: str, args: dict[str, Any]) -> PreparedItem:
    command = require_str(args, "command")
    name = require_str(args, "name")
    if command is None or not command.strip():
        return error_item(call_id, "watch", args, "watch create needs a 'command'")
    if len(command) > MAX_COMMAND_CHARS:
        return error_item(call_id, "watch", args, f"command is longer than {MAX_COMMAND_CHARS} characters")
    # the same guard as the bash tool (the command runs in bash, in the same sandbox)
    refusal = await asyncio.to_thread(check_command, command)
    if refusal:
        return error_item(call_id, "watch", args, f"watch: {refusal}")
    if name is None or not name.strip():
        return error_item(call_id, "watch", args, "watch create needs a 'name' (e.g. pr-review)")
    name = name.strip()
    if len(name) > 64:
        return error_item(call_id, "watch", args, "name is longer than 64 characters")
    try:
        poll_every = parse_duration(str(args.get("poll_every") or DEFAULT_POLL))
    except DurationError as exc:
        return error_item(call_id, "watch", args, str(exc))
    if not MIN_POLL <= poll_every <= MAX_POLL:
        return error_item(
            call_id,
            "watch",
            args,
            f"poll_every must be between 10s and 24h (got {format_duration(poll_every)})",
        )
    max_polls = args.get("max_polls", DEFAULT_MAX_POLLS)
    if isinstance(max_polls, bool) or not isinstance(max_polls, int) or not 1 <= max_polls <= MAX_MAX_POLLS:
        return error_item(call_id, "watch", args, f"max_polls must be an integer from 1 to {MAX_MAX_POLLS}")
    stop_on = args.get("stop_on")
    if stop_on is not None and not isinstance(stop_on, str):
        return error_item(call_id, "watch", args, "stop_on must be a string expression")
    stop_on = stop_on.strip() if stop_on and stop_on.strip() else None
    if stop_on:
        try:
            compile_condition(stop_on)
        except WatchExprError as exc:
            return error_item(call_id, "watch", args, f"stop_on refused: {exc}")
    if ctx.storage is None:
        return error_item(call_id, "watch", args, "watch is unavailable: no database is open")
    storage = ctx.storage
    problem = await _create_problem(storage, ctx.session_id, name)
    if problem:
        return error_item(call_id, "watch", args, problem)

    async def execute(ectx: ExecContext) -> ToolResult:
        again = await _create_problem(storage, ctx.session_id, name)
        if again:
            return ToolResult(again, is_error=True)
        now = time.time()
        watch_id = uuid.uuid4().hex[:8]
        await storage.add_watch(
            {
                "id": watch_id,
                "session_id": ctx.session_id,
                "name": name,
                "command": command,
                "poll_every": poll_every,
                "stop_on": stop_on,
                "max_polls": max_polls,
                "polls": 0,
                "next_run": now,  # first poll right away: a baseline, or an already-true condition
                "prev_output": None,
                "active": 1,
                "created": now,
            }
        )
        if ctx.watches is not None:
            ctx.watches.wake()
        what = f"until {stop_on}" if stop_on else "until its output changes"
        return ToolResult(
            f"Watch {name!r} (id {watch_id}) created: `{command}` every {format_duration(poll_every)} {what}, "
            f"at most {max_polls} polls. The result will arrive as a message in this conversation."
        )

    cond = f"stop_on: {stop_on}" if stop_on else "fires when the output changes"
    parts = await asyncio.to_thread(command_parts, command)
    run_plan = await asyncio.to_thread(plan, sandbox_policy(ctx.config), ["bash", "-c", command], cwd=ctx.cwd)
    return PreparedItem(
        call_id=call_id,
        func_name="watch",
        args=args,
        header=f"watch create {name!r} every {format_duration(poll_every)}",
        preview=f"{command}\n# {cond}; max {max_polls} polls",
        preview_kind="bash",
        execute=execute,
        approval_label="watch",
        subject=Subject(commands=parts),
        sandboxed=run_plan.sandboxed,
        sandbox_note=run_plan.note,
    )


async def prepare_watch(ctx: ToolContext, call_id: str, args: dict[str, Any]) -> PreparedItem:
    action = args.get("action")
    if action not in ("create", "list", "cancel"):
        return error_item(call_id, "watch", args, "action must be create, list or cancel")
    if action == "create":
        return await _prepare_create(ctx, call_id, args)
    if ctx.storage is None:
        return error_item(call_id, "watch", args, "watch is unavailable: no database is open")
    storage = ctx.storage

    if action == "list":

        async def run_list(ectx: ExecContext) -> ToolResult:
            active = await storage.list_watches(ctx.session_id, active_only=True)
            if not active:
                return ToolResult("No active watches in this session.")
            now = time.time()
            lines = [f"{len(active)} active watch{'es' if len(active) != 1 else ''}:"]
            lines.extend(_describe(w, now) for w in active)
            return ToolResult("\n".join(lines))

        return PreparedItem(
            call_id,
            "watch",
            args,
            "watch list",
            needs_approval=False,
            execute=run_list,
            subject=Subject(commands=()),
        )

    key = require_str(args, "name")
    if key is None or not key.strip():
        return error_item(call_id, "watch", args, "watch cancel needs the 'name' (or an id prefix)")
    key = key.strip()

    async def run_cancel(ectx: ExecContext) -> ToolResult:
        active = await storage.list_watches(ctx.session_id, active_only=True)
        matches = [w for w in active if w["name"] == key] or [w for w in active if w["id"].startswith(key)]
        if not matches:
            return ToolResult(f"No active watch named {key!r} in this session.", is_error=True)
        if len(matches) > 1:
            ids = ", ".join(w["id"] for w in matches)
            return ToolResult(f"{key!r} matches several watches ({ids}): give a longer id", is_error=True)
        w = matches[0]
        await storage.update_watch(w["id"], active=0, result="cancelled by the model")
        return ToolResult(f"Watch {w['name']!r} (id {w['id']}) cancelled after {w['polls']} poll(s).")

    return PreparedItem(
        call_id,
        "watch",
        args,
        f"watch cancel {key!r}",
        needs_approval=False,
        execute=run_cancel,
        subject=Subject(commands=()),
    )


PREPARERS: dict[str, Preparer] = {"watch": prepare_watch}
