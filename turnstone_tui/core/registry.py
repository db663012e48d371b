"""Loads the built-in tool definitions (``tools/*.json``) and derives the tool sets of the spec."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from .resources import data_dir

METADATA_KEYS = ("agent", "task_agent", "auto_approve", "primary_key", "read_only")
_REQUIRED_KEYS = ("name", "description", "parameters")


class ToolDefinitionError(Exception):
    """A tool JSON file is malformed or duplicated; the message names the file."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]
    agent: bool
    task_agent: bool
    auto_approve: bool
    primary_key: str | None
    source: Path
    read_only: bool = False  # only reads: runs in plan mode

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-calling schema, without turnstone's metadata keys."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass(frozen=True, slots=True)
class ToolRegistry:
    specs: tuple[ToolSpec, ...]

    @property
    def TOOLS(self) -> list[dict[str, Any]]:  # noqa: N802 - names from the spec
        return [s.schema() for s in self.specs]

    @property
    def AGENT_TOOLS(self) -> list[dict[str, Any]]:  # noqa: N802
        return [s.schema() for s in self.specs if s.agent]

    @property
    def TASK_AGENT_TOOLS(self) -> list[dict[str, Any]]:  # noqa: N802
        return [s.schema() for s in self.specs if s.task_agent]

    @property
    def AGENT_AUTO_TOOLS(self) -> frozenset[str]:  # noqa: N802
        return frozenset(s.name for s in self.specs if s.auto_approve)

    @property
    def TASK_AUTO_TOOLS(self) -> frozenset[str]:  # noqa: N802
        return frozenset(s.name for s in self.specs if s.auto_approve)

    @property
    def BUILTIN_TOOL_NAMES(self) -> frozenset[str]:  # noqa: N802
        return frozenset(s.name for s in self.specs)

    @property
    def PRIMARY_KEY_MAP(self) -> dict[str, str]:  # noqa: N802
        return {s.name: s.primary_key for s in self.specs if s.primary_key}

    def get(self, name: str) -> ToolSpec | None:
        for spec in self.specs:
            if spec.name == name:
                return spec
        return None


def _parse_file(path: Path) -> ToolSpec:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ToolDefinitionError(f"{path}: invalid JSON: {exc.msg} (line {exc.lineno})") from None
    except OSError as exc:
        raise ToolDefinitionError(f"{path}: cannot read: {exc.strerror}") from None
    if not isinstance(raw, dict):
        raise ToolDefinitionError(f"{path}: expected a JSON object, got {type(raw).__name__}")
    missing = [k for k in _REQUIRED_KEYS if k not in raw]
    if missing:
        raise ToolDefinitionError(f"{path}: missing key(s): {', '.join(missing)}")
    name, params = raw["name"], raw["parameters"]
    if not isinstance(name, str) or not name.isidentifier():
        raise ToolDefinitionError(f"{path}: 'name' must be an identifier string, got {name!r}")
    if not isinstance(raw["description"], str):
        raise ToolDefinitionError(f"{path}: 'description' must be a string")
    if not isinstance(params, dict) or params.get("type") != "object":
        raise ToolDefinitionError(f"{path}: 'parameters' must be a JSON schema object with type 'object'")
    for key in ("agent", "task_agent", "auto_approve", "read_only"):
        if not isinstance(raw.get(key, False), bool):
            raise ToolDefinitionError(f"{path}: '{key}' must be true or false")
    primary = raw.get("primary_key")
    if primary is not None and primary not in params.get("properties", {}):
        raise ToolDefinitionError(f"{path}: primary_key {primary!r} is not a parameter of {name}")
    unknown = set(raw) - set(_REQUIRED_KEYS) - set(METADATA_KEYS)
    if unknown:
        raise ToolDefinitionError(f"{path}: unknown key(s): {', '.join(sorted(unknown))}")
    return ToolSpec(
        name=name,
        description=raw["description"],
        parameters=params,
        agent=raw.get("agent", False),
        task_agent=raw.get("task_agent", False),
        auto_approve=raw.get("auto_approve", False),
        primary_key=primary,
        source=path,
        read_only=raw.get("read_only", False),
    )


def load_registry(paths: Iterable[Path] | None = None) -> ToolRegistry:
    """Load every ``*.json`` tool file; raise ToolDefinitionError naming the bad file."""
    files = sorted(paths) if paths is not None else sorted((data_dir() / "tools").glob("*.json"))
    if not files:
        raise ToolDefinitionError(f"no tool definitions found in {data_dir() / 'tools'}")
    seen: dict[str, Path] = {}
    specs: list[ToolSpec] = []
    for path in files:
        spec = _parse_file(path)
        if spec.name in seen:
            raise ToolDefinitionError(
                f"{path}: duplicate tool name {spec.name!r} (already defined in {seen[spec.name]})"
            )
        seen[spec.name] = path
        specs.append(spec)
    return ToolRegistry(tuple(specs))


@cache
def default_registry() -> ToolRegistry:
    return load_registry()
