"""Phase 1 helpers: parse a tool call's raw arguments and check them against the tool's schema."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from .model_output import clean_text, clean_value

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.S)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*+"', re.S)
_BRACKETS = re.compile(r"[\[\]{}]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


@dataclass(frozen=True, slots=True)
class ArgumentLimits:
    """What a tool call's raw arguments may be before they are parsed at all."""

    max_chars: int = 4 * 1024 * 1024  # the whole JSON text
    max_depth: int = 64  # nesting of objects and arrays
    max_int_digits: int = 100  # digits of one integer literal


DEFAULT_LIMITS = ArgumentLimits()
REPAIR_MAX_CHARS = 256 * 1024  # json-repair is pure Python: only near-JSON of sane size is repaired


@dataclass(slots=True)
class ParsedArguments:
    """The outcome of parsing one call's arguments.

    ``rejected`` is True when the raw text broke a limit: it must not be kept in the history
    sent back to the model. ``repaired`` holds the JSON text the arguments were repaired to.
    """

    args: dict[str, Any] | None
    error: str | None = None
    repaired: str | None = None
    rejected: bool = False


class _LimitError(ValueError):
    pass


def _nesting_depth(text: str) -> int:
    """The deepest nesting of [ and { outside JSON strings, in linear time."""
    outside = _STRING.sub("", text)
    depth = deepest = 0
    for char in _BRACKETS.findall(outside):
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(0, depth - 1)
    return deepest


def _int_parser(limit: int):  # noqa: ANN202
    def parse_int(digits: str) -> int:
        if len(digits.lstrip("-")) > limit:
            raise _LimitError(f"an integer has {len(digits.lstrip('-'))} digits (at most {limit} accepted)")
        return int(digits)

    return parse_int


def _snippet(text: str) -> str:
    return text if len(text) <= 120 else text[:117] + "..."


def check_arguments(
    raw: str | None,
    primary_key: str | None,
    limits: ArgumentLimits = DEFAULT_LIMITS,
    *,
    repair: bool = True,
) -> ParsedArguments:
    """Parse a tool call's raw arguments with limits; never raises.

    Accepts a JSON object; a JSON object wrapped in a code fence; near-JSON that json-repair
    can fix (trailing commas, a missing brace, single quotes); and, when the tool has a
    primary_key, a bare string (JSON string or plain text) mapped to that parameter.
    """
    text = (raw or "").strip() if isinstance(raw, str) or raw is None else str(raw).strip()
    if not text:
        return ParsedArguments({})
    if len(text) > limits.max_chars:
        return ParsedArguments(
            None,
            f"arguments are too large ({len(text):,} characters; at most {limits.max_chars:,} accepted)",
            rejected=True,
        )
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    depth = _nesting_depth(text)
    if depth > limits.max_depth:
        return ParsedArguments(
            None, f"arguments are nested {depth} deep (at most {limits.max_depth} accepted)", rejected=True
        )
    repaired: str | None = None
    try:
        value = json.loads(text, parse_int=_int_parser(limits.max_int_digits))
    except _LimitError as exc:
        return ParsedArguments(None, f"arguments rejected: {exc}", rejected=True)
    except (ValueError, RecursionError) as exc:
        if primary_key and not text.startswith(("{", "[")):
            return ParsedArguments({primary_key: clean_text(text if fenced else raw or "")})
        value = _repair(text, limits) if repair else None
        if not isinstance(value, dict) or not value:
            where = f" ({exc.msg} at position {exc.pos})" if isinstance(exc, json.JSONDecodeError) else ""
            return ParsedArguments(None, f"arguments are not valid JSON{where}: {_snippet(text)}")
        repaired = json.dumps(value, ensure_ascii=False)
    value = clean_value(value)
    if repaired is None and isinstance(value, dict) and _SURROGATE_ESCAPE.search(text):
        # escaped surrogates decode to lone ones: keep the cleaned text, not the escapes
        repaired = json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return ParsedArguments(value, repaired=repaired)
    if isinstance(value, str) and primary_key:
        return ParsedArguments({primary_key: value})
    return ParsedArguments(
        None, f"arguments must be a JSON object, got {type(value).__name__}: {_snippet(text)}"
    )


def _repair(text: str, limits: ArgumentLimits) -> Any:
    """Near-JSON repaired by json-repair, or None; the repaired value obeys the same limits."""
    if len(text) > REPAIR_MAX_CHARS or not text.lstrip().startswith("{"):
        return None
    try:
        import json_repair  # only for broken arguments: ~5 ms of imports kept off every start

        fixed = json_repair.repair_json(text, skip_json_loads=True)
        if not isinstance(fixed, str) or _nesting_depth(fixed) > limits.max_depth:
            return None
        return json.loads(fixed, parse_int=_int_parser(limits.max_int_digits))
    except Exception:  # noqa: BLE001 - a repair that fails is simply no repair
        return None


def parse_arguments(
    raw: str | None, primary_key: str | None, limits: ArgumentLimits = DEFAULT_LIMITS
) -> tuple[dict[str, Any] | None, str | None]:
    """Return (args, None) or (None, error message); see ``check_arguments``."""
    parsed = check_arguments(raw, primary_key, limits)
    return parsed.args, parsed.error


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
    from jsonschema import Draft202012Validator  # ~0.1 s to import: not on the start-up path

    validator = Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(args), key=lambda e: list(e.path))
    if not errors:
        return args, None
    messages = []
    for err in errors[:3]:
        where = ".".join(str(p) for p in err.path) or "arguments"
        messages.append(f"{where}: {err.message}")
    return args, "invalid arguments: " + "; ".join(messages)
