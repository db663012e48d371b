"""Debug mode reports every stall of the event loop over 100 ms, naming the coroutine."""

from __future__ import annotations

import asyncio
import time

from turnstone_tui.core.loop_watchdog import describe_stall, enable_stall_reports


async def hog_the_loop() -> None:
    await asyncio.sleep(0)
    time.sleep(0.3)  # noqa: ASYNC251 - blocks the loop, as a synchronous guard or scan would


async def polite() -> None:
    for _ in range(5):
        await asyncio.sleep(0.01)


def test_a_blocking_coroutine_is_reported_with_its_name() -> None:
    reports: list[str] = []

    async def main() -> None:
        undo = enable_stall_reports(asyncio.get_running_loop(), reports.append)
        try:
            await asyncio.gather(asyncio.create_task(hog_the_loop()), asyncio.create_task(polite()))
        finally:
            undo()

    asyncio.run(main())
    stalls = [r for r in reports if "hog_the_loop" in r]
    assert stalls, reports
    seconds = float(stalls[0].split("loop stall: ")[1].split(" s in")[0])
    assert seconds >= 0.25
    assert not any("polite" in r for r in reports)


def test_describe_stall_ignores_other_records() -> None:
    assert (
        describe_stall("Executing <Handle cb()> took 0.150 seconds") == "loop stall: 0.150 s in <Handle cb()>"
    )
    assert describe_stall("Task was destroyed but it is pending!") is None
