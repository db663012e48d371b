"""task_agent / plan_agent: prompts handed to the sub-agent runner, the plan file, and refinement."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.executors.local_http import make_ctx, run_item
from turnstone_tui.config import Config, data_dir
from turnstone_tui.core.types import ToolResult
from turnstone_tui.executors.agents import PREPARERS

pytestmark = pytest.mark.timeout(30)


class SubAgents:
    """Records what the session would run; answers with scripted reports."""

    def __init__(self, *answers: ToolResult) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str, str]] = []

    async def __call__(self, kind: str, prompt: str) -> ToolResult:
        self.calls.append((kind, prompt))
        return self.answers.pop(0)


async def test_task_agent_runs_the_prompt_after_approval(tmp_path: Path) -> None:
    agents = SubAgents(ToolResult("Renamed 3 files; tests pass."))
    ctx = make_ctx(tmp_path, run_subagent=agents)
    item = await PREPARERS["task_agent"](ctx, "t1", {"prompt": "Rename the helpers\nthen run tests"})
    assert item.needs_approval and item.preview == "Rename the helpers\nthen run tests"
    assert agents.calls == []  # prepare has no side effects
    result = await run_item(item)
    assert result.text == "Renamed 3 files; tests pass."
    assert agents.calls == [("task", "Rename the helpers\nthen run tests")]


async def test_plan_agent_writes_then_refines(tmp_path: Path) -> None:
    agents = SubAgents(
        ToolResult("# Plan v1\n1. Add cache"), ToolResult("# Plan v2\n1. Add cache\n2. Add TTL")
    )
    ctx = make_ctx(tmp_path / "project", run_subagent=agents)
    ctx.config.db_path = str(tmp_path / "data" / "turnstone.db")
    path = ctx.plan_path()
    assert path == tmp_path / "data" / "plans" / "sess1.md"  # beside the database, not in the project
    first = await PREPARERS["plan_agent"](ctx, "p1", {"goal": "Add caching to the API"})
    assert "Writes this session's plan" in first.preview
    result = await run_item(first)
    kind, prompt = agents.calls[0]
    assert kind == "plan" and "Add caching to the API" in prompt and "Prior plan" not in prompt
    assert path.read_text() == "# Plan v1\n1. Add cache\n"
    assert (path.stat().st_mode & 0o777) == 0o600 and (path.parent.stat().st_mode & 0o777) == 0o700
    assert result.text.startswith(f"Plan v1 (written): {path}") and "Add cache" in result.text
    assert result.structured == {
        "plan_path": str(path),
        "plan": "# Plan v1\n1. Add cache",
        "refined": False,
        "version": 1,
    }

    second = await PREPARERS["plan_agent"](ctx, "p2", {"goal": "Also expire entries"})
    assert "Refines this session's plan" in second.preview
    refined = await run_item(second)
    _, prompt2 = agents.calls[1]
    assert "Also expire entries" in prompt2
    assert "Refine this plan" in prompt2 and "# Plan v1\n1. Add cache" in prompt2
    assert path.read_text().startswith("# Plan v2") and refined.text.startswith("Plan v2 (refined):")
    assert not (tmp_path / "project").exists()


async def test_plan_agent_asks_nothing_itself_the_review_is_the_question(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, run_subagent=SubAgents(ToolResult("# Plan")))
    item = await PREPARERS["plan_agent"](ctx, "p1", {"goal": "Add caching"})
    assert not item.needs_approval


def test_plans_default_to_the_platformdirs_data_dir() -> None:
    assert Config().plans_dir() == data_dir() / "plans"


async def test_a_plan_left_by_an_earlier_run_counts_as_v1(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, run_subagent=SubAgents(ToolResult("# Plan again")))
    ctx.plan_path().parent.mkdir(parents=True)
    ctx.plan_path().write_text("# old plan\n")
    result = await run_item(await PREPARERS["plan_agent"](ctx, "p1", {"goal": "x"}))
    assert result.text.startswith("Plan v2 (refined):") and ctx.plan_version == 2


async def test_failed_plan_leaves_the_prior_plan(tmp_path: Path) -> None:
    agents = SubAgents(ToolResult("sub-agent hit the turn limit", is_error=True), ToolResult("   "))
    ctx = make_ctx(tmp_path, run_subagent=agents)
    ctx.plan_path().parent.mkdir(parents=True)
    ctx.plan_path().write_text("# old plan\n")
    failed = await run_item(await PREPARERS["plan_agent"](ctx, "p", {"goal": "x"}))
    assert failed.is_error and "turn limit" in failed.text
    empty = await run_item(await PREPARERS["plan_agent"](ctx, "p", {"prompt": "x"}))  # spec's name works too
    assert empty.is_error
    assert ctx.plan_path().read_text() == "# old plan\n"


async def test_refused_without_runner_or_inside_a_sub_agent(tmp_path: Path) -> None:
    no_runner = make_ctx(tmp_path)
    assert "cannot start sub-agents" in (await PREPARERS["task_agent"](no_runner, "t", {"prompt": "x"})).error
    nested = make_ctx(tmp_path, run_subagent=SubAgents(), agent_kind="task")
    assert "inside a sub-agent" in (await PREPARERS["plan_agent"](nested, "p", {"goal": "x"})).error
    ok = make_ctx(tmp_path, run_subagent=SubAgents())
    assert (await PREPARERS["task_agent"](ok, "t", {"prompt": ""})).error
    assert (await PREPARERS["plan_agent"](ok, "p", {})).error
