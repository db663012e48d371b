"""The three-phase tool pipeline: prepare -> approve -> execute.

prepare is pure (parse, validate, preview); approve asks the UI once per batch for the items
that need it; execute runs approved items concurrently (at most ``max_parallel``), streams
their output to the UI by call_id, truncates and delivers each result as it completes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .arguments import ArgumentLimits, check_arguments, validate_arguments
from .mcp_bridge import ServerState
from .model_output import clean_text
from .outcomes import CANCELLED_TEXT, cancelled_result, denied_result, refused_result
from .permission_store import PermissionStore
from .permissions import Mode, Rule, RuleError, Verdict, judge, parse_rule
from .tools import McpPreparer, Preparer, ToolContext, error_item
from .truncate import truncate_output
from .types import (
    ApprovalDecision,
    EscalationRequest,
    ExecContext,
    ExecuteFn,
    OutputStream,
    PreparedItem,
    SessionState,
    ToolCall,
    ToolResult,
)

log = logging.getLogger(__name__)

MCP_PREFIX = "mcp__"
ESCALATION_CAUSE = (
    "a read-only file system: the sandbox binds every .git (and everything outside the workspace "
    "and [sandbox] writable) read-only"
)
RAN_OUTSIDE_NOTE = (
    "[the sandboxed run failed ({failure}); the user approved running it again OUTSIDE the sandbox: "
    "this is that run's output]"
)
DECLINED_NOTE = (
    "[this failed inside the sandbox because of {cause} ({failure}). Running it again outside the "
    "sandbox was offered and {who}. Do not retry it in the sandbox or work around the sandbox; ask "
    "the user to run it themselves (or to add the path to [sandbox] writable in the config)]"
)


@dataclass(slots=True)
class ToolOutcome:
    item: PreparedItem
    result: ToolResult


@dataclass
class ApprovalPolicy:
    """Who may run without asking: permission rules (files, this session's), the mode,
    --skip-permissions and the tool names of "always" answers, ``tools.allow`` and ``--allow``."""

    skip_permissions: bool = False
    auto_approve: set[str] = field(default_factory=set)
    store: PermissionStore | None = None
    session_rules: list[Rule] = field(default_factory=list)
    mode: Mode = Mode.DEFAULT
    workspace: Path = field(default_factory=Path.cwd)
    follow: ApprovalPolicy | None = None
    """A sub-agent's: the parent session's policy, read at every call (its mode, this session's rules
    and "always" answers), so a change the user makes while the sub-agent runs holds at once."""

    @property
    def current_mode(self) -> Mode:
        return self.follow.current_mode if self.follow is not None else self.mode

    def rules(self) -> list[Rule]:
        names = set(self.auto_approve)
        session_rules = self.session_rules
        if self.follow is not None:
            names |= self.follow.auto_approve
            session_rules = self.follow.session_rules
        named: list[Rule] = []
        for name in sorted(names):  # tool names, or rules given to --allow / tools.allow
            with contextlib.suppress(RuleError):
                named.append(parse_rule(name, "allow", "session"))
        stored = self.store.rules() if self.store is not None else []
        return [*stored, *session_rules, *named]

    def verdict(self, item: PreparedItem) -> Verdict:
        return judge(
            item,
            self.rules(),
            workspace=self.workspace,
            mode=self.current_mode,
            skip_permissions=self.skip_permissions,
        )

    def allows(self, item: PreparedItem) -> bool:
        return self.verdict(item).runs_without_asking

    def grant_session(self, rule: Rule) -> None:
        if self.follow is not None:  # a sub-agent's "always" holds for its parent too
            self.follow.grant_session(rule)
            return
        if rule.specifier is None and rule.tool in self.auto_approve:
            return
        if rule not in self.session_rules:
            self.session_rules.append(rule)

    def revoke(self, names: set[str]) -> None:
        """These tools (and this session's rules with these texts) ask for approval again."""
        self.auto_approve.difference_update(names)
        self.session_rules = [r for r in self.session_rules if r.text not in names and r.tool not in names]


class ToolPipeline:
    def __init__(
        self,
        ctx: ToolContext,
        preparers: Mapping[str, Preparer],
        policy: ApprovalPolicy,
        *,
        schema_for: Callable[[str], dict | None],
        mcp_preparer: McpPreparer | None = None,
        max_parallel: int = 4,
        truncation: int = 256 * 1024,
    ) -> None:
        self.ctx = ctx
        self.preparers = preparers
        self.policy = policy
        self.schema_for = schema_for
        self.mcp_preparer = mcp_preparer
        self.max_parallel = max_parallel
        self.truncation = truncation
        # Write-ahead: awaited with (call_id, name, result) the moment an executed call finishes,
        # so its result is stored before anything else can go wrong (the session stores it).
        self.commit: Callable[[str, str, ToolResult], Awaitable[None]] | None = None

    # --- phase 1 ------------------------------------------------------------------------
    async def prepare(self, call: ToolCall) -> PreparedItem:
        """Phase 1 for one call; whatever goes wrong becomes that call's error, never an exception."""
        try:
            return await self._prepare(call)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug (or hostile input) must not end the turn
            log.exception("prepare failed for %s", call.name)
            return error_item(
                call.id,
                call.name,
                {},
                f"{call.name}: could not prepare the call: {type(exc).__name__}: {exc}",
            )

    def _argument_limits(self) -> ArgumentLimits:
        tools = getattr(self.ctx.config, "tools", None)
        return ArgumentLimits(
            max_chars=getattr(tools, "max_argument_chars", ArgumentLimits.max_chars),
            max_depth=getattr(tools, "max_argument_depth", ArgumentLimits.max_depth),
        )

    def _unknown_tool(self, name: str) -> str:
        """Why a call names no tool of this session; for an MCP tool, what its server's state is."""
        mcp = self.ctx.mcp
        if mcp is not None and name.startswith(MCP_PREFIX):
            for status in mcp.statuses():
                if not name.startswith(f"{MCP_PREFIX}{status.name}__"):
                    continue
                if status.state is not ServerState.CONNECTED:
                    why = f": {status.error}" if status.error else ""
                    return (
                        f"unknown tool {name!r}: its MCP server '{status.name}' is {status.state.value}{why} "
                        f"(the user can reconnect it with /mcp refresh {status.name})"
                    )
                return f"unknown tool {name!r}: MCP server '{status.name}' has no tool of that name"
        return f"unknown tool {name!r}: it is not available in this session"

    async def _prepare(self, call: ToolCall) -> PreparedItem:
        name = call.name
        if call.refused:
            return error_item(call.id, name, {}, f"{name}: {call.refused}")
        spec = self.ctx.registry.get(name)
        primary_key = spec.primary_key if spec else None
        parsed = check_arguments(call.arguments, primary_key, self._argument_limits())
        if parsed.error is not None or parsed.args is None:
            raw = call.arguments if len(call.arguments or "") <= 4096 else call.arguments[:4096] + "…"
            return error_item(call.id, name, {"_raw": raw}, f"{name}: {parsed.error}")
        args = parsed.args
        schema = self.schema_for(name)
        if schema is None:
            return error_item(call.id, name, args, self._unknown_tool(name))
        args, error = validate_arguments(args, schema.get("function", schema).get("parameters", {}))
        if error is not None:
            return error_item(call.id, name, args, f"{name}: {error}")
        try:
            if name.startswith(MCP_PREFIX) and name not in self.preparers:
                if self.mcp_preparer is None:
                    return error_item(call.id, name, args, f"no MCP server provides {name}")
                item = await self.mcp_preparer(self.ctx, call.id, name, args)
            else:
                preparer = self.preparers.get(name)
                if preparer is None:
                    return error_item(call.id, name, args, f"tool {name!r} has no executor")
                item = await preparer(self.ctx, call.id, args)
        except Exception as exc:  # a bug in a preparer must not end the turn
            log.exception("prepare failed for %s", name)
            return error_item(call.id, name, args, f"{name}: could not prepare the call: {exc}")
        if not isinstance(item, PreparedItem):
            return error_item(call.id, name, args, f"{name}: the preparer returned no call to run")
        item.call_id = call.id  # the result must answer this call, whatever the preparer did
        if spec is not None and spec.read_only:
            item.read_only = True
        return item

    # --- phases 2 and 3 -----------------------------------------------------------------
    async def run(
        self, calls: list[ToolCall], results: dict[str, ToolResult] | None = None
    ) -> list[ToolOutcome]:
        """Prepare, approve and execute one batch; results come back in call order.

        On cancellation every call still without a result gets a "cancelled by user" result
        (reported to the UI) before CancelledError propagates.
        """
        ui = self.ctx.ui
        items = [await self.prepare(call) for call in calls]
        results = {} if results is None else results
        try:
            ui.on_tools_prepared(items)
            if self.policy.store is not None:  # the files may have been edited since the last batch
                await asyncio.to_thread(self.policy.store.refresh)
            verdicts = self._judge(items)
            asked = [i for i in items if (v := verdicts.get(i.call_id)) is not None and v.effect == "ask"]
            self._start_standbys(asked)
            decision = await self._approve(asked)
            asked_ids = {item.call_id for item in asked}
            runnable: list[PreparedItem] = []
            for item in items:
                verdict = verdicts.get(item.call_id)
                if item.error is not None:
                    self._deliver(item, ToolResult(item.error, is_error=True), results)
                elif item.execute is None:
                    self._deliver(item, ToolResult(f"{item.func_name}: nothing to execute", True), results)
                elif verdict is not None and verdict.effect in ("deny", "refuse"):
                    self._deliver(item, refused_result(item.func_name, verdict.reason), results)
                elif (
                    decision is not None
                    and item.call_id in asked_ids
                    and not decision.is_approved(item.call_id)
                ):
                    # The user's answer for a call they were asked about is final: an "always" granted
                    # in the same answer (for another call of the same tool) must not override a skip.
                    self._deliver(item, denied_result(item.func_name, decision.feedback), results)
                else:
                    runnable.append(item)
            running = {item.call_id for item in runnable}
            _close_standbys(item for item in items if item.call_id not in running)  # (before any runs)
            if runnable:
                ui.on_state(SessionState.RUNNING)
                await self._execute_all(runnable, decision, results, asked_ids)
        except asyncio.CancelledError:
            for item in items:
                if item.call_id not in results:
                    self._deliver(item, cancelled_result(CANCELLED_TEXT), results)
            raise
        except Exception as exc:  # a failing front end or a bug here: every call still gets its result
            log.exception("tool batch failed")
            for item in items:
                if item.call_id not in results:
                    failed = ToolResult(f"{item.func_name}: not run: {type(exc).__name__}: {exc}", True)
                    self._deliver(item, failed, results)
        finally:
            _close_standbys(items)  # (those that ran are no longer waiting: a no-op for them)
        return [ToolOutcome(item, results[item.call_id]) for item in items]

    def _start_standbys(self, asked: list[PreparedItem]) -> None:
        """The processes of the calls the user is asked about start while the question is on the
        screen (as many as may run at once), each running nothing of its call until that call
        runs (see core.types.Standby)."""
        standbys = [item.standby for item in asked if item.standby is not None and item.error is None]
        for standby in standbys[: self.max_parallel]:
            try:
                standby.start()
            except Exception:  # the call then starts its process when it runs, as without one
                log.exception("could not start a call's process ahead")

    def _judge(self, items: list[PreparedItem]) -> dict[str, Verdict]:
        """Each runnable call's verdict, decided once, before any answer changes the policy."""
        verdicts: dict[str, Verdict] = {}
        for item in items:
            if item.error is None and item.execute is not None:
                try:
                    verdicts[item.call_id] = self.policy.verdict(item)
                except Exception as exc:  # a bug in a rule must not let a call run unasked
                    log.exception("judging %s failed", item.func_name)
                    verdicts[item.call_id] = Verdict(
                        "ask", f"the permission rules could not be applied: {exc}"
                    )
        return verdicts

    async def _approve(self, pending: list[PreparedItem]) -> ApprovalDecision | None:
        if not pending:
            return None
        ui = self.ctx.ui
        ui.on_state(SessionState.ATTENTION)
        decision = await ui.approve_tools(pending)
        if decision.always and decision.approved:
            (self.policy.follow or self.policy).auto_approve.update(decision.always)
        if decision.rules:
            await self._grant(decision)
        return decision

    async def _grant(self, decision: ApprovalDecision) -> None:
        """The rules of an "always" answer, each only if the call it was offered for was approved."""
        for call_id, rule in decision.rules:
            if not isinstance(rule, Rule) or not decision.is_approved(call_id) or rule.effect != "allow":
                continue
            if rule.scope == "session" or self.policy.store is None:
                self.policy.grant_session(rule)
                continue
            try:
                await asyncio.to_thread(self.policy.store.add, rule)
            except (OSError, ValueError) as exc:
                log.warning("could not save the rule %s: %s", rule.text, exc)
                self.policy.grant_session(rule)
                self.ctx.ui.on_error(
                    f"could not save the rule {rule.text} ({exc}); it holds for this session"
                )

    async def _execute_all(
        self,
        items: list[PreparedItem],
        decision: ApprovalDecision | None,
        results: dict[str, ToolResult],
        asked_ids: set[str],
    ) -> None:
        limit = asyncio.Semaphore(self.max_parallel)
        feedback = decision.feedback.strip() if decision and decision.feedback else ""

        async def run_one(item: PreparedItem) -> None:
            async with limit:
                result = await self._execute(item)
            if result.sandbox_denial and item.unsandboxed is not None:
                result = await self._escalate(item, result, limit)
            if feedback and item.call_id in asked_ids:  # only the calls the answer was written for
                result.text = f"{result.text}\n\n[user feedback on approval: {feedback}]"
            self._deliver(item, result, results)
            if self.commit is not None:
                try:
                    await self.commit(item.call_id, item.func_name, results[item.call_id])
                except Exception:  # the result stands in memory; storing is retried at the end
                    log.exception("could not store the result of %s at once", item.call_id)

        tasks = [asyncio.create_task(run_one(item), name=f"tool:{item.call_id}") for item in items]
        try:
            await asyncio.gather(*tasks)
        except asyncio.CancelledError:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def _escalate(self, item: PreparedItem, failed: ToolResult, limit: asyncio.Semaphore) -> ToolResult:
        """An approved call failed in the sandbox because of it: the user alone may let it run again
        outside (in every mode: no mode, --skip-permissions included, escapes the sandbox unasked).
        Only calls that ran got here, so nothing a deny rule or the bash guard refused is offered."""
        ui = self.ctx.ui
        failure = (failed.sandbox_denial or "").strip()[:500]
        failed.sandbox_denial = None
        request = EscalationRequest(
            call_id=item.call_id,
            func_name=item.func_name,
            command=str(item.args.get("command", item.preview)),
            failure=failure,
            cause=ESCALATION_CAUSE,
        )
        ask = getattr(ui, "confirm_unsandboxed", None)
        approved = False
        who = "there is no interactive user to approve it, so it was not run"
        if ask is not None:
            ui.on_state(SessionState.ATTENTION)
            try:
                answer = await ask(request)
                approved = answer is True
                if answer is False:
                    who = "the user declined"
            except asyncio.CancelledError:
                raise
            except Exception:  # a failing front end is a "no"
                log.exception("asking to run %s outside the sandbox failed", item.call_id)
                who = "the question could not be shown, so it was not run"
            ui.on_state(SessionState.RUNNING)
        if not approved:
            failed.text = (
                f"{failed.text}\n{DECLINED_NOTE.format(cause=ESCALATION_CAUSE, failure=failure, who=who)}"
            )
            return failed
        assert item.unsandboxed is not None
        async with limit:
            result = await self._execute(item, item.unsandboxed, started=False)
        result.sandbox_denial = None
        result.text = f"{RAN_OUTSIDE_NOTE.format(failure=failure)}\n{result.text}"
        return result

    async def _execute(
        self, item: PreparedItem, execute: ExecuteFn | None = None, *, started: bool = True
    ) -> ToolResult:
        ui = self.ctx.ui
        call_id = item.call_id

        def emit_lines(lines: list[str], stream: OutputStream) -> None:
            if not lines:
                return
            if not all(map(str.isascii, lines)):  # (a flag on each str: ASCII needs no scan)
                lines = [clean_text(line) for line in lines]
            try:
                ui.on_tool_output(call_id, lines, stream)
            except Exception:  # a front end failing to show a line must not kill the tool
                log.exception("the front end failed to show output of %s", call_id)

        run = execute or item.execute
        assert run is not None
        began = time.monotonic()
        try:
            if started:  # (a second run outside the sandbox goes on in the same card)
                ui.on_tool_start(item)
            result = await run(ExecContext(call_id=call_id, emit_lines=emit_lines))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("tool %s failed", item.func_name)
            result = ToolResult(f"{item.func_name} failed: {type(exc).__name__}: {exc}", is_error=True)
        if not isinstance(result, ToolResult):
            result = ToolResult(str(result))
        if result.elapsed is None:  # how long it ran, not how late a busy screen showed it
            result.elapsed = time.monotonic() - began
        text = result.text if isinstance(result.text, str) else str(result.text)
        result.text = clean_text(truncate_output(text, self.truncation))
        return result

    def _deliver(self, item: PreparedItem, result: ToolResult, results: dict[str, ToolResult]) -> None:
        if item.call_id in results:  # one result per call, the first one wins
            return
        results[item.call_id] = result
        try:
            self.ctx.ui.on_tool_result(item.call_id, item.func_name, result)
        except Exception:  # the result stands even if a front end fails to show it
            log.exception("the front end failed to show the result of %s", item.call_id)


def _close_standbys(items: Iterable[PreparedItem]) -> None:
    for item in items:
        if item.standby is not None:
            try:
                item.standby.close()
            except Exception:
                log.exception("could not close the process started ahead for %s", item.call_id)
