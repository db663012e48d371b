"""The background task that polls due watches and queues their results for their sessions.

Every ``check_interval`` seconds (or at once after ``wake()``) it loads the active watches whose
``next_run`` has come, runs each command (``bash -c`` as the bash tool does: in the OS sandbox when it
can run, in its own process group, environment from the allowlist, stdin closed, a time limit, output
kept to 64 KB), and then:

- with ``stop_on``: evaluates it (watch_expr); true -> fire;
- without: fires when the output differs from the previous poll (the first poll is the baseline);
- after ``max_polls`` polls without firing: fires with a "gave up" message.

Firing stops the watch and queues its result in one commit (``watch_results``: a crash can neither
fire it twice nor lose the result), then calls ``notify(session_id, text)``. Delivering is the
session's business: at its next idle moment, or when it is resumed (see ChatSession).

Which watches a process polls: those of the sessions it owns (``owns``: open in this process);
with ``adopt_unowned`` also those of sessions no process has open, while it is the database's
"watch host" (one process at a time; their results wait in the inbox). A session open in another
process is never polled here. ``owns=None`` polls every watch (a single-process test set-up).

Watches survive restarts: they live in SQLite. A watch whose ``next_run`` passed while the app was
closed is simply due, so it is polled once right away and then follows its interval again (no
burst of catch-up polls).

A ``stop_on`` that raises (say ``data["state"]`` while the command printed an error page) counts
as "not met"; after 3 failing polls in a row the watch fires with the error so the model can fix it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.truncate import HeadTailBuffer
from ..sandbox import SandboxPolicy, child_env, plan
from .proc_group import BufferSink, run_process
from .watch_eval import DEFAULT_BUDGET, WatchBudgetError, evaluate_in_child
from .watch_expr import WatchExprError, compile_condition, poll_variables

if TYPE_CHECKING:
    from ..storage.db import Storage

log = logging.getLogger(__name__)

OUTPUT_CAP = 64 * 1024
COMMAND_TIMEOUT = 120.0
MAX_EXPR_ERRORS = 3
MAX_CONCURRENT_POLLS = 4

Notify = Callable[[str, str], Awaitable[None]]
"""``notify(session_id, text)``: a result of that session was queued."""


class WatchRunner:
    def __init__(
        self,
        storage: Storage,
        notify: Notify,
        check_interval: float = 15.0,
        clock: Callable[[], float] = time.time,
        *,
        command_timeout: float = COMMAND_TIMEOUT,
        eval_budget: float = DEFAULT_BUDGET,
        default_cwd: Path | None = None,
        sandbox: SandboxPolicy | None = None,
        env_passthrough: tuple[str, ...] = (),
        owns: Callable[[str], bool] | None = None,
        adopt_unowned: bool = False,
    ) -> None:
        # watch commands run as the bash tool runs them: bash, in the OS sandbox (when it can run)
        self.sandbox = sandbox or SandboxPolicy()
        self.env_passthrough = env_passthrough
        self.storage = storage
        self.notify = notify
        self.owns = owns
        self.adopt_unowned = adopt_unowned
        self._host = storage.watch_host_lock() if owns is not None and adopt_unowned else None
        self.check_interval = check_interval
        self.clock = clock
        self.command_timeout = command_timeout
        self.eval_budget = eval_budget
        self.default_cwd = default_cwd or Path.home()
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._expr_errors: dict[str, int] = {}
        self._limit = asyncio.Semaphore(MAX_CONCURRENT_POLLS)
        self._in_progress: set[str] = set()

    # --- lifecycle ----------------------------------------------------------------------
    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._loop(), name="watch-runner")

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._host is not None:
            self._host.release()

    def wake(self) -> None:
        """Check for due watches now (after a watch was created)."""
        self._wake.set()

    async def _loop(self) -> None:
        while True:
            try:
                await self.run_once()
            except asyncio.CancelledError:
                raise
            except Exception:  # a broken poll must not stop the runner
                log.exception("watch runner pass failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.check_interval)
            self._wake.clear()

    # --- one pass -----------------------------------------------------------------------
    async def run_once(self) -> list[str]:
        """Poll every due watch once; returns the ids of the watches that fired."""
        now = self.clock()
        due: list[tuple[dict[str, Any], bool]] = []
        for w in await self.storage.list_watches(None, active_only=True):
            if w["next_run"] > now or w["id"] in self._in_progress:
                continue
            mine = self._ownership(w["session_id"])
            if mine is not None:
                due.append((w, mine == "adopted"))
        if not due:
            return []
        results = await asyncio.gather(*(self._poll_guarded(w, adopted) for w, adopted in due))
        return [w["id"] for (w, _), fired in zip(due, results, strict=True) if fired]

    def _ownership(self, session_id: str) -> str | None:
        """ "own", "adopted" (nobody has the session open and this process is the watch host), or
        None: not this process's to poll."""
        if self.owns is None or self.owns(session_id):
            return "own"
        if self._host is None or not self._host.try_acquire():
            return None
        try:
            elsewhere = self.storage.held_elsewhere(session_id)
        except OSError:
            return None
        return None if elsewhere else "adopted"

    async def _poll_guarded(self, watch: dict[str, Any], adopted: bool = False) -> bool:
        self._in_progress.add(watch["id"])
        try:
            async with self._limit:
                return await self.poll(watch, adopted=adopted)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("watch %s poll failed", watch.get("name"))
            return False
        finally:
            self._in_progress.discard(watch["id"])

    async def _cwd_for(self, session_id: str) -> Path:
        session = await self.storage.get_session(session_id)
        if session and session.get("cwd"):
            cwd = Path(session["cwd"])
            if await asyncio.to_thread(cwd.is_dir):
                return cwd
        return self.default_cwd

    async def run_command(self, command: str, cwd: Path) -> tuple[str, int, str | None]:
        """(output capped at 64 KB, exit code, problem) of one poll."""
        out = HeadTailBuffer(OUTPUT_CAP)
        err = HeadTailBuffer(OUTPUT_CAP // 4)
        try:
            run_plan = await asyncio.to_thread(plan, self.sandbox, ["bash", "-c", command], cwd=cwd)
            outcome = await run_process(
                run_plan.argv,
                cwd=cwd,
                env=child_env(passthrough=self.env_passthrough),
                time_limit=self.command_timeout,
                stdout_sink=BufferSink(out),
                stderr_sink=BufferSink(err),
            )
        except OSError as exc:
            return "", 127, f"cannot start the command: {exc}"
        output = out.text()
        if err.total_chars:
            output = f"{output}{'' if not output or output.endswith(chr(10)) else chr(10)}{err.text()}"
        if len(output) > OUTPUT_CAP:
            output = output[:OUTPUT_CAP]
        problem = f"timed out after {self.command_timeout:g} s" if outcome.timed_out else None
        code = outcome.returncode if outcome.returncode is not None else -1
        return output, code, problem

    async def _evaluate(
        self, wid: str, name: str, stop_on: str, variables: dict[str, Any], exit_code: int, output: str
    ) -> bool | str:
        """True/False, or the text that stops the watch (over budget, or failing again and again).

        The evaluation runs in a child process with a CPU budget: an expression can never hold
        the event loop (the app, headless runs, every session on this database).
        """
        try:
            met = await evaluate_in_child(stop_on, variables, self.eval_budget)
        except WatchBudgetError as exc:
            self._expr_errors.pop(wid, None)
            return (
                f"[watch {name}] stopped: {exc}. Create the watch again with a cheaper condition. "
                f"Last output (exit code {exit_code}):\n{output}"
            )
        except WatchExprError as exc:
            errors = self._expr_errors.get(wid, 0) + 1
            self._expr_errors[wid] = errors
            if errors >= MAX_EXPR_ERRORS:
                return (
                    f"[watch {name}] stopped: stop_on `{stop_on}` failed {errors} polls in a row ({exc}). "
                    f"Last output (exit code {exit_code}):\n{output}"
                )
            return False
        except OSError as exc:
            return f"[watch {name}] stopped: stop_on could not be evaluated ({exc})"
        self._expr_errors.pop(wid, None)
        return met

    async def poll(self, watch: dict[str, Any], *, adopted: bool = False) -> bool:
        """Run one poll of ``watch``; True when it fired (and was cancelled).

        ``adopted``: the session is open nowhere; its record is written holding the session's
        lock, and only if no other process polled it meanwhile."""
        wid, name = watch["id"], watch["name"]
        output, exit_code, problem = await self.run_command(
            watch["command"], await self._cwd_for(watch["session_id"])
        )
        polls = watch["polls"] + 1
        prev = watch["prev_output"]
        variables = poll_variables(output, exit_code, prev)
        fired_text: str | None = None
        stop_on = watch.get("stop_on")
        if stop_on:
            try:
                compile_condition(stop_on)  # static checks first: a stored expression may predate them
            except WatchExprError as exc:
                met = False
                fired_text = (
                    f"[watch {name}] stopped: stop_on `{stop_on}` is refused ({exc}). "
                    f"Create the watch again with a simpler condition. Last output (exit code {exit_code}):\n"
                    f"{output}"
                )
            else:
                met = await self._evaluate(wid, name, stop_on, variables, exit_code, output)
                if isinstance(met, str):
                    fired_text, met = met, False
            if met:
                fired_text = (
                    f"[watch {name}] condition met (`{stop_on}`) after {polls} poll(s) of `{watch['command']}` "
                    f"(exit code {exit_code}):\n{output}"
                )
        elif prev is not None and output != prev:
            fired_text = (
                f"[watch {name}] output changed after {polls} poll(s) of `{watch['command']}` "
                f"(exit code {exit_code}):\n{output}"
            )
        if fired_text is None and polls >= watch["max_polls"]:
            fired_text = (
                f"[watch {name}] gave up after max_polls ({watch['max_polls']}) without "
                f"{'the condition being met' if stop_on else 'a change'}. Last output (exit code {exit_code}):\n"
                f"{output}"
            )
        if fired_text is not None and problem:
            fired_text += f"\n({problem})"
        if adopted:
            try:
                lock = self.storage.lock_session(watch["session_id"])
            except ValueError:  # someone resumed the session while the command ran: theirs now
                return False
            try:
                return await self._record(watch, polls, output, fired_text, check_polls=True)
            finally:
                lock.release()
        return await self._record(watch, polls, output, fired_text)

    async def _record(
        self,
        watch: dict[str, Any],
        polls: int,
        output: str,
        fired_text: str | None,
        *,
        check_polls: bool = False,
    ) -> bool:
        wid = watch["id"]
        now = self.clock()
        current = next(
            (
                w
                for w in await self.storage.list_watches(watch["session_id"], active_only=True)
                if w["id"] == wid
            ),
            None,
        )
        if current is None:
            return False  # cancelled while this poll ran: report nothing
        if check_polls and current["polls"] != watch["polls"]:
            return False  # another process polled it meanwhile: its record stands
        if fired_text is None:
            await self.storage.update_watch(
                wid, polls=polls, prev_output=output, next_run=now + watch["poll_every"]
            )
            return False
        self._expr_errors.pop(wid, None)
        await self.storage.fire_watch(watch, fired_text, polls=polls, prev_output=output, next_run=now)
        try:
            await self.notify(watch["session_id"], fired_text)
        except Exception:
            log.exception("watch %s: announcing the result failed", watch["name"])
        return True
