"""The bash tool: a real shell command, streamed line by line, in its own process group.

- ``bash -c COMMAND`` with stdin closed, the environment scrubbed of secrets, cwd = the session's.
- stdout lines are emitted live, a batch per chunk read (``exec_ctx.emit_lines(lines, "stdout")``,
  without the newlines) and kept;
  stderr lines are emitted with ``"stderr"`` and kept as ``[stderr] line``. Output that the command
  itself sends to stdout (``2>&1``) is not marked.
- Memory stays bounded: the kept output is a head+tail buffer of ``config.tools.truncation`` chars.
- ``timeout`` (1-600 s, default ``config.tools.timeout``) terminates the whole group (SIGTERM,
  then SIGKILL); cancellation does the same and re-raises.
- ``[exit code: N]`` is appended; is_error when the exit code is >= 2, the shell was killed by a
  signal, or the timeout fired. Exit code 1 ("grep found nothing") is not an error.
- Background processes that keep the output pipe open are not waited for (a note says so); to run
  a daemon, redirect its output (``nohup cmd > log 2>&1 &``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ..core.child_env import sandbox_policy, scrubbed_env
from ..core.tools import Preparer, ToolContext, error_item
from ..core.truncate import HeadTailBuffer
from ..core.types import ExecContext, PreparedItem, ProcessOutcome, Subject, ToolResult, ToolStatus
from ..sandbox import plan
from ..sandbox.lifetime import start_guardian_soon
from .bash_guard import MAX_COMMAND_CHARS, check_command
from .bash_parts import command_parts
from .proc_group import EmittingSink, RunOutcome, Standby, run_process

MIN_TIMEOUT = 1
MAX_TIMEOUT = 600
STDERR_PREFIX = "[stderr] "
HEADER_MAX = 100
NOTES_RESERVE = 1024
# What a command prints when the sandbox's read-only binds refused a write (EROFS). The seccomp filter's
# refusal of unix sockets is EACCES, "Permission denied": that cannot be told from a file's own mode, so
# it is not offered (the model is told of the sandbox by the tool description and the note below).
SANDBOX_DENIAL_MARK = "Read-only file system"
OUTSIDE_BANNER = "── running it again OUTSIDE the sandbox (approved by the user) ──"
NUL_REFUSAL = (
    "bash: the command contains a NUL byte (\\0), which no command line can carry; nothing was run. "
    "To produce one, write it as an escape: printf '\\0' or $'\\x00'"
)


def parse_timeout(value: Any, default: int) -> int | str:
    """The timeout in seconds, or an error message."""
    if value is None:
        return default
    if isinstance(value, bool):
        return "timeout must be a whole number of seconds (1-600)"
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return f"timeout must be a whole number of seconds (1-600), got {value!r}"
    if isinstance(value, float):
        if not value.is_integer():
            return f"timeout must be a whole number of seconds (1-600), got {value}"
        value = int(value)
    if not isinstance(value, int):
        return f"timeout must be a whole number of seconds (1-600), got {type(value).__name__}"
    if not MIN_TIMEOUT <= value <= MAX_TIMEOUT:
        return f"timeout must be between {MIN_TIMEOUT} and {MAX_TIMEOUT} seconds, got {value}"
    return value


def _header(command: str) -> str:
    first = command.strip().splitlines()[0] if command.strip() else command
    if len(first) > HEADER_MAX:
        first = first[: HEADER_MAX - 1] + "…"
    elif "\n" in command.strip():
        first += " …"
    return f"bash: {first}"


def format_result(text: str, outcome: RunOutcome, timeout: int, *, truncated: bool = False) -> ToolResult:
    """Output + status notes + ``[exit code: N]`` for the model, the outcome as fields for the UI."""
    notes: list[str] = []
    if outcome.timed_out:
        notes.append(f"[timed out after {timeout} s: the command and all its child processes were killed]")
    elif outcome.signal_name:
        notes.append(f"[killed by {outcome.signal_name}]")
    if outcome.detached:
        notes.append(
            "[background processes kept the output open; they are still running, their further output "
            "is not captured (redirect it to a file: cmd > log 2>&1 &)]"
        )
    code = outcome.returncode if outcome.returncode is not None else -1
    notes.append(f"[exit code: {code}]")
    body = text if not text or text.endswith("\n") else text + "\n"
    is_error = outcome.timed_out or code >= 2 or code < 0
    process = ProcessOutcome(
        exit_code=code,
        signal=outcome.signal_name,
        timed_out=outcome.timed_out,
        truncated=truncated,
        detached=outcome.detached,
    )
    status = ToolStatus.TIMED_OUT if outcome.timed_out else None
    return ToolResult(body + "\n".join(notes), is_error=is_error, status=status, process=process)


async def prepare_bash(ctx: ToolContext, call_id: str, args: dict[str, Any]) -> PreparedItem:
    command = args.get("command")
    if not isinstance(command, str) or not command.strip():
        return error_item(call_id, "bash", args, "bash: 'command' must be a non-empty string")
    if "\x00" in command:
        return error_item(call_id, "bash", args, NUL_REFUSAL)
    timeout = parse_timeout(args.get("timeout"), ctx.config.tools.timeout)
    if isinstance(timeout, str):
        return error_item(call_id, "bash", args, f"bash: {timeout}")
    stop_on_error = args.get("stop_on_error", False)
    if not isinstance(stop_on_error, bool):
        return error_item(call_id, "bash", args, "bash: stop_on_error must be true or false")
    # bashlex takes ~1 s per 100 KB on a busy machine: never on the event loop
    refusal = (
        check_command(command)
        if len(command) > MAX_COMMAND_CHARS
        else await asyncio.to_thread(check_command, command)
    )
    if refusal:
        return error_item(call_id, "bash", args, f"bash: {refusal}")
    start_guardian_soon()  # while the user reads the approval, not after
    parts = await asyncio.to_thread(command_parts, command)

    script = f"set -e\n{command}" if stop_on_error else command
    cwd = ctx.cwd
    limit = ctx.config.tools.truncation
    policy = sandbox_policy(ctx.config)
    run_plan = await asyncio.to_thread(plan, policy, ["bash", "-c", script], cwd=cwd)
    env = scrubbed_env(passthrough=ctx.config.env.passthrough)
    # (its sandbox may start while the user is asked: it runs the command only once told to)
    standby = Standby(run_plan.argv, cwd=cwd, env=env) if run_plan.sandboxed else None

    async def execute(exec_ctx: ExecContext) -> ToolResult:
        return await run_bash(
            script,
            exec_ctx,
            cwd=cwd,
            time_limit=timeout,
            limit=limit,
            argv=run_plan.argv,
            env=env,
            sandboxed=run_plan.sandboxed,
            standby=standby,
        )

    async def unsandboxed(exec_ctx: ExecContext) -> ToolResult:
        """The same script without bwrap (the same scrubbed environment): only after the user said yes."""
        exec_ctx.emit_lines([OUTSIDE_BANNER], "stderr")
        return await run_bash(script, exec_ctx, cwd=cwd, time_limit=timeout, limit=limit, env=env)

    return PreparedItem(
        call_id=call_id,
        func_name="bash",
        args=args,
        header=_header(command),
        preview=command if not stop_on_error else f"# set -e (stop on first error)\n{command}",
        needs_approval=not (run_plan.sandboxed and policy.auto_approve),
        execute=execute,
        preview_kind="bash",
        subject=Subject(commands=parts),
        sandboxed=run_plan.sandboxed,
        sandbox_note=run_plan.note,
        unsandboxed=unsandboxed if run_plan.sandboxed else None,
        standby=standby,
    )


async def run_bash(
    script: str,
    exec_ctx: ExecContext,
    *,
    cwd: Path,
    time_limit: int,
    limit: int,
    argv: list[str] | None = None,
    env: dict[str, str] | None = None,
    sandboxed: bool = False,
    standby: Standby | None = None,
) -> ToolResult:
    """Run a bash script as the tool does: streaming, bounded, group-killed on timeout/cancel.

    ``sandboxed``: the first output line showing that the sandbox refused a write (EROFS) is kept and,
    when the command fails, set as the result's ``sandbox_denial``."""
    # leave room for the notes and the exit code so the pipeline's final truncation keeps them
    buffer = HeadTailBuffer(max(limit - NOTES_RESERVE, 1024))
    emit = exec_ctx.emit_lines
    denial: list[str] = []

    def watch(lines: list[str]) -> None:
        for line in lines:
            if SANDBOX_DENIAL_MARK in line:
                denial.append(line[:500])
                return

    def emit_stdout(lines: list[str]) -> None:
        if sandboxed and not denial:
            watch(lines)
        emit(lines, "stdout")

    def emit_stderr(lines: list[str]) -> None:
        if sandboxed and not denial:
            watch(lines)
        emit(lines, "stderr")

    try:
        outcome = await run_process(
            argv or ["bash", "-c", script],
            cwd=cwd,
            env=scrubbed_env() if env is None else env,
            time_limit=time_limit,
            stdout_sink=EmittingSink(emit_stdout, buffer),
            stderr_sink=EmittingSink(emit_stderr, buffer, prefix=STDERR_PREFIX),
            standby=standby,
        )
    except OSError as exc:
        return ToolResult(f"bash: could not start the shell in {cwd}: {exc.strerror or exc}", is_error=True)
    result = format_result(buffer.text(), outcome, time_limit, truncated=buffer.dropped_chars > 0)
    if denial and outcome.returncode not in (0, None) and not outcome.timed_out:
        result.sandbox_denial = denial[0]
    return result


PREPARERS: dict[str, Preparer] = {"bash": prepare_bash}
