"""The tool registry derives the spec's tool sets from tools/*.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.tool_files import BUILTIN_TOOL_COUNT
from turnstone_tui.core.registry import METADATA_KEYS, ToolDefinitionError, default_registry, load_registry

# The spec's summary table (plus diff_file, described in its own section: agent + task_agent, read-only).
SUMMARY = {
    # name: (auto_approve, agent, task_agent, primary_key)
    "bash": (False, False, True, "command"),
    "read_file": (True, True, True, "path"),
    "write_file": (False, False, True, "content"),
    "edit_file": (False, False, True, "old_string"),
    "diff_file": (True, True, True, "path_a"),
    "search": (True, True, True, "query"),
    "math": (False, True, True, "code"),
    "man": (True, True, True, "page"),
    "web_fetch": (False, True, True, "url"),
    "web_search": (False, True, True, "query"),
    "task_agent": (False, False, False, "prompt"),
    "plan_agent": (False, False, False, "goal"),
    "memory": (True, False, False, "name"),
    "recall": (True, False, False, "query"),
    "notify": (True, True, True, "message"),
    "watch": (False, False, False, "command"),
    "read_resource": (False, True, True, "uri"),
    "use_prompt": (False, True, True, "name"),
    "skill": (False, False, False, "name"),
}


def names(schemas: list[dict]) -> set[str]:
    return {s["function"]["name"] for s in schemas}


def test_derived_sets_match_the_spec_summary_table() -> None:
    reg = default_registry()
    assert len(reg.TOOLS) == BUILTIN_TOOL_COUNT
    assert reg.BUILTIN_TOOL_NAMES == frozenset(SUMMARY)
    assert names(reg.AGENT_TOOLS) == {n for n, v in SUMMARY.items() if v[1]}
    assert names(reg.TASK_AGENT_TOOLS) == {n for n, v in SUMMARY.items() if v[2]}
    assert reg.AGENT_AUTO_TOOLS == {n for n, v in SUMMARY.items() if v[0]}
    assert reg.TASK_AUTO_TOOLS == reg.AGENT_AUTO_TOOLS
    assert reg.PRIMARY_KEY_MAP == {n: v[3] for n, v in SUMMARY.items()}
    assert len(reg.AGENT_TOOLS) == 10 and len(reg.TASK_AGENT_TOOLS) == 13
    # plan sub-agents are read-only: nothing that writes or runs commands
    assert not names(reg.AGENT_TOOLS) & {"bash", "write_file", "edit_file", "task_agent", "plan_agent"}


def test_schemas_sent_to_models_carry_no_metadata_keys() -> None:
    for schema in default_registry().TOOLS:
        assert set(schema) == {"type", "function"}
        assert set(schema["function"]) == {"name", "description", "parameters"}
        assert not set(METADATA_KEYS) & set(schema["function"])
        assert schema["function"]["parameters"]["type"] == "object"


def _write(dir_: Path, name: str, data: object | str) -> Path:
    path = dir_ / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


GOOD = {"name": "t1", "description": "d", "parameters": {"type": "object", "properties": {"x": {}}}}


def test_malformed_json_is_an_error_naming_the_file(tmp_path: Path) -> None:
    bad = _write(tmp_path, "broken.json", '{"name": "x", ')
    with pytest.raises(ToolDefinitionError, match="broken.json: invalid JSON"):
        load_registry([bad])


def test_duplicate_names_are_an_error_naming_both_files(tmp_path: Path) -> None:
    a = _write(tmp_path, "a.json", GOOD)
    b = _write(tmp_path, "b.json", GOOD)
    with pytest.raises(ToolDefinitionError) as err:
        load_registry([a, b])
    assert "b.json" in str(err.value) and "a.json" in str(err.value) and "duplicate" in str(err.value)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": "t", "description": "d"}, "missing key"),
        ({**GOOD, "parameters": {"type": "array"}}, "parameters"),
        ({**GOOD, "agent": "yes"}, "'agent' must be true or false"),
        ({**GOOD, "primary_key": "nope"}, "primary_key 'nope'"),
        ({**GOOD, "colour": 1}, "unknown key"),
        ([1, 2], "expected a JSON object"),
    ],
)
def test_invalid_definitions_are_rejected(tmp_path: Path, data: object, message: str) -> None:
    path = _write(tmp_path, "t.json", data)
    with pytest.raises(ToolDefinitionError, match=message) as err:
        load_registry([path])
    assert str(path) in str(err.value)


def test_every_builtin_tool_and_tool_search_has_a_preparer() -> None:
    from turnstone_tui.executors.catalog import builtin_preparers

    assert set(builtin_preparers()) == set(SUMMARY) | {"tool_search"}


def test_the_lazy_tool_table_names_each_tool_where_its_module_prepares_it() -> None:
    """TOOL_FAMILIES (read without importing the executors) agrees with the modules' PREPARERS,
    and every lookup finds a preparer."""
    from turnstone_tui.executors.catalog import (
        FAMILY_MODULES,
        TOOL_FAMILIES,
        builtin_preparers,
        family_preparers,
    )

    declared = {(name, family) for family in FAMILY_MODULES for name in family_preparers(family)}
    assert declared == set(TOOL_FAMILIES.items())
    table = builtin_preparers()
    assert all(callable(table[name]) for name in table)
    assert "no_such_tool" not in table and table.get("no_such_tool") is None
