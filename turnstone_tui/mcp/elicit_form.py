"""Elicitation forms: the restricted JSON schema of ``elicitation/create`` as fields, and validation.

The schema is flat (MCP 2025-11-25): each property is a string (``minLength``/``maxLength``,
``format`` email/uri/date/date-time), a number or integer (``minimum``/``maximum``), a boolean,
a single-select enum (``enum``, ``oneOf`` with ``const``/``title``, or legacy ``enumNames``) or a
multi-select enum (``type: array`` whose ``items`` hold ``enum`` or ``anyOf``). ``default`` values
pre-fill the form (SEP-1034). :func:`validate` turns what the user typed into the typed content
sent back, or says per field what is wrong.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

FieldKind = Literal["string", "number", "integer", "boolean", "enum", "multi"]

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class SchemaError(ValueError):
    """The server's requested schema is not a form this client can show."""


@dataclass(frozen=True, slots=True)
class FormField:
    name: str
    kind: FieldKind
    title: str
    description: str = ""
    required: bool = False
    default: Any = None
    options: tuple[tuple[str, str], ...] = ()  # (value, label) for enum / multi
    format: str = ""  # string: email | uri | date | date-time
    min_length: int | None = None
    max_length: int | None = None
    minimum: float | None = None
    maximum: float | None = None
    min_items: int | None = None
    max_items: int | None = None

    def hint(self) -> str:
        """What the field accepts, in a few words (shown under it)."""
        bits: list[str] = []
        if self.kind in ("number", "integer"):
            bits.append("whole number" if self.kind == "integer" else "number")
            if self.minimum is not None and self.maximum is not None:
                bits.append(f"{_num(self.minimum)} to {_num(self.maximum)}")
            elif self.minimum is not None:
                bits.append(f"at least {_num(self.minimum)}")
            elif self.maximum is not None:
                bits.append(f"at most {_num(self.maximum)}")
        elif self.kind == "string":
            if self.format:
                bits.append(self.format)
            if self.min_length is not None:
                bits.append(f"at least {self.min_length} characters")
            if self.max_length is not None:
                bits.append(f"at most {self.max_length} characters")
        elif self.kind == "multi":
            if self.min_items is not None:
                bits.append(f"choose at least {self.min_items}")
            if self.max_items is not None:
                bits.append(f"choose at most {self.max_items}")
        if self.required:
            bits.append("required")
        return ", ".join(bits)


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _options(prop: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    if isinstance(prop.get("oneOf"), list):
        return tuple((str(o.get("const")), str(o.get("title") or o.get("const"))) for o in prop["oneOf"])
    if isinstance(prop.get("anyOf"), list):
        return tuple((str(o.get("const")), str(o.get("title") or o.get("const"))) for o in prop["anyOf"])
    values = [str(v) for v in prop.get("enum") or []]
    names = prop.get("enumNames")
    if isinstance(names, list) and len(names) == len(values):
        return tuple(zip(values, (str(n) for n in names), strict=True))
    return tuple((v, v) for v in values)


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _float_or_none(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def parse_schema(schema: dict[str, Any]) -> tuple[FormField, ...]:
    """The form fields of a requested schema, in the schema's order; SchemaError if unusable."""
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise SchemaError("the requested schema is not an object")
    props = schema.get("properties") or {}
    if not isinstance(props, dict):
        raise SchemaError("the requested schema has no properties table")
    required = set(schema.get("required") or [])
    fields: list[FormField] = []
    for name, prop in props.items():
        if not isinstance(prop, dict):
            raise SchemaError(f"property {name!r} is not a schema")
        kind_raw = prop.get("type")
        title = str(prop.get("title") or name)
        common: dict[str, Any] = {
            "name": str(name),
            "title": title,
            "description": str(prop.get("description") or ""),
            "required": name in required,
            "default": prop.get("default"),
        }
        if kind_raw == "array":
            items = prop.get("items") if isinstance(prop.get("items"), dict) else {}
            options = _options(items)
            if not options:
                raise SchemaError(f"property {name!r}: an array must list its choices")
            fields.append(
                FormField(
                    kind="multi",
                    options=options,
                    min_items=_int_or_none(prop.get("minItems")),
                    max_items=_int_or_none(prop.get("maxItems")),
                    **common,
                )
            )
        elif kind_raw == "string" and ("enum" in prop or "oneOf" in prop):
            fields.append(FormField(kind="enum", options=_options(prop), **common))
        elif kind_raw == "string":
            fields.append(
                FormField(
                    kind="string",
                    format=str(prop.get("format") or ""),
                    min_length=_int_or_none(prop.get("minLength")),
                    max_length=_int_or_none(prop.get("maxLength")),
                    **common,
                )
            )
        elif kind_raw in ("number", "integer"):
            fields.append(
                FormField(
                    kind=kind_raw,
                    minimum=_float_or_none(prop.get("minimum")),
                    maximum=_float_or_none(prop.get("maximum")),
                    **common,
                )
            )
        elif kind_raw == "boolean":
            fields.append(FormField(kind="boolean", **common))
        else:
            raise SchemaError(f"property {name!r} has an unsupported type {kind_raw!r}")
    return tuple(fields)


def _check_format(fmt: str, text: str) -> str | None:
    if fmt == "email" and not _EMAIL.match(text):
        return "not an email address"
    if fmt == "uri":
        parts = urlsplit(text)
        if not parts.scheme or not (parts.netloc or parts.path):
            return "not a URI (e.g. https://example.com)"
    if fmt == "date":
        try:
            dt.date.fromisoformat(text)
        except ValueError:
            return "not a date (YYYY-MM-DD)"
    if fmt == "date-time":
        try:
            dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return "not a date and time (YYYY-MM-DDTHH:MM:SS)"
    return None


def _one(field: FormField, raw: Any) -> tuple[Any, str | None]:
    """(typed value or None for 'left empty', error)."""
    if field.kind == "boolean":
        return bool(raw), None
    if field.kind == "multi":
        chosen = [str(v) for v in (raw or [])]
        allowed = {value for value, _ in field.options}
        if any(v not in allowed for v in chosen):
            return None, "not one of the choices"
        if not chosen:
            return None, None
        if field.min_items is not None and len(chosen) < field.min_items:
            return None, f"choose at least {field.min_items}"
        if field.max_items is not None and len(chosen) > field.max_items:
            return None, f"choose at most {field.max_items}"
        return chosen, None
    if field.kind == "enum":
        if raw in (None, ""):
            return None, None
        if str(raw) not in {value for value, _ in field.options}:
            return None, "not one of the choices"
        return str(raw), None
    text = "" if raw is None else str(raw).strip()
    if not text:
        return None, None
    if field.kind in ("number", "integer"):
        try:
            number: float | int = int(text) if field.kind == "integer" else float(text)
        except ValueError:
            return None, "not a whole number" if field.kind == "integer" else "not a number"
        if field.minimum is not None and number < field.minimum:
            return None, f"must be at least {_num(field.minimum)}"
        if field.maximum is not None and number > field.maximum:
            return None, f"must be at most {_num(field.maximum)}"
        if field.kind == "number" and float(number).is_integer() and "." not in text:
            number = int(number)
        return number, None
    text = str(raw)
    if field.min_length is not None and len(text) < field.min_length:
        return None, f"must be at least {field.min_length} characters"
    if field.max_length is not None and len(text) > field.max_length:
        return None, f"must be at most {field.max_length} characters"
    if field.format:
        error = _check_format(field.format, text)
        if error:
            return None, error
    return text, None


def validate(fields: tuple[FormField, ...], raw: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """(content to send, errors by field name); content is only meant to be sent when errors is empty."""
    content: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for field in fields:
        value, error = _one(field, raw.get(field.name))
        if error:
            errors[field.name] = error
        elif value is None:
            if field.required:
                errors[field.name] = "required"
        else:
            content[field.name] = value
    return content, errors


def initial_value(field: FormField) -> Any:
    """What the form shows before the user types: the schema's default, if it fits the field."""
    default = field.default
    if field.kind == "boolean":
        return bool(default) if isinstance(default, bool) else False
    if field.kind == "multi":
        return [str(v) for v in default] if isinstance(default, list) else []
    if field.kind == "enum":
        return str(default) if default is not None else None
    if default is None or isinstance(default, bool):
        return ""
    if field.kind in ("number", "integer") and isinstance(default, (int, float)):
        return _num(default)
    return str(default)
