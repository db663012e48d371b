"""notify: webhook delivery with retries, the per-turn limit, and the terminal bell fallback."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.executors.local_http import LocalServer, Request, Response, make_ctx, run_item
from turnstone_tui.executors.notify import MAX_MESSAGE_CHARS, PREPARERS

pytestmark = pytest.mark.timeout(30)


class Flaky:
    """Fails ``failures`` times with 503, then answers 200."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.times: list[float] = []

    def __call__(self, req: Request) -> Response:
        self.times.append(time.monotonic())
        if len(self.times) <= self.failures:
            return Response(503, "busy")
        return Response(200, '{"ok": true}', {"Content-Type": "application/json"})


async def notify(ctx, **args):
    item = await PREPARERS["notify"](ctx, "n1", args)
    return item, (None if item.error else await run_item(item))


async def test_webhook_fails_twice_then_delivers_with_retry_delays(tmp_path: Path) -> None:
    hook = Flaky(failures=2)
    with LocalServer({"/hook": hook}) as server:
        ctx = make_ctx(tmp_path, notify_retry_delays=(0.1, 0.3))
        ctx.config.notify.url = f"{server.url}/hook"
        ctx.config.notify.headers = {"X-Token": "abc"}
        item, result = await notify(
            ctx, message="build finished", title="CI", channel_type="discord", channel_id="42"
        )
    assert not item.needs_approval
    assert result is not None and not result.is_error, result.text
    assert "attempt 3" in result.text
    assert len(server.requests) == 3
    body = server.requests[-1].json()
    assert body == {
        "message": "build finished",
        "title": "CI",
        "username": "",
        "channel_type": "discord",
        "channel_id": "42",
    }
    assert server.requests[-1].headers["x-token"] == "abc"
    gaps = [b - a for a, b in zip(hook.times, hook.times[1:], strict=False)]
    assert gaps[0] >= 0.09 and gaps[1] >= 0.28  # waited the configured delays
    assert ctx.notify_sent_this_turn == 1


async def test_webhook_that_always_fails_reports_and_does_not_count(tmp_path: Path) -> None:
    with LocalServer({"/hook": Flaky(failures=99)}) as server:
        ctx = make_ctx(tmp_path, notify_retry_delays=(0.01, 0.01))
        ctx.config.notify.url = f"{server.url}/hook"
        _, result = await notify(ctx, message="hello")
    assert result is not None and result.is_error and "HTTP 503" in result.text
    assert len(server.requests) == 3
    assert ctx.notify_sent_this_turn == 0


async def test_at_most_five_per_turn_even_when_called_concurrently(tmp_path: Path) -> None:
    with LocalServer({"/hook": Flaky(failures=0)}) as server:
        ctx = make_ctx(tmp_path, notify_retry_delays=(0.01, 0.01))
        ctx.config.notify.url = f"{server.url}/hook"
        items = [await PREPARERS["notify"](ctx, f"n{i}", {"message": f"m{i}"}) for i in range(7)]
        results = await asyncio.gather(*(run_item(i) for i in items))
        assert sum(not r.is_error for r in results) == 5
        refused = [r for r in results if r.is_error]
        assert len(refused) == 2 and all("at most 5" in r.text for r in refused)
        assert len(server.requests) == 5
        # The session resets the counter at the start of the next turn.
        ctx.notify_sent_this_turn = 0
        _, again = await notify(ctx, message="next turn")
        assert again is not None and not again.is_error


async def test_failures_do_not_use_up_the_turn_limit(tmp_path: Path) -> None:
    hook = Flaky(failures=3)  # the first notification fails all 3 attempts
    with LocalServer({"/hook": hook}) as server:
        ctx = make_ctx(tmp_path, notify_retry_delays=(0.01, 0.01))
        ctx.config.notify.url = f"{server.url}/hook"
        _, first = await notify(ctx, message="x")
        assert first is not None and first.is_error
        results = [(await notify(ctx, message=f"m{i}"))[1] for i in range(5)]
    assert all(r is not None and not r.is_error for r in results)


async def test_without_webhook_rings_the_bell_in_the_ui(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    _, result = await notify(ctx, message="tests are green", title="CI")
    assert result is not None and not result.is_error and "bell" in result.text
    assert ctx.ui.notifications == ["CI: tests are green"]
    assert ctx.notify_sent_this_turn == 1


async def test_bad_arguments(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    too_long = await PREPARERS["notify"](ctx, "n", {"message": "x" * (MAX_MESSAGE_CHARS + 1)})
    assert too_long.error and "2000" in too_long.error
    assert (await PREPARERS["notify"](ctx, "n", {"message": "  "})).error
    both = await PREPARERS["notify"](ctx, "n", {"message": "x", "username": "a", "channel_id": "1"})
    assert both.error and "not both" in both.error
    assert (await PREPARERS["notify"](ctx, "n", {"message": "x", "title": 5})).error
    ok = await PREPARERS["notify"](ctx, "n", {"message": "x" * MAX_MESSAGE_CHARS})
    assert ok.error is None
