"""The math tool: Python with sympy/numpy/scipy in a sandboxed child process (math_sandbox.py).

The parent side: a fresh temp dir as cwd (removed afterwards), the environment scrubbed of secrets,
single-threaded BLAS, its own process group with the wall-clock timeout ``config.tools.timeout``,
output bounded. The child sets CPU/memory/file-size/process limits and an audit hook (see
math_sandbox.py). Needs approval (the spec: "confirmation required despite being sandboxed").
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..core.child_env import sandbox_policy, scrubbed_env
from ..core.tools import Preparer, ToolContext, error_item
from ..core.truncate import HeadTailBuffer
from ..core.types import ExecContext, PreparedItem, ToolResult
from ..sandbox import SandboxPolicy, plan
from .math_sandbox import CPU_SECONDS, EXIT_REFUSED
from .proc_group import BufferSink, RunOutcome, run_process

# Run by path with -I: isolated mode also keeps this directory off sys.path (else this very module,
# math.py, would shadow the standard library's math in the child).
SANDBOX_SCRIPT = Path(__file__).with_name("math_sandbox.py")
STDERR_LIMIT = 16 * 1024
HEADER_MAX = 80


def _sandbox_env(tmpdir: str) -> dict[str, str]:
    single_thread = {k: "1" for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    return scrubbed_env({**single_thread, "HOME": tmpdir, "TMPDIR": tmpdir, "MPLCONFIGDIR": tmpdir})


def _describe_failure(outcome: RunOutcome, time_limit: int) -> str | None:
    if outcome.timed_out:
        return f"[math: timed out after {time_limit} s (wall clock); the computation was killed]"
    code = outcome.returncode
    if code == -signal.SIGXCPU:
        return f"[math: CPU time limit of {CPU_SECONDS} s exceeded; the computation was killed]"
    if code == -signal.SIGKILL:
        return f"[math: killed (SIGKILL): over the CPU ({CPU_SECONDS} s) or memory limit]"
    if code is not None and code < 0:
        return f"[math: killed by {outcome.signal_name}]"
    if code == EXIT_REFUSED:
        return "[math: refused by the sandbox (no network, no processes, no writes outside its temp dir)]"
    return None


async def run_math(code: str, time_limit: int, limit: int, policy: SandboxPolicy | None = None) -> ToolResult:
    tmpdir = await asyncio.to_thread(tempfile.mkdtemp, prefix="turnstone-math-")
    out, err = HeadTailBuffer(max(limit - STDERR_LIMIT - 1024, 1024)), HeadTailBuffer(STDERR_LIMIT)
    argv = [sys.executable, "-I", "-B", str(SANDBOX_SCRIPT), tmpdir]
    if policy is not None:
        # its own process in the OS sandbox: only the temp dir writable, never any network
        math_policy = SandboxPolicy(policy.mode, network=False)
        # the interpreter, its libraries and the runner script stay visible even when they live under /tmp
        # (a checkout or venv in /tmp would otherwise be hidden by the private /tmp)
        own_files = [
            SANDBOX_SCRIPT.parent,
            Path(sys.executable).parent,
            Path(sys.prefix),
            Path(sys.base_prefix),
        ]
        own_files += [Path(entry) for entry in sys.path if entry]
        run_plan = await asyncio.to_thread(plan, math_policy, argv, cwd=Path(tmpdir), readable=own_files)
        argv = run_plan.argv
    try:
        outcome = await run_process(
            argv,
            cwd=tmpdir,
            env=_sandbox_env(tmpdir),
            time_limit=time_limit,
            stdout_sink=BufferSink(out),
            stderr_sink=BufferSink(err),
            stdin_data=code.encode("utf-8", "replace"),
        )
    except OSError as exc:
        return ToolResult(f"math: cannot start Python: {exc.strerror or exc}", is_error=True)
    finally:
        await asyncio.to_thread(shutil.rmtree, tmpdir, True)
    stdout, stderr = out.text(), err.text()
    parts = [stdout.rstrip("\n")] if stdout.strip() else []
    if stderr.strip():
        parts.append(stderr.rstrip("\n"))
    failure = _describe_failure(outcome, time_limit)
    if failure:
        parts.append(failure)
    is_error = outcome.timed_out or outcome.returncode != 0
    if not parts:
        parts.append("(no output: use print() to show results)")
    return ToolResult("\n".join(parts), is_error=is_error)


async def prepare_math(ctx: ToolContext, call_id: str, args: dict[str, Any]) -> PreparedItem:
    code = args.get("code")
    if not isinstance(code, str) or not code.strip():
        return error_item(call_id, "math", args, "math: 'code' must be non-empty Python source")
    first = code.strip().splitlines()[0]
    if len(first) > HEADER_MAX:
        first = first[: HEADER_MAX - 1] + "…"
    time_limit = ctx.config.tools.timeout
    limit = ctx.config.tools.truncation
    policy = sandbox_policy(ctx.config)

    async def execute(exec_ctx: ExecContext) -> ToolResult:
        return await run_math(code, time_limit, limit, policy)

    shown = await asyncio.to_thread(plan, SandboxPolicy(policy.mode), ["true"], cwd=ctx.cwd)
    note = (
        "sandboxed: its own process, read-only system, writable only its temp dir, no network"
        if shown.sandboxed
        else shown.note
    )
    return PreparedItem(
        call_id,
        "math",
        args,
        f"math: {first}",
        preview=code,
        execute=execute,
        sandboxed=shown.sandboxed,
        sandbox_note=note,
    )


PREPARERS: dict[str, Preparer] = {"math": prepare_math}
