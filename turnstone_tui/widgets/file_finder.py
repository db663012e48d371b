"""The fuzzy file finder behind ``@`` in the prompt: every file of the project, best match first.

``@tcss`` finds ``styles/app.tcss``, ``@pgrid`` finds ``turnstone_tui/widgets/pane_grid.py``: the
typed characters must appear in order (a subsequence); matches at the start of a path part, in the
file name, and in runs score higher, gaps cost a little, and shorter paths win ties. The project is
listed by walking the directory (skipping hidden files, VCS, virtualenv, cache and dependency
folders; ``@.`` browses them by name), bounded, and cached for a few seconds so typing does not
re-walk it. Pure Python, no Textual: the prompt calls it in a thread.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

MAX_FILES = 20_000
CACHE_SECONDS = 5.0
MAX_ALIGNMENTS = 24
SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        "node_modules",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".idea",
        "dist",
        "build",
        "target",
    }
)
_SEPARATORS = "/_-. "


@dataclass(frozen=True, slots=True)
class Match:
    """A path that matches, its score and the matched character positions (for highlighting)."""

    path: str
    score: int
    positions: tuple[int, ...]


def list_project_paths(root: Path, limit: int = MAX_FILES) -> list[str]:
    """Relative paths of the files (and, ending in ``/``, directories) under ``root``; bounded."""
    paths: list[str] = []
    root_text = str(root)
    for directory, dirnames, filenames in os.walk(root_text):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS and not d.startswith("."))
        relative = os.path.relpath(directory, root_text)
        prefix = "" if relative == "." else relative.replace(os.sep, "/") + "/"
        if prefix:
            paths.append(prefix)
        for name in sorted(filenames):
            if name.startswith("."):  # dotfiles (.env and the like): only when asked for by name
                continue
            paths.append(prefix + name)
        if len(paths) >= limit:
            break
    return paths[:limit]


def fuzzy_match(query: str, path: str) -> Match | None:
    """Score ``path`` for ``query`` (case-insensitive subsequence); None when it does not match.

    Tries the alignments that start at each occurrence of the first typed character (filled
    greedily, and filled preferring starts of path parts) and keeps the best scoring one."""
    if not query:
        return Match(path, 0, ())
    lowered = path.lower()
    needle = query.lower()
    best: tuple[int, list[int]] | None = None
    start = lowered.find(needle[0])
    tries = 0
    while start >= 0 and tries < MAX_ALIGNMENTS:
        tries += 1
        for prefer_boundaries in (False, True):
            positions = _align(lowered, needle, start, prefer_boundaries)
            if positions is None:
                if not prefer_boundaries:
                    start = -1  # no match from here: none from any later start either
                break
            scored = (_score(query, path, positions), positions)
            if best is None or scored[0] > best[0]:
                best = scored
        if start < 0:
            break
        start = lowered.find(needle[0], start + 1)
    if best is None:
        return None
    return Match(path, best[0], tuple(best[1]))


def _align(lowered: str, needle: str, start: int, prefer_boundaries: bool) -> list[int] | None:
    positions = [start]
    cursor = start + 1
    for char in needle[1:]:
        nearest = lowered.find(char, cursor)
        if nearest < 0:
            return None
        chosen = nearest
        if prefer_boundaries and nearest != positions[-1] + 1:  # not continuing a run
            for position in range(nearest, len(lowered)):
                if lowered[position] == char and lowered[position - 1] in _SEPARATORS:
                    chosen = position
                    break
        positions.append(chosen)
        cursor = chosen + 1
    return positions


def _score(query: str, path: str, positions: list[int]) -> int:
    name_start = path.rstrip("/").rfind("/") + 1
    score = 0
    previous = -2
    for typed, position in zip(query, positions, strict=True):
        score += 16
        if position == previous + 1:
            score += 12
        elif previous >= 0:
            score -= min(position - previous - 1, 6)
        if position == 0 or path[position - 1] in _SEPARATORS:
            score += 10
        if position >= name_start:
            score += 6
        if path[position] == typed:
            score += 1  # the case typed matches
        previous = position
    if path.lower().rstrip("/").endswith(query.lower()):
        score += 8
    return score - len(path) // 8


def fuzzy_find(query: str, paths: list[str], limit: int = 50) -> list[Match]:
    """The best ``limit`` matches of ``query`` among ``paths``, best first."""
    matches = [m for m in (fuzzy_match(query, path) for path in paths) if m is not None]
    matches.sort(key=lambda m: (-m.score, len(m.path), m.path))
    return matches[:limit]


class FileIndex:
    """The project's paths under ``root``, re-listed at most every ``CACHE_SECONDS``."""

    def __init__(self, root: Path, *, max_files: int = MAX_FILES) -> None:
        self.root = root
        self.max_files = max_files
        self._paths: list[str] = []
        self._listed_at: float | None = None

    def paths(self) -> list[str]:
        now = time.monotonic()
        if self._listed_at is None or now - self._listed_at > CACHE_SECONDS:
            self._paths = list_project_paths(self.root, self.max_files)
            self._listed_at = now
        return self._paths

    def search(self, query: str, limit: int = 50) -> list[Match]:
        """Blocking (walks the tree when the cache is stale): call it in a thread."""
        return fuzzy_find(query, self.paths(), limit)
