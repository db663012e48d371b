"""A tracer loaded into a benched ``turnstone-tui`` by ``bench/gap_trace.py`` (through PYTHONPATH):
what the app's event loop did, to explain the gaps in its output. Not part of the app.

Active only when ``TURNSTONE_GAP_TRACE`` names a directory and the program is the console script.
It records, on ``time.monotonic()`` (one clock for every process of the machine):

- every step of the event loop (a callback, or one step of a task) that took over 4 ms, with the
  task's coroutine or the callback's name;
- every garbage collection (its generation);
- a sample of the main thread's stack every 2 ms (from a thread of its own).

and writes them as JSON to ``<dir>/<pid>.json`` when the program exits. It slows the app (the
sampler takes the GIL 500 times a second, every loop step is timed): for finding what a gap is
made of, not for figures.
"""

import os
import sys

_DIR = os.environ.get("TURNSTONE_GAP_TRACE")
if _DIR and sys.argv and os.path.basename(sys.argv[0]) == "turnstone-tui":
    import asyncio.events
    import atexit
    import gc
    import json
    import threading
    import time

    _clock = time.monotonic
    _steps: list[tuple[float, float, str]] = []
    _gcs: list[tuple[float, float, int]] = []
    _samples: list[tuple[float, list[str]]] = []
    _gc_started = [0.0]

    def _on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            _gc_started[0] = _clock()
        else:
            _gcs.append((_gc_started[0], _clock(), info.get("generation", -1)))

    gc.callbacks.append(_on_gc)

    def _what(handle: asyncio.events.Handle) -> str:
        callback = handle._callback
        owner = getattr(callback, "__self__", None)
        if isinstance(owner, asyncio.Task):
            coro = owner.get_coro()
            return "task " + getattr(coro, "__qualname__", repr(coro))
        return getattr(callback, "__qualname__", repr(callback))[:160]

    _run = asyncio.events.Handle._run

    def _timed_run(self: asyncio.events.Handle) -> None:
        started = _clock()
        _run(self)
        ended = _clock()
        if ended - started > 0.004:
            try:
                what = _what(self)
            except Exception as exc:  # noqa: BLE001 - a tracer must not break the loop
                what = f"? {exc!r}"
            _steps.append((started, ended, what))

    asyncio.events.Handle._run = _timed_run  # type: ignore[method-assign]
    _main = threading.get_ident()

    def _sample() -> None:
        while True:
            time.sleep(0.002)
            frame = sys._current_frames().get(_main)
            stack = []
            while frame is not None and len(stack) < 40:
                code = frame.f_code
                stack.append(f"{os.path.basename(code.co_filename)}:{code.co_name}")
                frame = frame.f_back
            _samples.append((_clock(), stack))

    threading.Thread(target=_sample, name="gap-trace", daemon=True).start()

    def _dump() -> None:
        path = os.path.join(_DIR, f"{os.getpid()}.json")
        with open(path, "w") as out:
            json.dump({"steps": _steps, "gcs": _gcs, "samples": _samples[-100_000:]}, out)

    atexit.register(_dump)
