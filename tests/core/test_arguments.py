"""Phase 1 argument parsing: JSON, the primary_key fallback, validation."""

from __future__ import annotations

from turnstone_tui.core.arguments import check_arguments, parse_arguments, validate_arguments
from turnstone_tui.core.registry import default_registry


def test_json_object_is_parsed() -> None:
    assert parse_arguments('{"command": "ls"}', "command") == ({"command": "ls"}, None)


def test_bare_string_maps_to_the_primary_key() -> None:
    assert parse_arguments("ls -la", "command") == ({"command": "ls -la"}, None)
    assert parse_arguments('"ls -la"', "command") == ({"command": "ls -la"}, None)


def test_code_fenced_json_is_accepted() -> None:
    assert parse_arguments('```json\n{"path": "a.txt"}\n```', "path") == ({"path": "a.txt"}, None)


def test_garbage_without_primary_key_is_a_clear_error() -> None:
    args, error = parse_arguments("{not json", None)
    assert args is None and error is not None and "not valid JSON" in error
    # near-JSON is repaired (a cut-off value becomes empty), unless repair is off (cut-off responses)
    assert parse_arguments('{"command": ', "command") == ({"command": ""}, None)
    parsed = check_arguments('{"command": ', "command", repair=False)
    assert parsed.args is None and "not valid JSON" in (parsed.error or "")
    args, error = parse_arguments("[1, 2]", "command")
    assert args is None and "must be a JSON object" in (error or "")


def test_empty_arguments_are_an_empty_object() -> None:
    assert parse_arguments("", "command") == ({}, None)


def test_validation_reports_missing_and_wrong_types() -> None:
    schema = default_registry().get("bash").parameters
    _, error = validate_arguments({}, schema)
    assert error is not None and "'command' is a required property" in error
    args, error = validate_arguments({"command": "ls", "timeout": "30"}, schema)
    assert error is None and args["timeout"] == 30  # small models send numbers as strings
    _, error = validate_arguments({"command": "ls", "timeout": 9999}, schema)
    assert error is not None and "timeout" in error
