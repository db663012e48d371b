"""task_agent and plan_agent: hand a prompt to a nested sub-agent session.

The sub-agent itself is the session's business: ``ctx.run_subagent(kind, prompt)`` runs a nested
ChatSession ("task": TASK_AGENT_TOOLS, "plan": AGENT_TOOLS, MCP tools merged, a turn limit) and
returns its final report as a ToolResult. These executors build the prompt and, for plan_agent,
keep the plan in the app's data dir (``ctx.plan_path()``: ``<data dir>/plans/<session_id>.md``, never
in the project): a second call passes the prior plan so the agent refines it, and the final text is
written back there as the next version (v1, v2 ...).

plan_agent runs without an approval (its agent has read-only tools; any of them that asks still
asks): the question is the review that follows, in which the session shows the plan to the user
(accept / reject / annotate), as Claude Code's plan mode asks once, about the plan.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from ..core.tools import Preparer, ToolContext, error_item, require_str
from ..core.types import ExecContext, PreparedItem, ToolResult

MAX_PROMPT_CHARS = 100_000
MAX_PRIOR_PLAN_CHARS = 60_000

PLAN_INSTRUCTIONS = (
    "You are a planning agent. Explore the codebase with your read-only tools (read_file, search, man, "
    "math, web tools) before deciding anything, then write a structured implementation plan in Markdown:\n"
    "1. Goal and constraints (one short paragraph).\n"
    "2. What you found: the relevant files, functions and behaviour, with paths.\n"
    "3. Steps: numbered, each naming the files to change and what to change.\n"
    "4. Risks and open questions.\n"
    "5. How to verify (tests and commands).\n"
    "Do not modify files. Your final message must be the complete plan and nothing else."
)


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` at once (a temporary file renamed over it), private to the user."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    tmp.replace(path)


def plan_heading(version: int, refined: bool, path: Path) -> str:
    """The first line of a plan_agent result: which version and where it is kept."""
    return f"Plan v{version} ({'refined' if refined else 'written'}): {path}"


def build_plan_prompt(goal: str, prior_plan: str | None) -> str:
    parts = [PLAN_INSTRUCTIONS, f"## Goal\n{goal}"]
    if prior_plan and prior_plan.strip():
        prior = prior_plan.strip()
        if len(prior) > MAX_PRIOR_PLAN_CHARS:
            prior = prior[:MAX_PRIOR_PLAN_CHARS] + "\n[... prior plan truncated ...]"
        parts.append(
            "## Prior plan\nA plan for this session already exists. Refine this plan rather than starting over: "
            "keep what still holds, fix what the goal above changes, and return the full updated plan.\n\n"
            f"<prior_plan>\n{prior}\n</prior_plan>"
        )
    return "\n\n".join(parts)


def _not_available(ctx: ToolContext, tool: str) -> str | None:
    if ctx.agent_kind != "main":
        return f"{tool} is not available inside a sub-agent"
    if ctx.run_subagent is None:
        return f"{tool} is not available: this session cannot start sub-agents"
    return None


async def prepare_task_agent(ctx: ToolContext, call_id: str, args: dict[str, Any]) -> PreparedItem:
    prompt = require_str(args, "prompt")
    if prompt is None or not prompt.strip():
        return error_item(call_id, "task_agent", args, "task_agent needs a 'prompt' describing the task")
    if len(prompt) > MAX_PROMPT_CHARS:
        return error_item(call_id, "task_agent", args, f"prompt is longer than {MAX_PROMPT_CHARS} characters")
    problem = _not_available(ctx, "task_agent")
    if problem:
        return error_item(call_id, "task_agent", args, problem)
    runner = ctx.run_subagent
    assert runner is not None

    async def execute(ectx: ExecContext) -> ToolResult:
        return await runner("task", prompt)

    first = prompt.strip().splitlines()[0]
    return PreparedItem(
        call_id=call_id,
        func_name="task_agent",
        args=args,
        header=f"task_agent: {first[:80]}",
        preview=prompt,
        preview_kind="markdown",
        execute=execute,
    )


async def prepare_plan_agent(ctx: ToolContext, call_id: str, args: dict[str, Any]) -> PreparedItem:
    goal = require_str(args, "goal") or require_str(args, "prompt")  # the spec names it "prompt" too
    if goal is None or not goal.strip():
        return error_item(
            call_id, "plan_agent", args, "plan_agent needs a 'prompt' (or 'goal'): what to plan"
        )
    if len(goal) > MAX_PROMPT_CHARS:
        return error_item(call_id, "plan_agent", args, f"goal is longer than {MAX_PROMPT_CHARS} characters")
    problem = _not_available(ctx, "plan_agent")
    if problem:
        return error_item(call_id, "plan_agent", args, problem)
    runner = ctx.run_subagent
    assert runner is not None
    path = ctx.plan_path()
    refines = await asyncio.to_thread(path.is_file)

    async def execute(ectx: ExecContext) -> ToolResult:
        prior = await asyncio.to_thread(_read_text, path)
        result = await runner("plan", build_plan_prompt(goal, prior))
        if result.is_error:
            return result
        plan = result.text.strip()
        if not plan:
            return ToolResult("plan_agent finished without writing a plan.", is_error=True)
        try:
            await asyncio.to_thread(_write_text, path, plan + "\n")
        except OSError as exc:
            return ToolResult(f"plan_agent: cannot write {path}: {exc.strerror}\n\n{plan}", is_error=True)
        # A plan already on disk from an earlier run of this session counts as v1.
        version = max(ctx.plan_version, 1) + 1 if prior else 1
        ctx.plan_version = version
        return ToolResult(
            f"{plan_heading(version, bool(prior), path)}\n\n{plan}",
            structured={"plan_path": str(path), "plan": plan, "refined": bool(prior), "version": version},
        )

    note = "Refines this session's plan." if refines else "Writes this session's plan."
    return PreparedItem(
        call_id=call_id,
        func_name="plan_agent",
        args=args,
        header=f"plan_agent: {goal.strip().splitlines()[0][:80]}",
        preview=f"{goal}\n\n_{note}_",
        preview_kind="markdown",
        needs_approval=False,  # the plan review after it is the question (core.session._plan_gate)
        execute=execute,
    )


PREPARERS: dict[str, Preparer] = {"task_agent": prepare_task_agent, "plan_agent": prepare_plan_agent}
