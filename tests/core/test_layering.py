"""The import graph follows the layering of ARCHITECTURE.md: arrows point down only.

A small AST walk over every module of the package (imports inside functions and under
TYPE_CHECKING count too): it fails naming the file, the line and the rule that was broken.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import turnstone_tui

PACKAGE = "turnstone_tui"
ADAPTERS = ("executors", "mcp", "providers")
FRONT_ENDS = ("app", "widgets", "headless", "cli")
# What each part must never import (first component below turnstone_tui, or a top-level package).
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "core": (*ADAPTERS, *FRONT_ENDS, "runtime", "textual"),
    "storage": ("core", *ADAPTERS, *FRONT_ENDS, "runtime", "textual"),
    "config": ("core", *ADAPTERS, *FRONT_ENDS, "runtime", "textual"),
    "executors": ("mcp", "providers", *FRONT_ENDS, "runtime", "textual"),
    "mcp": ("executors", "providers", *FRONT_ENDS, "runtime", "textual"),
    "providers": ("executors", "mcp", *FRONT_ENDS, "runtime", "textual"),
    "runtime": (*FRONT_ENDS, "textual"),
    "headless": ("app", "widgets", "textual"),
    "widgets": ("app", "cli", "runtime"),
}


# Tables that are plain data, read from below: config validates model.provider against the
# provider table (which imports no provider module until one is built).
DATA_TABLES = {("config", f"{PACKAGE}.providers.registry")}


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    part: str
    target: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.part} must not import {self.target}"


def part_of(module: str) -> str:
    """'turnstone_tui.core.session' -> 'core'; a top-level package ('textual.app') -> 'textual'."""
    names = module.split(".")
    if names[0] == PACKAGE:
        return names[1] if len(names) > 1 else ""
    return names[0]


def imported_modules(tree: ast.AST, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, absolute module name) for every import statement in ``tree``."""
    found: list[tuple[int, str]] = []
    base = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - (node.level - 1)]
                target = ".".join([*anchor, node.module] if node.module else anchor)
            else:
                target = node.module or ""
            found.append((node.lineno, target))
            # ``from .. import executors`` names a part in the alias, not in the module.
            if target == PACKAGE:
                found.extend((node.lineno, f"{PACKAGE}.{alias.name}") for alias in node.names)
    return found


def violations(package_dir: Path, package: str = PACKAGE) -> list[Violation]:
    found: list[Violation] = []
    for path in sorted(package_dir.rglob("*.py")):
        rel = path.relative_to(package_dir.parent)
        is_package = path.name == "__init__.py"
        parts = list(rel.with_suffix("").parts)
        module = ".".join(parts[:-1] if is_package else parts)
        part = part_of(module) if module != package else ""
        rules = FORBIDDEN.get(part, ())
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, target in imported_modules(tree, module, is_package):
            target_part = part_of(target)
            if target_part != part and target_part in rules and (part, target) not in DATA_TABLES:
                found.append(Violation(str(rel), line, part, target))
    return found


def test_every_layer_imports_only_downwards() -> None:
    package_dir = Path(turnstone_tui.__file__).parent
    broken = violations(package_dir)
    assert not broken, "imports against the layering:\n" + "\n".join(map(str, broken))


def test_the_walk_catches_each_kind_of_upward_import(tmp_path: Path) -> None:
    """The checker itself: relative, absolute, function-level and TYPE_CHECKING imports all count."""
    pkg = tmp_path / PACKAGE
    for sub in ("core", "widgets", "app", "executors", "mcp", "storage"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "bad.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from ..executors import bash\n"
        "if TYPE_CHECKING:\n"
        "    from turnstone_tui.mcp.manager import McpManager\n"
        "def f():\n"
        "    import textual.app\n"
        "from .. import widgets\n"
        "from .types import ToolResult\n"
    )
    (pkg / "widgets" / "card.py").write_text("from ..app.app import TurnstoneApp\nfrom ..core import types\n")
    (pkg / "executors" / "x.py").write_text(
        "from ..mcp import manager\nfrom ..core.tools import ToolContext\n"
    )
    (pkg / "storage" / "db.py").write_text("import aiosqlite\nfrom textual.widget import Widget\n")
    (pkg / "app" / "app.py").write_text("from textual.app import App\nfrom ..widgets import card\n")
    found = {(v.path, v.line, v.target) for v in violations(pkg)}
    assert found == {
        (f"{PACKAGE}/core/bad.py", 2, f"{PACKAGE}.executors"),
        (f"{PACKAGE}/core/bad.py", 4, f"{PACKAGE}.mcp.manager"),
        (f"{PACKAGE}/core/bad.py", 6, "textual.app"),
        (f"{PACKAGE}/core/bad.py", 7, f"{PACKAGE}.widgets"),
        (f"{PACKAGE}/widgets/card.py", 1, f"{PACKAGE}.app.app"),
        (f"{PACKAGE}/executors/x.py", 1, f"{PACKAGE}.mcp"),
        (f"{PACKAGE}/storage/db.py", 2, "textual.widget"),
    }
