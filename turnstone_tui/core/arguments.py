"""Phase 1 helpers: parse a tool call's raw arguments and check them against the tool's schema."""

from __future__ import annotations

import json
import re
from typing import Any

from jsonschema import Draft202012Validator

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.S)


def parse_arguments(raw: str | None, primary_key: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """Return (args, None) or (None, error message).

    Accepts a JSON object; a JSON object wrapped in a code fence; and, when the tool has a
    primary_key, a bare string (JSON string or plain text) mapped to that parameter.
    """
    text = (raw or "").strip()
    if not text:
        return {}, None
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        if primary_key and not text.startswith(("{", "[")):
            return {primary_key: raw}, None
        snippet = text if len(text) <= 120 else text[:117] + "..."
        return None, f"arguments are not valid JSON ({exc.msg} at position {exc.pos}): {snippet}"
    if isinstance(value, dict):
        return value, None
    if isinstance(value, str) and primary_key:
        return {primary_key: value}, None
    return None, f"arguments must be a JSON object, got {type(value).__name__}: {text[:120]}"


def _coerce_scalars(args: dict[str, Any], properties: dict[str, Any]) -> dict[str, Any]:
    """Small models send "5" for integers and "true" for booleans; accept those."""
    out = dict(args)
    for key, value in args.items():
        expected = properties.get(key, {}).get("type")
        if not isinstance(value, str):
            continue
        if expected == "integer" and re.fullmatch(r"-?\d+", value.strip()):
            out[key] = int(value)
        elif expected == "number":
            try:
                out[key] = float(value)
            except ValueError:
                pass
        elif expected == "boolean" and value.strip().lower() in ("true", "false"):
            out[key] = value.strip().lower() == "true"
    return out


def validate_arguments(args: dict[str, Any], schema: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """Coerce obvious scalar mismatches, then validate; returns (args, error or None)."""
    props = schema.get("properties", {})
    args = _coerce_scalars(args, props)
    validator = Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(args), key=lambda e: list(e.path))
    if not errors:
        return args, None
    messages = []
    for err in errors[:3]:
        where = ".".join(str(p) for p in err.path) or "arguments"
        messages.append(f"{where}: {err.message}")
    return args, "invalid arguments: " + "; ".join(messages)
