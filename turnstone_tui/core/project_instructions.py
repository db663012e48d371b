"""Project instructions: the AGENTS.md files the model follows, as Codex, opencode and Claude Code do.

Read, in this order: the user's global file (``AGENTS.md`` in the config directory), then one file
per directory from the repository root (the nearest ancestor of the working directory holding
``.git``; without one, the working directory alone) down to the working directory. A directory's
``AGENTS.md`` wins over its ``CLAUDE.md``, which is read only when there is no AGENTS.md (so a
project written for Claude Code works unchanged). The nearer a file, the later it comes, so its
word is the last. The whole is bounded: a huge file cannot fill the context.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")
MAX_INSTRUCTION_BYTES = 32 * 1024


@dataclass(frozen=True)
class ProjectInstructions:
    files: tuple[tuple[Path, str], ...] = ()
    """(path, text) in the order the model reads them."""
    truncated: bool = False

    @property
    def paths(self) -> list[Path]:
        return [path for path, _ in self.files]

    def section(self) -> str:
        """The system prompt's part; empty when there are no files."""
        if not self.files:
            return ""
        parts = ["<project-instructions>", "Follow these instructions from the user's AGENTS.md files:"]
        for path, text in self.files:
            parts.append(f'<file path="{path}">\n{text.rstrip()}\n</file>')
        if self.truncated:
            parts.append(f"[the instructions were cut at {MAX_INSTRUCTION_BYTES // 1024} KiB]")
        parts.append("</project-instructions>")
        return "\n".join(parts)

    def describe(self, cwd: Path) -> str:
        """One line for the user: which files the model follows."""
        names = []
        for path in self.paths:
            relative = os.path.relpath(path, cwd)
            if relative.count("..") > 3:  # the global file, far from the project: a home-relative path
                home = str(Path.home())
                relative = "~" + str(path)[len(home) :] if str(path).startswith(home + os.sep) else str(path)
            names.append(relative)
        cut = f" (cut at {MAX_INSTRUCTION_BYTES // 1024} KiB)" if self.truncated else ""
        return f"Following project instructions: {', '.join(names)}{cut}"


def instruction_dirs(cwd: Path) -> list[Path]:
    """The directories searched, from the repository root down to ``cwd``."""
    chain = [cwd.resolve(), *cwd.resolve().parents]
    for index, ancestor in enumerate(chain):
        if (ancestor / ".git").exists():
            return list(reversed(chain[: index + 1]))
    return chain[:1]


def _first_file(directory: Path) -> Path | None:
    for name in INSTRUCTION_FILES:
        candidate = directory / name
        if candidate.is_file():
            return candidate
    return None


def load_project_instructions(
    cwd: Path, global_dir: Path | None = None, limit: int = MAX_INSTRUCTION_BYTES
) -> ProjectInstructions:
    """Read the instruction files (blocking: call it in a thread). Unreadable files are skipped."""
    candidates: list[Path] = []
    if global_dir is not None:
        found = _first_file(global_dir)
        if found is not None:
            candidates.append(found)
    for directory in instruction_dirs(cwd):
        found = _first_file(directory)
        if found is not None and found not in candidates:
            candidates.append(found)
    files: list[tuple[Path, str]] = []
    room = limit
    truncated = False
    for path in candidates:
        if room <= 0:
            truncated = True
            break
        try:
            with path.open("rb") as handle:
                data = handle.read(room + 1)
        except OSError:
            continue
        if len(data) > room:
            data = data[:room]
            truncated = True
        text = data.decode("utf-8", errors="replace")
        if text.strip():
            files.append((path, text))
        room -= len(data)
    return ProjectInstructions(tuple(files), truncated)
