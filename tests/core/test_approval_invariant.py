"""Property: the calls that run are exactly the calls that were approved (and not skipped).

Random batches of calls that need approval (bash, write_file) and calls that do not (read_file),
answered with random decisions: approve / deny / approve-and-always / cancel, per-call skips,
per-tool "always" toggles, an ``--allow`` set and ``--skip-permissions``. Each example drives a real
ChatSession (OpenAI SDK -> scripted model server, real tools, real SQLite) for two batches, so an
"always" granted in the first batch is seen to auto-approve the second.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.helpers.model_server import Reply, ScriptedModelServer
from tests.helpers.recording_ui import RecordingUI
from turnstone_tui.config import Config
from turnstone_tui.core.types import ApprovalDecision, PreparedItem
from turnstone_tui.providers.factory import create_provider
from turnstone_tui.runtime import build_session

pytestmark = pytest.mark.timeout(600)

NEEDS_APPROVAL = ("bash", "write_file")
KINDS = ("bash", "write_file", "read_file")


@dataclass(frozen=True)
class Answer:
    """What the user does in the approval modal for one batch."""

    key: str  # "y" | "n" | "a" | "esc"
    skipped: frozenset[int]  # row indexes marked with x
    toggled: frozenset[str]  # tools whose "always" box was ticked with space

    def decide(self, items: list[PreparedItem]) -> ApprovalDecision:
        """The decision the approval modal builds for this key press (see app/screens/approval.py)."""
        if self.key in ("n", "esc"):
            return ApprovalDecision(approved=False)
        skipped = {items[i].call_id for i in self.skipped if i < len(items)}
        if len(skipped) == len(items):
            return ApprovalDecision(approved=False)
        kept = {item.func_name for item in items if item.call_id not in skipped}
        always = {item.func_name for item in items} if self.key == "a" else set(self.toggled)
        return ApprovalDecision(
            approved=True,
            always=frozenset(always & kept),
            per_call={call_id: False for call_id in skipped},
        )


answers = st.builds(
    Answer,
    key=st.sampled_from(["y", "a", "y", "a", "n", "esc"]),
    skipped=st.frozensets(st.integers(0, 3), max_size=2),
    toggled=st.frozensets(st.sampled_from(NEEDS_APPROVAL)),
)
# bash twice as likely: the interesting cases have several calls of one tool in a batch
batches = st.lists(st.sampled_from(("bash", *KINDS)), min_size=1, max_size=4)


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedModelServer]:
    srv = ScriptedModelServer().start()
    try:
        yield srv
    finally:
        srv.stop()


def _call(kind: str, index: int, batch: int, root: Path) -> tuple[str, dict, str]:
    call_id = f"call_{batch}_{index}"
    target = root / f"{call_id}.txt"
    if kind == "bash":
        return ("bash", {"command": f"echo ran {call_id}"}, call_id)
    if kind == "write_file":
        return ("write_file", {"path": str(target), "content": call_id}, call_id)
    (root / "readme.txt").write_text("hello\n")
    return ("read_file", {"path": str(root / "readme.txt")}, call_id)


async def _run(
    server: ScriptedModelServer,
    plan: list[tuple[list[str], Answer]],
    allow: frozenset[str],
    skip_permissions: bool,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cfg = Config()
        cfg.model.provider = "openai"
        cfg.api.base_url = server.openai_base_url
        cfg.api.api_key = "test-key"
        cfg.model.name = "test-model"
        cfg.db_path = str(root / "t.db")

        asked_answers: list[tuple[list[PreparedItem], ApprovalDecision]] = []

        def answer_with(answer: Answer):
            def decide(items: list[PreparedItem]) -> ApprovalDecision:
                decision = answer.decide(items)
                asked_answers.append((list(items), decision))
                return decision

            return decide

        ui = RecordingUI(approvals=[answer_with(a) for _, a in plan])
        session = build_session(
            cfg,
            create_provider(cfg),
            ui,
            cwd=root,
            allow=set(allow),
            skip_permissions=skip_permissions,
        )
        await session.start()
        try:
            granted: set[str] = set(allow)
            for batch_no, (kinds, _answer) in enumerate(plan):
                calls = [_call(kind, i, batch_no, root) for i, kind in enumerate(kinds)]
                server.script([Reply.tools(calls), Reply.text("done")])
                before_asked = len(asked_answers)
                ui.started.clear()
                await session.send(f"batch {batch_no}")

                asked_now = asked_answers[before_asked:]
                assert len(asked_now) <= 1
                expected: set[str] = set()
                asked_ids: set[str] = set()
                decision = asked_now[0][1] if asked_now else None
                if asked_now:
                    asked_ids = {item.call_id for item in asked_now[0][0]}
                for kind, call in zip(kinds, calls, strict=True):
                    call_id = call[2]
                    pre_allowed = skip_permissions or kind in granted or kind not in NEEDS_APPROVAL
                    # Exactly the calls that need a human answer were asked about.
                    assert (call_id in asked_ids) == (not pre_allowed), (call_id, asked_ids)
                    if pre_allowed or (decision is not None and decision.is_approved(call_id)):
                        expected.add(call_id)
                assert set(ui.started) == expected
                # Every call got exactly one result, run or not.
                for call in calls:
                    assert call[2] in ui.results
                for call in calls:
                    if call[0] == "write_file":
                        assert (root / f"{call[2]}.txt").exists() == (call[2] in expected)
                if decision is not None and decision.approved:
                    granted |= set(decision.always)
        finally:
            await session.aclose()


@settings(
    max_examples=100,
    deadline=None,
    database=None,  # nothing written into the source tree
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    plan=st.lists(st.tuples(batches, answers), min_size=1, max_size=2),
    # Weighted towards "ask": an allow-all run asks nothing and proves little.
    allow=st.sampled_from([frozenset(), frozenset(), frozenset({"bash"}), frozenset({"write_file"})]),
    skip_permissions=st.sampled_from([False, False, False, True]),
)
# The two forms of the reported bug always run, whatever the random search finds.
@example(
    plan=[(["bash", "bash"], Answer(key="a", skipped=frozenset({1}), toggled=frozenset()))],
    allow=frozenset(),
    skip_permissions=False,
)
@example(
    plan=[
        (["bash", "write_file", "bash"], Answer(key="y", skipped=frozenset({0}), toggled=frozenset({"bash"})))
    ],
    allow=frozenset(),
    skip_permissions=False,
)
def test_executed_calls_are_exactly_the_approved_ones(
    server: ScriptedModelServer,
    plan: list[tuple[list[str], Answer]],
    allow: frozenset[str],
    skip_permissions: bool,
) -> None:
    asyncio.run(_run(server, plan, allow, skip_permissions))


def test_a_skipped_call_does_not_run_when_the_batch_is_approved_with_always(server, tmp_path) -> None:
    """The reported bug: two bash calls, x on the second, then `a`: the second must not run."""
    plan = [(["bash", "bash"], Answer(key="a", skipped=frozenset({1}), toggled=frozenset()))]
    asyncio.run(_run(server, plan, frozenset(), False))


def test_a_skipped_call_does_not_run_with_a_space_toggle_and_y(server, tmp_path) -> None:
    plan = [(["bash", "bash"], Answer(key="y", skipped=frozenset({0}), toggled=frozenset({"bash"})))]
    asyncio.run(_run(server, plan, frozenset(), False))
