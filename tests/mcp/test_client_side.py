"""Elicitation, sampling, roots, progress and logs against a real MCPServer that asks for them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.mcp_servers import asking_server, wait_for
from turnstone_tui.mcp.asks import (
    ElicitationAnswer,
    ElicitationRequest,
    NoUserAsks,
    SampleResult,
    SamplingRequest,
)
from turnstone_tui.mcp.client_side import ClientSide
from turnstone_tui.mcp.elicit_form import initial_value, parse_schema, validate
from turnstone_tui.mcp.manager import McpEvent, McpManager, ServerState

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def real_tmp(tmp_path: Path) -> Path:
    """tmp_path with symlinks resolved (roots are sent resolved)."""
    return Path(os.path.realpath(tmp_path))


class ScriptedUser:
    """Answers like a user would, and remembers what it was shown."""

    def __init__(self, form: dict[str, Any] | None = None, action: str = "accept") -> None:
        self.form = form
        self.action = action
        self.approve = True
        self.edit: str | None = None
        self.deny_result = False
        self.elicitations: list[ElicitationRequest] = []
        self.samplings: list[SamplingRequest] = []
        self.reviewed: list[SampleResult] = []

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        self.elicitations.append(request)
        if self.action != "accept":
            return ElicitationAnswer(self.action)  # type: ignore[arg-type]
        if request.mode == "url":
            return ElicitationAnswer("accept")
        values = {f.name: initial_value(f) for f in request.fields}
        values.update(self.form or {})
        content, errors = validate(request.fields, values)
        assert not errors, errors
        return ElicitationAnswer("accept", content)

    async def approve_sampling(self, request: SamplingRequest) -> bool:
        self.samplings.append(request)
        return self.approve

    async def review_sample(self, request: SamplingRequest, result: SampleResult) -> str | None:
        self.reviewed.append(result)
        if self.deny_result:
            return None
        return self.edit if self.edit is not None else result.text


async def _sampler(request: SamplingRequest) -> SampleResult:
    return SampleResult(f"short: {request.messages[-1].text[:12]}", "scripted-model")


async def _manager(make_manager, user: Any, **kw: Any) -> McpManager:
    manager: McpManager = make_manager([asking_server()], **kw)
    manager.set_asks(user)
    manager.set_sampler(_sampler)
    await manager.start()
    await manager.wait_ready(30)
    status = manager.status("asking")
    assert status is not None and status.state is ServerState.CONNECTED, status
    return manager


async def test_form_elicitation_round_trip_with_defaults(make_manager) -> None:
    user = ScriptedUser(form={"email": "ada@example.com", "guests": "4"})
    manager = await _manager(make_manager, user)
    result = await manager.call_tool("mcp__asking__book_table", {})
    assert result.text == "booked: email='ada@example.com', guests=4, name='Ada', outside=True, time='20'"
    (shown,) = user.elicitations
    assert shown.server == "asking" and shown.message == "Book a table" and shown.mode == "form"
    by_name = {f.name: f for f in shown.fields}
    assert by_name["time"].options == (("18", "6 pm"), ("20", "8 pm"))
    assert by_name["guests"].minimum == 1 and by_name["guests"].maximum == 8


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_form_declined_or_cancelled(make_manager, action: str) -> None:
    manager = await _manager(make_manager, ScriptedUser(action=action))
    assert (await manager.call_tool("mcp__asking__book_table", {})).text == f"booking {action}"


async def test_headless_declines_forms_and_refuses_sampling(make_manager) -> None:
    manager = await _manager(make_manager, NoUserAsks())
    assert (await manager.call_tool("mcp__asking__book_table", {})).text == "booking decline"
    refused = await manager.call_tool("mcp__asking__summarize", {"text": "long text"})
    assert "sampling failed" in refused.text
    assert "running without an interactive user to approve it" in refused.text


async def test_url_elicitation_asks_then_opens(make_manager) -> None:
    opened: list[str] = []
    user = ScriptedUser()
    manager = await _manager(make_manager, user)
    manager.client_side.open_url = opened.append
    result = await manager.call_tool("mcp__asking__open_page", {"url": "https://example.com/sign"})
    assert result.text == "page accept"
    assert user.elicitations[0].mode == "url" and user.elicitations[0].url == "https://example.com/sign"
    assert opened == ["https://example.com/sign"]

    user.action = "decline"
    assert (await manager.call_tool("mcp__asking__open_page", {"url": "https://x.test/"})).text == (
        "page decline"
    )
    assert opened == ["https://example.com/sign"]  # declined: nothing opened


async def test_sampling_approved_reviewed_edited_denied(make_manager) -> None:
    user = ScriptedUser()
    manager = await _manager(make_manager, user)
    result = await manager.call_tool("mcp__asking__summarize", {"text": "a very long story"})
    assert result.text == "summary (scripted-model): short: a very long "
    (request,) = user.samplings
    assert request.server == "asking" and request.max_tokens == 77
    assert request.system_prompt == "Summarize in one line."
    assert [(m.role, m.text) for m in request.messages] == [("user", "a very long story")]
    assert user.reviewed[0].text == "short: a very long "

    user.edit = "edited by the user"
    result = await manager.call_tool("mcp__asking__summarize", {"text": "again"})
    assert result.text == "summary (scripted-model): edited by the user"

    user.edit, user.deny_result = None, True
    denied = await manager.call_tool("mcp__asking__summarize", {"text": "again"})
    assert "sampling failed" in denied.text and "denied the sampled answer" in denied.text

    user.approve = False
    reviewed_before = len(user.reviewed)
    rejected = await manager.call_tool("mcp__asking__summarize", {"text": "again"})
    assert "rejected the sampling request" in rejected.text
    assert len(user.reviewed) == reviewed_before  # the model never ran


async def test_roots_are_cwd_plus_configured_and_change(make_manager, real_tmp: Path) -> None:
    tmp_path = real_tmp
    extra = tmp_path / "extra"
    extra.mkdir()
    manager: McpManager = make_manager([asking_server()])
    manager.client_side.set_roots([tmp_path, extra])
    await manager.start()
    await manager.wait_ready(30)
    listed = (await manager.call_tool("mcp__asking__show_roots", {})).text.splitlines()
    assert listed == [tmp_path.as_uri(), extra.as_uri()]
    await manager.set_roots([extra])
    assert (await manager.call_tool("mcp__asking__show_roots", {})).text == extra.as_uri()


def test_roots_from_config_include_the_working_directory(tmp_path: Path, monkeypatch) -> None:
    from turnstone_tui.config import Config

    monkeypatch.chdir(tmp_path)
    cfg = Config()
    cfg.mcp.roots = [str(tmp_path / "more")]
    manager = McpManager.from_config(cfg)
    assert manager.roots == (tmp_path.resolve(), (tmp_path / "more").resolve())


async def test_progress_and_logs(make_manager) -> None:
    manager = await _manager(make_manager, ScriptedUser(), log_level="info")
    events: list[McpEvent] = []
    manager.add_listener(events.append)
    seen: list[tuple[float, float | None, str | None]] = []
    result = await manager.call_tool(
        "mcp__asking__steps", {"count": 3}, on_progress=lambda p, t, m: seen.append((p, t, m))
    )
    assert result.text == "did 3 steps"
    assert seen == [(1, 3, "step 1 of 3"), (2, 3, "step 2 of 3"), (3, 3, "step 3 of 3")]
    await wait_for(lambda: len(manager.logs("asking")) == 3)
    assert [(e.level, e.text) for e in manager.logs("asking")] == [
        ("info", "starting the steps"),
        ("warning", "steps almost done"),
        ("error", "a step complained"),
    ]
    assert any(e.kind == "log" and e.log.level == "error" for e in events)
    progress = [e for e in events if e.kind == "progress"]
    assert progress and progress[-1].status.progress == ()  # cleared when the call ended
    assert any(p.describe() == "67%  step 2 of 3" for e in progress for p in e.status.progress)


async def test_log_level_from_config_filters(make_manager) -> None:
    manager = await _manager(make_manager, ScriptedUser(), log_level="error")
    await manager.call_tool("mcp__asking__steps", {"count": 1})
    await wait_for(lambda: len(manager.logs("asking")) >= 1)
    assert [e.level for e in manager.logs("asking")] == ["error"]


def test_log_buffer_is_bounded() -> None:
    import mcp_types as mt

    side = ClientSide()
    for i in range(2000):
        side.add_log("s", mt.LoggingMessageNotificationParams(level="info", data=f"line {i}"))
    kept = side.logs["s"]
    assert len(kept) == 500 and kept[-1].text == "line 1999"


# --- the form model ---------------------------------------------------------------------------


def test_schema_fields_and_validation() -> None:
    schema = {
        "type": "object",
        "properties": {
            "site": {"type": "string", "format": "uri"},
            "day": {"type": "string", "format": "date", "title": "Day"},
            "ratio": {"type": "number", "minimum": 0, "maximum": 1},
            "colour": {"type": "string", "enum": ["red", "blue"], "enumNames": ["Red", "Blue"]},
            "tags": {
                "type": "array",
                "items": {"type": "string", "enum": ["a", "b", "c"]},
                "maxItems": 2,
                "default": ["a"],
            },
        },
        "required": ["day"],
    }
    fields = parse_schema(schema)
    assert [f.kind for f in fields] == ["string", "string", "number", "enum", "multi"]
    assert fields[3].options == (("red", "Red"), ("blue", "Blue"))
    assert initial_value(fields[4]) == ["a"]
    assert fields[2].hint() == "number, 0 to 1"
    content, errors = validate(
        fields, {"site": "not a url", "day": "", "ratio": "1.5", "colour": "green", "tags": ["a", "b", "c"]}
    )
    assert errors == {
        "site": "not a URI (e.g. https://example.com)",
        "day": "required",
        "ratio": "must be at most 1",
        "colour": "not one of the choices",
        "tags": "choose at most 2",
    }
    content, errors = validate(
        fields, {"site": "https://a.b", "day": "2026-12-04", "ratio": "0.5", "colour": "red", "tags": []}
    )
    assert errors == {} and content == {
        "site": "https://a.b",
        "day": "2026-12-04",
        "ratio": 0.5,
        "colour": "red",
    }


async def test_sampling_runs_on_the_current_model(model_server, real_tmp: Path) -> None:
    """The runtime wires sampling to the user's provider: the scripted model answers the server."""
    from tests.helpers.model_server import Reply
    from tests.helpers.scripted_config import scripted_config
    from turnstone_tui.runtime import Runtime, RuntimeOptions

    tmp_path = real_tmp
    config = scripted_config(model_server.openai_base_url, tmp_path / "t.db")
    server = asking_server()
    config.mcp.servers = {"asking": {"command": server.command, "args": list(server.args)}}
    runtime = await Runtime.create(config, options=RuntimeOptions(cwd=tmp_path, start_watches=False))
    try:
        user = ScriptedUser()
        runtime.mcp.set_asks(user)
        await runtime.mcp.wait_ready(30)
        model_server.script([Reply.text("It is about a cat.")])
        result = await runtime.mcp.call_tool("mcp__asking__summarize", {"text": "The cat sat."})
        assert result.text == "summary (scripted-model): It is about a cat."
        body = model_server.model_requests()[-1].body
        assert body["messages"] == [
            {"role": "system", "content": "Summarize in one line."},
            {"role": "user", "content": "The cat sat."},
        ]
        assert body.get("max_tokens", body.get("max_completion_tokens")) == 77
        assert runtime.mcp.roots == (tmp_path,)
    finally:
        await runtime.aclose()


async def test_instructions_annotations_and_read_only_opt_in(make_manager, tmp_path: Path) -> None:
    from turnstone_tui.config import Config
    from turnstone_tui.core.protocol import NullUI
    from turnstone_tui.core.registry import default_registry
    from turnstone_tui.core.tools import ToolContext
    from turnstone_tui.executors.mcp_tools import prepare_mcp_tool

    manager = await _manager(make_manager, ScriptedUser())
    catalog = manager.system_catalog()
    assert '<server name="asking">\nasks its client for input, samples and roots\n</server>' in catalog

    config = Config()
    ctx = ToolContext(
        config=config, registry=default_registry(), cwd=tmp_path, session_id="s", ui=NullUI(), mcp=manager
    )
    roots = await prepare_mcp_tool(ctx, "c1", "mcp__asking__show_roots", {})
    steps = await prepare_mcp_tool(ctx, "c2", "mcp__asking__steps", {"count": 1})
    plain = await prepare_mcp_tool(ctx, "c3", "mcp__asking__summarize", {"text": "x"})
    assert roots.header == "mcp: asking › show_roots  [read-only]" and roots.needs_approval
    assert steps.header == "mcp: asking › steps  [destructive]" and steps.needs_approval
    assert plain.header == "mcp: asking › summarize"  # no annotations: no claim shown

    config.mcp.auto_approve_read_only = True  # the user opts in: read-only tools run without asking
    assert not (await prepare_mcp_tool(ctx, "c4", "mcp__asking__show_roots", {})).needs_approval
    assert (await prepare_mcp_tool(ctx, "c5", "mcp__asking__steps", {"count": 1})).needs_approval
