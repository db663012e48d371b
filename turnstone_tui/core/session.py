"""ChatSession: one conversation with a model, its tools and its storage.

A turn: store the user message -> stream the model -> run the tool pipeline on its calls ->
feed the results back -> repeat until the model answers without tool calls. Every message is
stored as it happens; a cancelled or failed turn still leaves a consistent conversation (each
tool call has a result message).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import child_env
from .arguments import ArgumentLimits, check_arguments
from .checkpoints import FileCheckpoints, UndoPlan, undo_note
from .mcp_bridge import McpBridge, McpEvent, ResourceUpdate
from .mentions import expand_mentions
from .model_output import clean_text, clean_value, unique_call_ids, used_call_ids
from .outcomes import CANCELLED_TEXT, INTERRUPTED_TEXT, cancelled_result
from .permission_store import PermissionStore
from .permissions import Mode, mode_note, told_mode
from .pipeline import ApprovalPolicy, ToolOutcome, ToolPipeline
from .project_instructions import ProjectInstructions, load_project_instructions
from .prompts import build_system_prompt
from .protocol import SessionUI
from .provider import (
    ContentDelta,
    ModelRequest,
    Provider,
    ProviderContent,
    ProviderError,
    ReasoningDelta,
    StreamDone,
    ToolCallDelta,
    ToolSearchDone,
    UsageUpdate,
)
from .subagent import SubagentUI
from .tool_search import TOOL_SEARCH_SCHEMA, ToolSearchManager, decide_tier, tier_override
from .tools import MemorySource, ToolContext, ToolTable
from .types import (
    PLAN_CARD_KEY,
    PLAN_REVIEW_KIND,
    RESOURCE_UPDATE_KIND,
    ExecContext,
    PreparedItem,
    SessionState,
    StatusInfo,
    ToolCall,
    ToolResult,
    ToolStatus,
)

if TYPE_CHECKING:
    from ..config import Config
    from ..storage.db import Storage

log = logging.getLogger(__name__)

MAX_TOOL_ROUNDS = 50  # per user turn in the main session; sub-agents use tools.agent_max_turns
MAX_WATCH_DEPTH = 5  # synthetic (watch) turns in a row without a user message


@dataclass
class AssistantReply:
    content: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str = ""
    provider_content: ProviderContent | None = None

    def message(self) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": "assistant", "content": self.content or None}
        if self.provider_content is not None:  # sent back to that provider exactly as received
            kept = self.provider_content
            msg["provider_content"] = {"provider": kept.provider, "blocks": kept.blocks}
        if self.tool_calls:
            msg["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return msg


class ChatSession:
    """One conversation. Its parts (tools, MCP bridge, memories) are handed in by ``runtime.py``."""

    def __init__(
        self,
        config: Config,
        provider: Provider,
        ui: SessionUI,
        *,
        tools: ToolTable,
        storage: Storage | None = None,
        mcp: McpBridge | None = None,
        memories: MemorySource | None = None,
        session_id: str | None = None,
        cwd: Path | str | None = None,
        agent_kind: str = "main",
        skip_permissions: bool | None = None,
        allow: set[str] | None = None,
        supports_vision: bool = False,
        permissions: PermissionStore | None = None,
        instructions_dir: Path | None = None,
    ) -> None:
        self.config = config
        self.provider = provider
        self.ui = ui
        self.storage = storage
        self.tools = tools
        self.registry = tools.registry
        self.mcp = mcp
        self.memories = memories
        self.agent_kind = agent_kind
        self.cwd = Path(cwd or Path.cwd()).resolve()
        self._requested_id = session_id
        self.session_id = session_id or ""
        self.messages: list[dict[str, Any]] = []
        self.system_prompt = ""
        self.policy = ApprovalPolicy(
            skip_permissions=config.tools.skip_permissions if skip_permissions is None else skip_permissions,
            auto_approve=set(config.tools.allow) | set(allow or ()),
            store=permissions,
            workspace=self.cwd,
        )
        self.ctx = ToolContext(
            config=config,
            registry=self.registry,
            cwd=self.cwd,
            session_id=self.session_id,
            ui=ui,
            storage=storage,
            provider=provider,
            mcp=mcp,
            supports_vision=supports_vision,
            agent_kind=agent_kind,
            run_subagent=self._run_subagent if agent_kind == "main" else None,
            on_skill_loaded=self._on_skill_loaded,
            judge=self.policy.verdict,
            checkpoints=FileCheckpoints() if agent_kind == "main" else None,
        )
        self.state = SessionState.IDLE
        self.sandbox_label = ""
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.last_answer = ""
        self.max_tool_rounds = MAX_TOOL_ROUNDS if agent_kind == "main" else config.tools.agent_max_turns
        self._skill: tuple[str, str] | None = None
        self._background: set[asyncio.Task[None]] = set()  # writes that must not be garbage-collected
        self._memories = ""
        self._instructions_dir = instructions_dir
        """Where the user's global AGENTS.md lives (the config directory); None: project files only."""
        self.instructions = ProjectInstructions()
        self._turn_task: asyncio.Task[None] | None = None
        self._turn_lock = asyncio.Lock()
        self._cancel_requested = False
        self._synthetic_streak = 0
        self.watch_delivery = False
        """Deliver queued watch results at idle moments by itself (the app turns it on once the
        session is shown; a headless run delivers once, before its prompt)."""
        self._delivery_task: asyncio.Task[int] | None = None
        self._unqueued_results: list[str] = []  # results injected without a database
        self._deferral_told = False
        self._told_mode = Mode.DEFAULT  # the permission mode the model was last told (a note in the history)
        self._closing = False
        self._partial = AssistantReply()
        self._pending_results: dict[str, ToolResult] = {}
        self._committed: set[str] = set()  # call ids whose result message is already stored
        self._lock: Any = None  # this process's ownership of the stored session
        self._tool_search: ToolSearchManager | None = None
        self._remove_mcp_listener: Callable[[], None] | None = None
        self.pipeline = ToolPipeline(
            self.ctx,
            tools.preparers,
            self.policy,
            schema_for=self.schema_for,
            mcp_preparer=tools.mcp_preparer,
            max_parallel=config.tools.max_parallel,
            truncation=config.tools.truncation,
        )
        self.pipeline.commit = self._commit_result

    # --- lifecycle ----------------------------------------------------------------------
    @property
    def auto_approve(self) -> set[str]:
        return self.policy.auto_approve

    async def start(self) -> None:
        """Create or resume the stored session and build the system prompt and tool list."""
        if self.storage is not None:
            existing = await self.storage.find_session(self._requested_id) if self._requested_id else None
            if self._requested_id and existing is None:
                raise ValueError(f"no stored session with id {self._requested_id!r}")
            if existing:
                self.session_id = existing["id"]
                # one process owns a session: a second --resume is refused, naming the holder
                self._lock = self.storage.lock_session(self.session_id)
                self.messages = repair_history(await self.storage.load_messages(self.session_id))
                self._told_mode = told_mode(self.messages)
                await self._load_usage()
                await self._load_skill()
            else:
                self.session_id = await self.storage.create_session(
                    model=self.provider.model, cwd=str(self.cwd)
                )
                self._lock = self.storage.lock_session(self.session_id)
            if self.agent_kind == "main" and self.memories is not None:
                self._memories = await _memory_section(self.memories, self.session_id)
        else:
            self.session_id = self._requested_id or uuid.uuid4().hex[:12]
        self.ctx.session_id = self.session_id
        self.instructions = await asyncio.to_thread(
            load_project_instructions, self.cwd, self._instructions_dir
        )
        self._setup_tool_search()
        if self.mcp is not None:
            self._remove_mcp_listener = self.mcp.add_listener(self._on_mcp_event)
        self._rebuild_system_prompt()
        # The status bar's sandbox word: the first probe runs bwrap (not on the event loop). A UI
        # that shows no status (``-p``) leaves the probe to the first command that needs it.
        if self.agent_kind == "main" and getattr(self.ui, "shows_status", True):
            self.sandbox_label = await asyncio.to_thread(child_env.sandbox_label, self.config)
        self._emit_status()

    async def aclose(self) -> None:
        self._closing = True
        if self._remove_mcp_listener:
            self._remove_mcp_listener()
            self._remove_mcp_listener = None
        delivery, self._delivery_task = self._delivery_task, None
        if delivery is not None and delivery is not asyncio.current_task():
            delivery.cancel()
        self.cancel()
        if self._turn_task is not None:
            await asyncio.gather(self._turn_task, return_exceptions=True)
        if delivery is not None and delivery is not asyncio.current_task():
            await asyncio.gather(delivery, return_exceptions=True)
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def _rebuild_system_prompt(self) -> None:
        catalog = self.mcp.system_catalog() if self.mcp is not None else ""
        self.system_prompt = build_system_prompt(
            cwd=self.cwd,
            model=self.provider.model,
            agent_kind=self.agent_kind,
            memories=self._memories,
            instructions=self.instructions.section(),
            mcp_catalog=catalog,
            skill=self._skill,
        )

    def use_provider(self, config: Config, provider: Provider, *, supports_vision: bool) -> None:
        """Talk to another model from the next request on (the conversation stays)."""
        self.config = config
        self.provider = provider
        self.ctx.config = config
        self.ctx.provider = provider
        self.ctx.supports_vision = supports_vision
        self._rebuild_system_prompt()
        self._emit_status()

    def _on_skill_loaded(self, name: str, content: str) -> None:
        self._skill = (name, content)
        self._rebuild_system_prompt()
        if self.storage is not None and self.agent_kind == "main":
            # kept with the session: a --resume'd conversation still follows its skill
            task = asyncio.get_running_loop().create_task(
                self.storage.set_setting(self._skill_key(), [name, content])
            )
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    def _skill_key(self) -> str:
        return f"skill:{self.session_id}"

    async def _load_skill(self) -> None:
        if self.storage is None or self.agent_kind != "main":
            return
        stored = await self.storage.get_setting(self._skill_key())
        if isinstance(stored, list) and len(stored) == 2 and all(isinstance(x, str) for x in stored):
            self._skill = (stored[0], stored[1])
            self.ctx.active_skill = stored[0]

    # --- tools available to the model -----------------------------------------------------
    def _base_schemas(self) -> list[dict[str, Any]]:
        if self.agent_kind == "task":
            return self.registry.TASK_AGENT_TOOLS
        if self.agent_kind == "plan":
            return self.registry.AGENT_TOOLS
        return self.registry.TOOLS

    def _mcp_schemas(self) -> list[dict[str, Any]]:
        if self.mcp is None:
            return []
        return list(self.mcp.tool_schemas())

    def _setup_tool_search(self) -> None:
        if self.agent_kind != "main":
            return
        tools_cfg = self.config.tools
        manager = ToolSearchManager(
            self.registry.TOOLS,
            self._mcp_schemas(),
            mode=tools_cfg.search,
            threshold=tools_cfg.search_threshold,
            max_results=tools_cfg.search_max_results,
        )
        native = self.provider.native_tool_search
        manager.tier, notice = decide_tier(tier_override(self.config, self.provider.model), native)
        if notice:
            self.ui.on_info(notice)
        self._tool_search = manager
        self.ctx.tool_search = manager

    def _on_mcp_event(self, event: McpEvent) -> None:
        if event.kind == "resource":
            if self.agent_kind == "main":
                self.ui.on_info(
                    f"MCP resource {', '.join(event.added)} ({event.server}) changed since the model "
                    "read it: its new contents go to the model with your next message."
                )
            return
        self._on_mcp_change()

    def _on_mcp_change(self) -> None:
        if self._tool_search is not None:
            self._tool_search.rebuild(self._mcp_schemas())
        self._rebuild_system_prompt()
        self._emit_status()

    @property
    def tool_search_tier(self) -> str:
        """native / client / off: how deferred MCP tools are found ("" for sub-agents, exempt)."""
        return self._tool_search.tier if self._tool_search is not None else ""

    def deferred_tool_schemas(self) -> list[dict[str, Any]]:
        """Tools sent deferred to the provider's native search (empty unless that tier is active)."""
        return self._tool_search.deferred_schemas() if self._tool_search is not None else []

    def visible_tool_schemas(self) -> list[dict[str, Any]]:
        """What the model is sent this round (tool search may defer MCP tools)."""
        if self._tool_search is not None and self._tool_search.active:
            return list(self._tool_search.visible_schemas())
        return [*self._base_schemas(), *self._mcp_schemas()]

    def schema_for(self, name: str) -> dict[str, Any] | None:
        for schema in self._base_schemas():
            if schema["function"]["name"] == name:
                return schema
        if name == "tool_search" and self._tool_search is not None and self._tool_search.active:
            return TOOL_SEARCH_SCHEMA
        if self.mcp is not None:
            return self.mcp.tool_schema(name)
        return None

    # --- turns --------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self._turn_task is not None and not self._turn_task.done()

    async def send(self, text: str, *, synthetic: bool = False, delivers: int | None = None) -> None:
        """Run one whole turn for ``text``. Returns when the model has answered, failed or was cancelled.

        ``delivers``: the id of the queued watch result this (synthetic) message is; it is marked
        delivered in the same commit that stores the message."""
        if not synthetic:
            self._synthetic_streak = 0
            self._deferral_told = False
        try:
            async with self._turn_lock:
                self._cancel_requested = False
                attach = not synthetic and self.agent_kind == "main"  # a watch's output is not the user's @
                task = asyncio.create_task(
                    self._run_turn(text, attach=attach, delivers=delivers), name=f"turn:{self.session_id}"
                )
                self._turn_task = task
                try:
                    await asyncio.shield(task)
                except asyncio.CancelledError:
                    # Our caller was cancelled (not a user interrupt): stop the turn and propagate.
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
                    raise
                finally:
                    self._turn_task = None
        finally:
            self.schedule_watch_delivery()  # an idle moment: results that came meanwhile go now

    # --- watch results ----------------------------------------------------------------------
    async def inject(self, text: str) -> None:
        """A watch result for this session: queued (in the database when there is one), then
        delivered at once if the session is idle (see ``deliver_watch_results``)."""
        if self.storage is not None:
            await self.storage.queue_watch_result(self.session_id, text)
        else:
            self._unqueued_results.append(text)
        await self.deliver_watch_results()

    def schedule_watch_delivery(self) -> None:
        """Deliver queued watch results in the background once the session is idle (when
        ``watch_delivery`` is on)."""
        if not self.watch_delivery or self._closing or self.agent_kind != "main":
            return
        if self._delivery_task is not None and not self._delivery_task.done():
            return  # the running delivery looks again after each of its turns
        self._delivery_task = asyncio.get_running_loop().create_task(
            self.deliver_watch_results(), name=f"watch-delivery:{self.session_id}"
        )

    async def _queued_watch_results(self) -> list[tuple[int | None, str]]:
        if self.storage is None:
            return [(None, text) for text in self._unqueued_results]
        rows = await self.storage.pending_watch_results(self.session_id)
        return [(row["id"], row["text"]) for row in rows]

    async def deliver_watch_results(self) -> int:
        """Run each queued watch result as a synthetic user turn, oldest first, while the session
        is idle; returns how many ran. A result stays queued (in the database) until its message is
        stored, so a busy session, a cancelled turn or a killed process loses none.

        The depth guard: after MAX_WATCH_DEPTH watch turns in a row without a user message the rest
        wait (the user is told once) and go after the user's next message."""
        delivered = 0
        while not self._closing:
            if self._turn_lock.locked():
                break  # busy: the running turn's end looks again
            pending = await self._queued_watch_results()
            if not pending or self._turn_lock.locked() or self._closing:
                break
            if self._synthetic_streak >= MAX_WATCH_DEPTH:
                if not self._deferral_told:
                    self._deferral_told = True
                    self.ui.on_info(
                        f"{len(pending)} watch result(s) held back after {MAX_WATCH_DEPTH} watch turns in a row: "
                        f"delivered after your next message (first: {pending[0][1][:200]})"
                    )
                break
            result_id, text = pending[0]
            if result_id is None:
                self._unqueued_results.pop(0)
            self._synthetic_streak += 1
            await self.send(text, synthetic=True, delivers=result_id)
            delivered += 1
        return delivered

    def cancel(self) -> None:
        """Interrupt the running turn: streaming stops, running tools are killed."""
        if self._turn_task is not None and not self._turn_task.done():
            self._cancel_requested = True
            self._turn_task.cancel()

    async def _run_turn(self, text: str, *, attach: bool = False, delivers: int | None = None) -> None:
        ui = self.ui
        ui.on_turn_start(text)
        self.ctx.notify_sent_this_turn = 0
        if self.agent_kind == "main" and self.ctx.checkpoints is not None:
            self.ctx.checkpoints.begin_turn(" ".join(text.split())[:80])
        content = text
        if attach and "@" in text:  # @path mentions: the files' contents go with the message
            expanded = await asyncio.to_thread(expand_mentions, text, self.cwd)
            content = expanded.text
            if expanded.attachments:
                ui.on_info(expanded.notice())
        if self.agent_kind == "main" and self.mcp is not None:
            updates = self.mcp.take_resource_updates()
            if updates:
                await self._append(resource_updates_message(updates))
        await self._append({"role": "user", "content": content}, delivers=delivers)
        try:
            await self._loop()
            self._set_state(SessionState.IDLE)
        except asyncio.CancelledError:
            await self._finish_cancelled()
            self._set_state(SessionState.IDLE)
            ui.on_info("Turn cancelled.")
        except ProviderError as exc:
            await self._close_open_calls()
            self._set_state(SessionState.ERROR)
            ui.on_error(f"Model error: {exc}")
        except Exception as exc:  # never let a bug kill the front end
            log.exception("turn failed")
            await self._close_open_calls()
            self._set_state(SessionState.ERROR)
            ui.on_error(f"Internal error: {type(exc).__name__}: {exc}")
        finally:
            ui.on_turn_end()
            self._emit_status()

    async def _loop(self) -> None:
        rounds = 0
        while True:
            self._set_state(SessionState.THINKING)
            await self._tell_mode()
            reply = await self._stream_reply_with_fallback()
            self._partial = AssistantReply()
            await self._append(reply.message())
            await self._save_usage()
            if reply.content:
                self.last_answer = reply.content
            if not reply.tool_calls:
                return
            rounds += 1
            results: dict[str, ToolResult] = {}
            self._pending_results = results
            outcomes = await self.pipeline.run(reply.tool_calls, results)
            await self._store_outcomes(outcomes)
            await self._plan_gate(outcomes)
            if rounds >= self.max_tool_rounds:
                note = f"stopped after {rounds} tool rounds (limit {self.max_tool_rounds})"
                self.ui.on_info(note)
                self.last_answer = (self.last_answer + f"\n\n[{note}]").strip()
                return

    async def _tell_mode(self) -> None:
        """The permission mode changed since the model was last told (shift+tab, even mid-turn): a
        short note goes into the history before the next request. Appended, never in the system
        prompt, so the cached prefix of the conversation stays the same."""
        mode = self.policy.current_mode  # a sub-agent: its parent's, now
        if mode != self._told_mode and self.agent_kind != "plan":  # the plan agent is read-only anyway
            await self._append(mode_note(mode))
            self._told_mode = mode

    async def _stream_reply_with_fallback(self) -> AssistantReply:
        """A provider that rejects the native tool search request (a 400 naming it, or a 404/405:
        an OpenAI-compatible proxy without the Responses API) gets the client-side tier from then
        on, for this session; the request is sent again once."""
        deferred = self.deferred_tool_schemas()
        try:
            return await self._stream_reply()
        except ProviderError as exc:
            rejected = exc.status == 400 and _names_tool_search(str(exc))
            # only OpenAI's native search goes to another endpoint (/responses) than its chat
            missing = exc.status in (404, 405) and self.provider.name == "openai"
            if not deferred or not (rejected or missing):
                raise
            assert self._tool_search is not None
            self._tool_search.tier = "client"
            why = (
                "rejected native tool search"
                if rejected
                else "does not offer the API native tool search needs"
            )
            self.ui.on_info(
                f"The provider {why} ({exc}); using the client-side tool_search for the rest of this session."
            )
            self._emit_status()
            return await self._stream_reply()

    def _on_native_tool_search(self, event: ToolSearchDone) -> None:
        """The provider searched the deferred tools: the ones found join the visible set (as the
        client-side search does) and the user sees a compact card."""
        added: list[str] = []
        if self._tool_search is not None and not event.error:
            self._tool_search.expand(event.tool_names)
            added = event.tool_names
        found = "failed: " + event.error if event.error else f"{len(added)} found"
        item = PreparedItem(
            call_id=event.call_id or f"search_{uuid.uuid4().hex[:8]}",
            func_name="tool_search",
            args={"query": event.query},
            header=f"searched tools: {event.query} → {found}",
            needs_approval=False,
        )
        text = event.error or ("\n".join(added) if added else "no tools matched")
        self.ui.on_tools_prepared([item])
        self.ui.on_tool_result(item.call_id, item.func_name, ToolResult(text, is_error=bool(event.error)))

    async def _stream_reply(self) -> AssistantReply:
        cfg = self.config.model
        request = ModelRequest(
            messages=self.wire_messages(),
            tools=self.visible_tool_schemas(),
            deferred_tools=self.deferred_tool_schemas(),
            model=self.provider.model,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            reasoning_effort=cfg.reasoning_effort,
        )
        reply = self._partial = AssistantReply()
        pieces: dict[int, dict[str, str]] = {}
        content: list[str] = []
        reasoning: list[str] = []
        ui = self.ui
        response_completion = 0
        try:
            async for event in self.provider.stream(request):
                if isinstance(event, ContentDelta):
                    text = clean_text(event.text)
                    content.append(text)
                    reply.content += text
                    ui.on_content_token(text)
                elif isinstance(event, ReasoningDelta):
                    text = clean_text(event.text)
                    reasoning.append(text)
                    ui.on_reasoning_token(text)
                elif isinstance(event, ToolCallDelta):
                    acc = pieces.setdefault(event.index, {"id": "", "name": "", "arguments": ""})
                    if event.id:
                        acc["id"] = str(event.id)
                    if event.name and event.name != acc["name"]:
                        acc["name"] = event.name if not acc["name"] else acc["name"] + event.name
                    if event.arguments:
                        acc["arguments"] += str(event.arguments)
                elif isinstance(event, UsageUpdate):
                    # running totals for this response: keep the latest, add once at the end
                    if event.prompt_tokens:
                        self.prompt_tokens = event.prompt_tokens
                    response_completion = event.completion_tokens
                    self._emit_status()
                elif isinstance(event, StreamDone):
                    reply.finish_reason = event.finish_reason
                elif isinstance(event, ToolSearchDone):
                    self._on_native_tool_search(event)
                elif isinstance(event, ProviderContent):
                    reply.provider_content = event
        finally:
            self.completion_tokens += response_completion
            ui.on_message_end()
        reply.content = "".join(content)
        reply.reasoning = "".join(reasoning)
        calls = [
            ToolCall(id=p["id"], name=str(p["name"]), arguments=p["arguments"])
            for _, p in sorted(pieces.items(), key=lambda kv: kv[0] if isinstance(kv[0], int) else 0)
            if p["name"]
        ]
        reply.tool_calls = self._harden_calls(calls, cut_off=reply.finish_reason == "length")
        return reply

    def _harden_calls(self, calls: list[ToolCall], *, cut_off: bool) -> list[ToolCall]:
        """Tool calls as they may enter the history: unique ids, arguments within limits, repaired.

        The stored arguments are always a JSON object (local servers parse them when they render
        the history; APIs reject some): near-JSON is stored repaired, so later requests carry
        what actually ran; arguments that cannot be used are stored as ``{}`` and the call
        carries the refusal, which becomes its error result. When the response was cut off at
        max_tokens, incomplete arguments are refused, never repaired: a repaired cut-off
        command is a different command.
        """
        calls = unique_call_ids(calls, used_call_ids(self.messages))
        tools = self.config.tools
        limits = ArgumentLimits(max_chars=tools.max_argument_chars, max_depth=tools.max_argument_depth)
        for call in calls:
            spec = self.registry.get(call.name)
            parsed = check_arguments(
                call.arguments, spec.primary_key if spec else None, limits, repair=not cut_off
            )
            if parsed.args is None:
                call.refused = parsed.error
                if cut_off and not parsed.rejected:
                    call.refused = (
                        "the response was cut off (max_tokens) before this call's arguments were "
                        "complete; send the call again with shorter arguments"
                    )
                call.arguments = "{}"
                continue
            if parsed.repaired is not None:
                log.info("repaired the arguments of %s: %r -> %r", call.name, call.arguments, parsed.repaired)
            normalised = json.dumps(parsed.args, ensure_ascii=False)
            if parsed.repaired is not None or not _is_json_object(call.arguments):
                call.arguments = normalised
        return calls

    async def _commit_result(self, call_id: str, name: str, result: ToolResult) -> None:
        """Store one finished call's result at once: a crash later in the batch cannot lose it.

        The write starts now but is not waited for: the batch's last result would otherwise hold
        the next request for the write's round trip to the database thread (on a busy loop, tens
        of ms). Storage keeps the order: the next message stored (the model's reply) waits for it.
        """
        if call_id in self._committed:
            return
        self._committed.add(call_id)
        message = clean_value(tool_message(call_id, name, result))
        self.messages.append(message)
        if self.storage is not None:
            stored = self.storage.append_message_soon(self.session_id, message)
            stored.add_done_callback(functools.partial(_report_unstored, call_id))

    async def _store_outcomes(self, outcomes: list[ToolOutcome]) -> None:
        images: list[dict[str, Any]] = []
        for outcome in outcomes:
            if outcome.item.call_id not in self._committed:
                self._committed.add(outcome.item.call_id)
                await self._append(tool_message(outcome.item.call_id, outcome.item.func_name, outcome.result))
            if outcome.result.content_parts:
                images.append({"type": "text", "text": f"[{outcome.item.func_name} returned this content]"})
                images.extend(outcome.result.content_parts)
        if images:
            await self._append({"role": "user", "content": images})

    async def _finish_cancelled(self) -> None:
        """Make the stored conversation consistent after an interrupt."""
        last = self.messages[-1] if self.messages else None
        partial = self._partial
        if last is not None and last.get("role") == "user" and (partial.content or partial.tool_calls):
            text = (partial.content + "\n\n[interrupted by user]").strip()
            await self._append({"role": "assistant", "content": text})
        missing = _calls_without_results(self.messages)
        results = self._pending_results
        for call_id, name in missing:
            result = results.get(call_id) or cancelled_result(CANCELLED_TEXT)
            await self._append(tool_message(call_id, name, result))

    async def _close_open_calls(self) -> None:
        """After a failed turn, answer every tool call still without a result (in memory and stored).

        A call without a result makes every later request invalid; if storage itself is what
        failed, the history in memory is still made consistent.
        """
        results = self._pending_results
        for call_id, name in _calls_without_results(self.messages):
            result = results.get(call_id) or ToolResult(INTERRUPTED_TEXT, is_error=True)
            message = tool_message(call_id, name, result)
            try:
                await self._append(message)
            except Exception:
                log.exception("could not store the result of %s", call_id)
                if not any(m.get("tool_call_id") == call_id for m in self.messages):
                    self.messages.append(clean_value(message))

    async def _plan_gate(self, outcomes: list[ToolOutcome]) -> None:
        """After plan_agent, the user reviews the plan before the loop goes on. The review is the
        only question about a plan (plan_agent runs unasked); an annotation refines the plan into
        its next version, which the call's card and the next review show."""
        for outcome in outcomes:
            if outcome.item.func_name != "plan_agent" or outcome.result.status is not ToolStatus.OK:
                continue
            goal = str(outcome.item.args.get("goal") or outcome.item.args.get("prompt") or "")
            plan_text = outcome.result.text
            first_version = self.ctx.plan_version
            refined: ToolResult | None = None
            while True:
                path = self.ctx.plan_path()
                if await asyncio.to_thread(path.is_file):
                    plan_text = await asyncio.to_thread(path.read_text, encoding="utf-8")
                self._set_state(SessionState.ATTENTION)
                review = await self.ui.review_plan(plan_text, str(path), max(self.ctx.plan_version, 1))
                if review.action == "accept":
                    note = "The user reviewed and ACCEPTED this plan. Proceed with it."
                    break
                if review.action == "reject":
                    note = "The user REJECTED this plan. Do not carry it out; ask what they want instead."
                    break
                # annotate: refine the plan with the user's notes, then review again
                attempt = await self._refine_plan(goal, review.annotation)
                if attempt.is_error:
                    note = f"Refining the plan failed: {attempt.text}"
                    break
                refined = attempt
                self.ui.on_tool_result(outcome.item.call_id, outcome.item.func_name, refined)
            content = f"[plan review] {note}\n\nPlan file: {path}"
            if review.action == "accept" and self.ctx.plan_version != first_version:
                content += (
                    f"\n\nThe accepted plan is version {self.ctx.plan_version}, refined from the "
                    f"plan_agent result above with the user's annotations:\n\n{plan_text.strip()}"
                )
            message: dict[str, Any] = {"role": "user", "content": content, "kind": PLAN_REVIEW_KIND}
            if refined is not None:  # a resumed chat's card shows the latest version, as it did live
                message[PLAN_CARD_KEY] = tool_message(outcome.item.call_id, outcome.item.func_name, refined)
            await self._append(message)

    async def _refine_plan(self, goal: str, annotation: str) -> ToolResult:
        preparer = self.tools.preparers["plan_agent"]
        text = f"{goal}\n\nThe user annotated the previous plan; revise it accordingly:\n{annotation}"
        item = await preparer(self.ctx, f"plan_{uuid.uuid4().hex[:8]}", {"goal": text})
        if item.error or item.execute is None:
            return ToolResult(item.error or "plan_agent could not run", is_error=True)
        self.ui.on_info("Refining the plan with your annotation…")
        return await item.execute(ExecContext(item.call_id, lambda _l, _s: None))

    # --- sub-agents -----------------------------------------------------------------------
    async def _run_subagent(self, kind: str, prompt: str) -> ToolResult:
        if kind not in ("task", "plan"):
            return ToolResult(f"unknown sub-agent kind {kind!r}", is_error=True)
        sub_ui = SubagentUI(self.ui, kind)
        sub = ChatSession(
            self.config,
            self.provider,
            sub_ui,
            tools=self.tools,
            storage=None,
            mcp=self.mcp,
            cwd=self.cwd,
            agent_kind=kind,
            skip_permissions=self.policy.skip_permissions,
            allow=set(self.registry.TASK_AUTO_TOOLS),
            supports_vision=self.ctx.supports_vision,
            permissions=self.policy.store,
            instructions_dir=self._instructions_dir,
        )
        # the sub-agent follows this session's rules, answers and mode, read at each of its calls (a
        # shift+tab while it runs holds at once; its "always" answers hold here too)
        sub.policy.follow = self.policy
        sub.ctx.read_tracker = self.ctx.read_tracker
        sub.ctx.plan_session = self.ctx.plan_session or self.session_id  # a task agent reads the plan
        sub.ctx.checkpoints = self.ctx.checkpoints  # its edits belong to this turn: /undo reverts them
        await sub.start()
        try:
            await sub.send(prompt)
        finally:
            await sub.aclose()
        if sub_ui.errors:
            return ToolResult(f"the {kind} sub-agent failed: {sub_ui.errors[-1]}", is_error=True)
        return ToolResult(sub.last_answer or f"(the {kind} sub-agent produced no answer)")

    # --- history --------------------------------------------------------------------------
    def wire_messages(self) -> list[dict[str, Any]]:
        return [{"role": "system", "content": self.system_prompt}, *self.messages]

    async def _append(self, message: dict[str, Any], *, delivers: int | None = None) -> None:
        message = clean_value(message)
        self.messages.append(message)
        if self.storage is not None:
            await self.storage.append_message(self.session_id, message, delivers=delivers)

    async def plan_undo(self) -> UndoPlan | None:
        """What /undo would do: the newest turn's file changes, file by file (None: nothing to undo)."""
        checkpoints = self.ctx.checkpoints
        return await asyncio.to_thread(checkpoints.plan_undo) if checkpoints is not None else None

    async def undo(self, plan: UndoPlan) -> list[str]:
        """Put the files of ``plan`` back and tell the model (a note in the history)."""
        checkpoints = self.ctx.checkpoints
        if checkpoints is None:
            return []
        async with self._turn_lock:
            lines = await asyncio.to_thread(checkpoints.undo, plan)
            if any(step.applies for step in plan.steps):
                await self._append(undo_note(lines))
        return lines

    async def compact(self) -> str:
        """Replace the history by a model-written summary; returns the summary. Holds the turn
        lock: a watch result is not delivered into a history about to be replaced."""
        try:
            async with self._turn_lock:
                return await self._compact()
        finally:
            self.schedule_watch_delivery()

    async def _compact(self) -> str:
        if not self.messages:
            return ""
        request = ModelRequest(
            messages=[
                *self.wire_messages(),
                {
                    "role": "user",
                    "content": "Summarize our conversation so far for your own later use: the goals, "
                    "decisions, files touched, facts learned and open tasks. Be complete but concise.",
                },
            ],
            tools=[],
            model=self.provider.model,
        )
        parts: list[str] = []
        async for event in self.provider.stream(request):
            if isinstance(event, ContentDelta):
                parts.append(event.text)
        summary = "".join(parts).strip()
        if not summary:
            raise ProviderError("the model returned an empty summary; history left unchanged")
        compacted = [
            {"role": "user", "content": f"[summary of the earlier conversation]\n{summary}"},
            {"role": "assistant", "content": "Understood, I have the summary of our earlier conversation."},
        ]
        if self.storage is not None:  # one transaction; the history in memory follows only if it commits
            await self.storage.replace_messages(self.session_id, compacted)
        self.messages = compacted
        self._told_mode = Mode.DEFAULT  # the notes went with the old history: a mode is told again
        self.prompt_tokens = 0
        self._emit_status()
        return summary

    async def _load_usage(self) -> None:
        """A resumed session's token counts (the status bar goes on from them, not from 0)."""
        assert self.storage is not None
        try:
            usage = await self.storage.get_setting(_usage_key(self.session_id))
        except Exception:
            log.warning("could not read the token usage of %s", self.session_id, exc_info=True)
            return
        if isinstance(usage, dict):
            self.prompt_tokens = int(usage.get("prompt_tokens") or 0)
            self.completion_tokens = int(usage.get("completion_tokens") or 0)

    async def _save_usage(self) -> None:
        if self.storage is None or not self.session_id or self.agent_kind != "main":
            return
        usage = {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}
        try:
            await self.storage.set_setting(_usage_key(self.session_id), usage)
        except Exception:  # a counter is not worth failing a turn for
            log.warning("could not store the token usage of %s", self.session_id, exc_info=True)

    def clear(self) -> None:
        """Forget the in-memory history (the stored session keeps it)."""
        self.messages = []
        self._told_mode = Mode.DEFAULT

    # --- status ---------------------------------------------------------------------------
    def _set_state(self, state: SessionState) -> None:
        self.state = state
        self.ui.on_state(state)

    def status(self) -> StatusInfo:
        connected, total = self.mcp.connected_count() if self.mcp is not None else (0, 0)
        return StatusInfo(
            model=self.provider.model,
            provider=self.provider.name,
            state=self.state,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            context_window=self.provider.context_window or self.config.model.context_window,
            mcp_connected=connected,
            mcp_total=total,
            session_id=self.session_id,
            mode=self.policy.mode.value,
            sandbox=self.sandbox_label,
        )

    def set_mode(self, mode: Mode) -> None:
        """The permission mode for the calls from now on (shift+tab in the app)."""
        self.policy.mode = mode
        self._emit_status()

    def _emit_status(self) -> None:
        self.ui.on_status(self.status())


# --- helpers -------------------------------------------------------------------------------


def _usage_key(session_id: str) -> str:
    return f"usage:{session_id}"


def _names_tool_search(message: str) -> bool:
    lowered = message.lower()
    return any(word in lowered for word in ("tool_search", "defer_loading", "tool search", "tool_reference"))


RESOURCE_UPDATE_MAX_CHARS = 20_000  # of one changed resource's new contents sent to the model


def resource_updates_message(updates: list[ResourceUpdate]) -> dict[str, Any]:
    """A user-role note (marked, so a resumed chat shows it as a notice) with the new contents of
    the subscribed resources that changed, each bounded."""
    parts = ["[MCP resources you read have changed since; their current contents follow.]"]
    for update in updates:
        text = update.text
        if len(text) > RESOURCE_UPDATE_MAX_CHARS:
            text = text[:RESOURCE_UPDATE_MAX_CHARS] + f"\n[... cut: {len(update.text)} characters in all]"
        state = ' error="true"' if update.is_error else ""
        parts.append(f'<resource uri="{update.uri}" server="{update.server}"{state}>\n{text}\n</resource>')
    return {"role": "user", "content": "\n\n".join(parts), "kind": RESOURCE_UPDATE_KIND}


def _report_unstored(call_id: str, stored: asyncio.Future[int]) -> None:
    if not stored.cancelled() and (exc := stored.exception()) is not None:
        log.error("could not store the result of %s: %s", call_id, exc)


def tool_message(call_id: str, name: str, result: ToolResult) -> dict[str, Any]:
    """The stored tool message; how the call ended travels with it for a resumed chat's cards."""
    msg: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "name": name, "content": result.text}
    if result.is_error:
        msg["is_error"] = True
    if result.status not in (ToolStatus.OK, ToolStatus.ERROR):
        msg["status"] = str(result.status)
    if result.process is not None:
        msg["process"] = dataclasses.asdict(result.process)
    return msg


def _calls_without_results(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
    missing: list[tuple[str, str]] = []
    for m in messages:
        for call in m.get("tool_calls") or []:
            if call.get("id") not in answered:
                missing.append((call.get("id", ""), (call.get("function") or {}).get("name", "")))
    return missing


def repair_history(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give every tool call a result (a process killed mid-turn leaves some without)."""
    answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
    repaired: list[dict[str, Any]] = []
    i = 0
    while i < len(messages):
        msg = messages[i]
        repaired.append(msg)
        i += 1
        calls = msg.get("tool_calls") or []
        if not calls:
            continue
        while i < len(messages) and messages[i].get("role") == "tool":
            repaired.append(messages[i])
            i += 1
        for call in calls:
            if call["id"] not in answered:
                name = call.get("function", {}).get("name", "")
                repaired.append(
                    {
                        "role": "tool",
                        "tool_call_id": call["id"],
                        "name": name,
                        "content": INTERRUPTED_TEXT,
                        "is_error": True,
                        "status": str(ToolStatus.CANCELLED),
                    }
                )
    return repaired


async def _memory_section(memories: MemorySource, session_id: str) -> str:
    try:
        return await memories.prompt_section(session_id)
    except Exception:  # memories are a nicety; never block a session on them
        log.exception("could not load memories")
        return ""


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except (ValueError, RecursionError):
        return False


def describe_args(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), indent=2)
    except (json.JSONDecodeError, TypeError):
        return arguments
