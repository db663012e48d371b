"""recall: FTS5 search over stored conversations."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.executors.local_http import make_ctx, run_item
from turnstone_tui.executors.recall import PREPARERS
from turnstone_tui.storage.db import Storage

pytestmark = pytest.mark.timeout(30)


async def test_finds_messages_across_sessions_with_names_and_times(tmp_path: Path) -> None:
    storage = await Storage.open(tmp_path / "t.db")
    try:
        await storage.create_session("alpha1", name="deploy work")
        await storage.create_session("beta22", name="")
        await storage.append_message(
            "alpha1", {"role": "user", "content": "the staging database password rotates"}
        )
        await storage.append_message(
            "alpha1",
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"command": "kubectl rollout"}'},
                    }
                ],
            },
        )
        await storage.append_message(
            "beta22",
            {"role": "tool", "tool_call_id": "c9", "name": "bash", "content": "rollout finished on staging"},
        )
        await storage.append_message("beta22", {"role": "user", "content": "unrelated chatter"})
        ctx = make_ctx(tmp_path, storage=storage, session_id="beta22")
        item = await PREPARERS["recall"](ctx, "r1", {"query": "staging"})
        assert not item.needs_approval
        result = await run_item(item)
        assert not result.is_error
        lines = result.text.splitlines()
        assert lines[0].startswith("2 matches for 'staging'")
        joined = "\n".join(lines)
        assert "session 'deploy work' (alpha1)" in joined
        assert "beta22, this session" in joined and "tool bash" in joined
        assert "[staging]" in joined  # the snippet marks the hit
        assert "unrelated" not in joined
        tool_calls = await run_item(await PREPARERS["recall"](ctx, "r2", {"query": "kubectl rollout"}))
        assert "alpha1" in tool_calls.text and "assistant" in tool_calls.text
        none = await run_item(await PREPARERS["recall"](ctx, "r3", {"query": "zebra"}))
        assert "No past messages" in none.text
        # FTS syntax in the query is treated as words, not as an injection into the MATCH expression.
        odd = await run_item(await PREPARERS["recall"](ctx, "r4", {"query": 'staging" OR "x* NEAR('}))
        assert not odd.is_error
        limited = await run_item(await PREPARERS["recall"](ctx, "r5", {"query": "staging", "limit": 1}))
        assert limited.text.startswith("1 match for")
    finally:
        await storage.close()


async def test_bad_arguments(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    assert (await PREPARERS["recall"](ctx, "r", {"query": "x"})).error  # no storage
    storage = await Storage.open(tmp_path / "t.db")
    try:
        ctx = make_ctx(tmp_path, storage=storage)
        assert (await PREPARERS["recall"](ctx, "r", {"query": " "})).error
        assert (await PREPARERS["recall"](ctx, "r", {"query": "x", "limit": 0})).error
    finally:
        await storage.close()


async def test_best_ranked_hits_come_first_newest_among_equals(tmp_path: Path) -> None:
    """bm25 order: a short message about the word beats a long one that mentions it once, wherever
    they were stored; equal scores list the newest first; the snippet marks the word in the part
    of a long message where it occurs."""
    storage = await Storage.open(tmp_path / "t.db")
    try:
        await storage.create_session("s1")
        filler = " ".join(f"word{i}" for i in range(300))
        ids = await storage.append_messages(
            "s1",
            [
                {"role": "user", "content": f"{filler} the kubernetes cluster {filler}"},  # weak
                {"role": "user", "content": "kubernetes kubernetes kubernetes upgrade"},  # strongest
                {"role": "assistant", "content": "nothing relevant here"},
                {"role": "user", "content": "restart kubernetes now"},  # equal to the next
                {"role": "user", "content": "restart kubernetes now"},
            ],
        )
        hits = await storage.search_messages("kubernetes", limit=10)
        assert [h["id"] for h in hits] == [ids[1], ids[4], ids[3], ids[0]]
        assert [h["rank"] for h in hits] == sorted(h["rank"] for h in hits)
        long_snippet = hits[-1]["snippet"]
        assert "[kubernetes]" in long_snippet and long_snippet.startswith(" … ")
        assert long_snippet.endswith(" … ") and len(long_snippet) < 200
        assert hits[0]["snippet"] == "[kubernetes] [kubernetes] [kubernetes] upgrade"
        top = await storage.search_messages("kubernetes", limit=1)
        assert [h["id"] for h in top] == [ids[1]]
        assert await storage.search_messages("   ") == []
    finally:
        await storage.close()


async def test_many_matches_still_come_back_best_first(tmp_path: Path) -> None:
    """More matches than the ranked candidate set: hits are still ordered by score, and a strong
    recent match is first."""
    from turnstone_tui.storage.db import SEARCH_CANDIDATES

    storage = await Storage.open(tmp_path / "t.db")
    try:
        await storage.create_session("s1")
        padding = " ".join(f"pad{i}" for i in range(40))
        weak = [{"role": "user", "content": f"deploy {padding}"} for _ in range(SEARCH_CANDIDATES + 200)]
        await storage.append_messages("s1", weak)
        (strong,) = await storage.append_messages("s1", [{"role": "user", "content": "deploy deploy"}])
        await storage.append_messages("s1", weak[:50])
        hits = await storage.search_messages("deploy", limit=20)
        assert len(hits) == 20
        assert hits[0]["id"] == strong
        assert [h["rank"] for h in hits] == sorted(h["rank"] for h in hits)
        assert all("[deploy]" in h["snippet"] for h in hits)
    finally:
        await storage.close()


async def test_a_huge_stored_result_gives_a_short_snippet_around_the_match(tmp_path: Path) -> None:
    storage = await Storage.open(tmp_path / "t.db")
    try:
        await storage.create_session("s1")
        output = "line of build output\n" * 12_000 + "FATAL: linker failed on libfoo\n" + "tail\n" * 100
        await storage.append_message(
            "s1", {"role": "tool", "tool_call_id": "c1", "name": "bash", "content": output}
        )
        (hit,) = await storage.search_messages("linker")
        assert "[linker] failed on libfoo" in hit["snippet"]
        assert hit["snippet"].startswith(" … ") and hit["snippet"].endswith(" … ")
        assert len(hit["snippet"]) < 200
    finally:
        await storage.close()
