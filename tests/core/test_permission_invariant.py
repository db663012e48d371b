"""Property: with permission rules and modes, the calls that run are exactly the ones a rule or the
mode allowed plus the ones the user approved; a call a deny rule matches never runs, and nothing
runs in plan mode but read-only tools.

Random batches of real bash commands (simple commands joined by ``;``, ``&&``, ``|``) and
write_file calls, random allow/ask/deny rules (user and project files), a random mode and random
answers drive a real ChatSession (OpenAI SDK -> scripted model server, real tools, real SQLite).
The expected verdict of each call comes from an oracle written here from the README's rules, over
the parts the test generated (not from bashlex): every part allowed -> runs; any part denied ->
refused; otherwise asked.
"""

from __future__ import annotations

import asyncio
import fnmatch
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.model_server import Reply, ScriptedModelServer
from tests.helpers.recording_ui import RecordingUI
from turnstone_tui.config import Config
from turnstone_tui.core.permission_store import PermissionStore
from turnstone_tui.core.permissions import Mode, parse_rule
from turnstone_tui.core.types import ApprovalDecision, PreparedItem, ToolStatus
from turnstone_tui.providers.factory import create_provider
from turnstone_tui.runtime import build_session

pytestmark = pytest.mark.timeout(900)

PARTS = [("echo", "a"), ("echo", "b"), ("echo", "a", "b"), ("true",), ("printf", "x")]
JOINERS = ["; ", " && ", " | "]
# (effect, rule, what the oracle matches: ("cmd", words, prefix) or ("path", glob))
RULES = [
    ("allow", "bash(echo a)", ("cmd", ("echo", "a"), False)),
    ("allow", "bash(echo:*)", ("cmd", ("echo",), True)),
    ("allow", "bash(true)", ("cmd", ("true",), False)),
    ("deny", "bash(echo b:*)", ("cmd", ("echo", "b"), True)),
    ("ask", "bash(echo a b)", ("cmd", ("echo", "a", "b"), False)),
    ("deny", "bash(printf:*)", ("cmd", ("printf",), True)),
    ("allow", "write_file(sub/**)", ("path", "sub/*")),
    ("deny", "write_file(sub/secret-*)", ("path", "sub/secret-*")),
    ("ask", "write_file(top-*)", ("path", "top-*")),
]
FILES = ["sub/{}.txt", "sub/secret-{}.txt", "top-{}.txt", "other-{}.txt"]

bash_calls = st.lists(st.sampled_from(range(len(PARTS))), min_size=1, max_size=3).flatmap(
    lambda parts: st.tuples(st.just(parts), st.sampled_from(JOINERS))
)
calls = st.one_of(
    bash_calls.map(lambda c: ("bash", c)),
    st.sampled_from(range(len(FILES))).map(lambda f: ("write_file", f)),
)


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedModelServer]:
    srv = ScriptedModelServer().start()
    try:
        yield srv
    finally:
        srv.stop()


def _matches(target: tuple, kind: str, value: object) -> bool:
    if target[0] != kind:
        return False
    if kind == "cmd":
        words, prefix = target[1], target[2]
        assert isinstance(value, tuple)
        return value[: len(words)] == words if prefix else value == words
    return fnmatch.fnmatchcase(str(value), target[1])


def oracle(kind: str, units: list[object], rules: list[int], mode: Mode) -> str:
    """ "run", "ask" or "refuse" for one call whose parts (bash) or path (write_file) are ``units``."""
    unit_kind = "cmd" if kind == "bash" else "path"
    chosen = [RULES[i] for i in rules]

    def any_rule(effect: str) -> bool:
        return any(e == effect and _matches(t, unit_kind, u) for e, _, t in chosen for u in units)

    if any_rule("deny"):
        return "refuse"
    if mode is Mode.PLAN:
        return "refuse"  # neither bash nor write_file is read-only
    if any_rule("ask"):
        return "ask"
    if all(any(e == "allow" and _matches(t, unit_kind, u) for e, _, t in chosen) for u in units):
        return "run"
    if kind == "write_file" and mode in (Mode.ACCEPT_EDITS, Mode.FULL_AUTO):
        return "run"  # inside the workspace; bash is never sandboxed here (the sandbox is off)
    return "ask"


async def _run(
    server: ScriptedModelServer,
    batch: list[tuple[str, object]],
    rules: list[int],
    scopes: list[str],
    mode: Mode,
    approve: bool,
    skipped: frozenset[int],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        work = root / "work"
        (work / "sub").mkdir(parents=True)
        cfg = Config()
        cfg.model.provider = "openai"
        cfg.api.base_url = server.openai_base_url
        cfg.api.api_key = "test-key"
        cfg.model.name = "test-model"
        cfg.sandbox.mode = "off"
        store = PermissionStore(root / "user" / "permissions.toml", work)
        for index, scope in zip(rules, scopes, strict=False):
            effect, text, _ = RULES[index]
            store.add(parse_rule(text, effect, scope))

        script: list[tuple[str, dict, str]] = []
        expected: dict[str, tuple[str, list[object]]] = {}
        for i, (kind, spec) in enumerate(batch):
            call_id = f"call_{i}"
            if kind == "bash":
                parts, joiner = spec  # type: ignore[misc]
                words = [PARTS[p] for p in parts]
                script.append(("bash", {"command": joiner.join(" ".join(w) for w in words)}, call_id))
                expected[call_id] = ("bash", list(words))
            else:
                path = FILES[spec].format(call_id)  # type: ignore[index]
                script.append(("write_file", {"path": path, "content": "x"}, call_id))
                expected[call_id] = ("write_file", [path])
        server.script([Reply.tools(script), Reply.text("done")])

        def answer(items: list[PreparedItem]) -> ApprovalDecision:
            skip = {items[i].call_id for i in skipped if i < len(items)}
            return ApprovalDecision(approved=approve, per_call={cid: False for cid in skip})

        ui = RecordingUI(approvals=[answer])
        session = build_session(cfg, create_provider(cfg), ui, cwd=work, permissions=store)
        session.policy.mode = mode
        await session.start()
        try:
            await session.send("go")
        finally:
            await session.aclose()

        asked = {item.call_id for request in ui.approval_requests for item in request}
        asked_list = [item.call_id for request in ui.approval_requests for item in request]
        skipped_ids = {asked_list[i] for i in skipped if i < len(asked_list)}
        for call_id, (kind, units) in expected.items():
            verdict = oracle(kind, units, rules[: len(scopes)], mode)
            ran = call_id in ui.started
            assert call_id in ui.results, call_id  # every call gets its one result
            if verdict == "run":
                assert ran and call_id not in asked, (call_id, verdict, units)
            elif verdict == "ask":
                assert call_id in asked, (call_id, verdict, units)
                assert ran == (approve and call_id not in skipped_ids), (call_id, units)
            else:
                assert not ran and call_id not in asked, (call_id, verdict, units)
                result = ui.results[call_id][1]
                assert result.status is ToolStatus.DENIED
                assert "denied by the rule" in result.text or "plan mode" in result.text
            if kind == "write_file":
                assert (work / str(units[0])).exists() == ran


@settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    batch=st.lists(calls, min_size=1, max_size=4),
    rules=st.lists(st.sampled_from(range(len(RULES))), max_size=5, unique=True),
    scopes=st.lists(st.sampled_from(["user", "project"]), min_size=5, max_size=5),
    mode=st.sampled_from([Mode.DEFAULT, Mode.DEFAULT, Mode.ACCEPT_EDITS, Mode.PLAN, Mode.FULL_AUTO]),
    approve=st.booleans(),
    skipped=st.frozensets(st.integers(0, 3), max_size=1),
)
def test_what_runs_is_what_a_rule_or_the_mode_allowed_or_the_user_approved(
    server: ScriptedModelServer,
    batch: list[tuple[str, object]],
    rules: list[int],
    scopes: list[str],
    mode: Mode,
    approve: bool,
    skipped: frozenset[int],
) -> None:
    asyncio.run(_run(server, batch, rules, scopes, mode, approve, skipped))
