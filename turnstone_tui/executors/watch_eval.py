"""Evaluate a watch's ``stop_on`` in a child process with a CPU budget, off the event loop.

The AST whitelist (watch_expr) bounds what an expression may say, not how long it may take:
``any(x in output for x in output)`` over 64 KB of output is billions of steps. So the check
runs in its own Python process: the budget is CPU seconds measured in the child (start-up on a
busy machine does not count), enforced by a profiling timer and, as a backstop, RLIMIT_CPU and
an address-space limit; the parent kills the child if it outlives a generous wall-clock limit.

Run as ``python -m turnstone_tui.executors.watch_eval``: reads ``{"source", "variables",
"budget"}`` as JSON on stdin, writes ``{"value": bool}`` or ``{"error": str, "budget": bool}``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from .watch_expr import WatchExprError

DEFAULT_BUDGET = 2.0  # CPU seconds for one evaluation
MEMORY_LIMIT = 1024 * 1024 * 1024  # bytes of address space for the child
STARTUP_ALLOWANCE = 60.0  # wall-clock seconds on top of the budget (a loaded machine starts slowly)


_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


class WatchBudgetError(WatchExprError):
    """The expression used up its evaluation budget."""


async def evaluate_in_child(source: str, variables: dict[str, Any], budget: float = DEFAULT_BUDGET) -> bool:
    """The value of ``source`` for ``variables``; raises WatchExprError / WatchBudgetError."""
    payload = json.dumps({"source": source, "variables": variables, "budget": budget}).encode()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": _PACKAGE_ROOT}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "turnstone_tui.executors.watch_eval",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd="/",
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(payload), budget + STARTUP_ALLOWANCE)
    except (TimeoutError, asyncio.CancelledError):
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
        raise
    try:
        answer = json.loads(out or b"{}")
    except ValueError:
        answer = {}
    if "value" in answer:
        return bool(answer["value"])
    if answer.get("budget") or proc.returncode in (-9, -24):  # SIGKILL / SIGXCPU: over the limits
        raise WatchBudgetError(f"stop_on used up its evaluation budget ({budget:g} s of CPU) and was stopped")
    detail = answer.get("error") or (err.decode(errors="replace").strip().splitlines() or ["no answer"])[-1]
    raise WatchExprError(str(detail)[:300])


def _child() -> int:
    import resource
    import signal

    request = json.loads(sys.stdin.read())
    budget = float(request.get("budget") or DEFAULT_BUDGET)

    class _OverBudget(BaseException):
        pass

    def over_budget(_signum: int, _frame: object) -> None:
        raise _OverBudget

    used = resource.getrusage(resource.RUSAGE_SELF)
    spent = used.ru_utime + used.ru_stime
    hard_cpu = int(spent + budget) + 2
    resource.setrlimit(resource.RLIMIT_CPU, (hard_cpu, hard_cpu))
    try:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    except (ValueError, OSError):
        pass
    from .watch_expr import compile_condition

    signal.signal(signal.SIGPROF, over_budget)
    try:
        condition = compile_condition(request["source"])
        signal.setitimer(signal.ITIMER_PROF, budget)
        value = condition.evaluate(request["variables"])
        signal.setitimer(signal.ITIMER_PROF, 0)
        answer: dict[str, Any] = {"value": bool(value)}
    except _OverBudget:
        answer = {"error": "over budget", "budget": True}
    except MemoryError:
        answer = {"error": "stop_on ran out of memory", "budget": True}
    except WatchExprError as exc:
        answer = {"error": str(exc)}
    sys.stdout.write(json.dumps(answer))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(_child())
