"""The search tool: recursive regex search, ``file:line:text`` results, bounded.

ripgrep (``rg``) when it is on PATH, else ``grep -rnE`` skipping binary files. Both search hidden
files and directories and skip the usual tool directories (.git, node_modules, virtualenvs,
caches); ripgrep also skips what .gitignore / .ignore files exclude, and the result says so when
such a file applies. At most 500 lines are kept (each cut to 400 chars); the rest are counted.
Exit status 1 means "no matches", not an error.

Secret stores (``path_policy.secret_store``: ``.env`` files, ``~/.ssh`` ...) are refused as the
search's root and their lines are dropped from a directory's results (each result's file is
resolved and judged as read_file would judge it), and so are the lines of a git config that hold
a credential (``sandbox/gitconfig.py``); no note says so (see ``MatchSink``). A search of a
folder outside the workspace asks first, as read_file does; ``/proc`` is not searched at all.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.child_env import scrubbed_env
from ..core.tools import Preparer, ToolContext, error_item, require_str
from ..core.truncate import HeadTailBuffer
from ..core.types import ExecContext, PreparedItem, Subject, ToolResult
from ..sandbox.gitconfig import LineRedactor, is_git_config
from .path_policy import outside_workspace, real_path, secret_checker, secret_refusal, secret_store
from .proc_group import BufferSink, run_process

MAX_MATCH_LINES = 500
MAX_LINE_CHARS = 400
GREP_EXCLUDED_DIRS = (
    ".git", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache", ".pytest_cache", ".ruff_cache",
    ".tox", ".hg", ".svn",
)  # fmt: skip


IGNORE_FILES = (".gitignore", ".ignore", ".rgignore")
IGNORED_NOTE = (
    "[not searched: files excluded by {files}; to search them too use bash: rg --no-ignore PATTERN PATH]"
)


def ignore_files(target: Path) -> list[str]:
    """Ignore files ripgrep honours for ``target`` (in it and its parents; blocking: a few stats)."""
    start = target if target.is_dir() else target.parent
    found: list[str] = []
    for folder in [start, *start.parents]:
        for name in IGNORE_FILES:
            if name not in found and (folder / name).is_file():
                found.append(name)
        if (folder / ".git").exists():
            break  # the repository's root: ripgrep reads no ignore files above it
    return found


_BINARY_NOTE = ": binary file matches"


class MatchSink:
    """Keeps the first ``max_lines`` result lines, counts all of them. Each line is
    ``file NUL line:text`` (``--null``); with ``is_secret`` the lines of a file it names are dropped
    (counted in ``hidden``), and so is a line whose file cannot be told; with ``redacts`` (a git
    config, ``sandbox.gitconfig``) the lines that hold a credential are dropped too. Nothing the
    model sees tells whether a dropped line matched (no note, no count): the pattern is the
    model's, and "a hidden line matched" answers a regex question about the secret, one
    character at a time. Past ``max_lines`` lines are only counted, each judged by ``quick``
    (by name, no resolving: "secret", "gitconfig" or "") so the count does not tell either."""

    def __init__(
        self,
        max_lines: int = MAX_MATCH_LINES,
        is_secret: Callable[[str], bool] | None = None,
        redacts: Callable[[str], bool] | None = None,
        quick: Callable[[str], str] | None = None,
    ) -> None:
        self.max_lines = max_lines
        self.kept: list[str] = []
        self.total = 0
        self.hidden = 0
        self._is_secret = is_secret
        self._redacts = redacts
        self._quick = quick
        self._judged: dict[str, bool] = {}
        self._redacting: dict[str, bool] = {}
        self._quickly: dict[str, str] = {}

    @staticmethod
    def _cached(cache: dict[str, Any], name: str, judge: Callable[[str], Any]) -> Any:
        if name not in cache:
            if len(cache) > 10_000:
                cache.clear()
            cache[name] = judge(name)
        return cache[name]

    def _secret(self, name: str) -> bool:
        return self._is_secret is not None and self._cached(self._judged, name, self._is_secret)

    @staticmethod
    def _credential(rest: str) -> bool:
        """Does ``rest`` (``number:text``) hold a credential (``sandbox.gitconfig``)?"""
        text = rest.partition(":")[2]
        return LineRedactor()(text) != text

    def _visible(self, line: str) -> str | None:
        name, nul, rest = line.partition("\0")
        if nul:
            if self._secret(name):
                return None
            if self._redacts is not None and self._cached(self._redacting, name, self._redacts):
                if self._credential(rest):
                    return None
            return f"{name}:{rest}"
        if line.endswith(_BINARY_NOTE) or _BINARY_NOTE + " (" in line:
            name = line.split(_BINARY_NOTE, 1)[0]
            return None if self._secret(name) else line
        return None if self._is_secret is not None else line

    def _count_only(self, lines: list[str]) -> None:
        if self._quick is None:
            self.total += len(lines)
            return
        for line in lines:
            name, nul, rest = line.partition("\0")
            kind = self._cached(self._quickly, name, self._quick) if nul else ""
            if kind == "secret" or (kind == "gitconfig" and self._credential(rest)):
                self.hidden += 1
            else:
                self.total += 1

    def feed(self, text: str) -> None:
        lines = text[:-1].split("\n") if text.endswith("\n") else text.split("\n")
        room = self.max_lines - len(self.kept)
        for k, line in enumerate(lines):
            if room <= 0:  # only counted from here: judged by name (resolving costs time on the loop)
                self._count_only(lines[k:])
                return
            visible = self._visible(line)
            if visible is None:
                self.hidden += 1
                continue
            self.total += 1
            room -= 1
            if visible.startswith("./"):
                visible = visible[2:]
            if len(visible) > MAX_LINE_CHARS:
                visible = visible[:MAX_LINE_CHARS] + " [... line cut]"
            self.kept.append(visible)


def search_command(query: str, path_arg: str) -> list[str]:
    rg = shutil.which("rg")
    if rg:
        skipped = [f"--glob=!{d}" for d in GREP_EXCLUDED_DIRS]
        return [
            rg,
            "-n",
            "-H",
            "--no-heading",
            "--color",
            "never",
            "--hidden",
            "--null",
            *skipped,
            "-e",
            query,
            "--",
            path_arg,
        ]
    excludes = [f"--exclude-dir={d}" for d in GREP_EXCLUDED_DIRS]
    return ["grep", "-rnHEZ", "-I", "--color=never", *excludes, "-e", query, "--", path_arg]


async def prepare_search(ctx: ToolContext, call_id: str, args: dict[str, Any]) -> PreparedItem:
    name = "search"
    query = require_str(args, "query")
    if query is None:
        return error_item(call_id, name, args, "search: 'query' must be a non-empty regex pattern")
    path_arg = args.get("path") or "."
    if not isinstance(path_arg, str):
        return error_item(call_id, name, args, "search: 'path' must be a string")
    target = ctx.resolve(path_arg)
    if not target.exists():
        return error_item(call_id, name, args, f"search: {path_arg}: no such file or directory")
    real = await asyncio.to_thread(real_path, target)
    store = secret_store(real, [ctx.config.path])
    if store is None and (real == Path("/proc") or Path("/proc") in real.parents):
        store = "process files under /proc"
    if store:
        return error_item(call_id, name, args, secret_refusal("search", path_arg, store))
    cwd = ctx.cwd
    timeout = ctx.config.tools.timeout
    outside = outside_workspace(real, cwd)
    secret = await asyncio.to_thread(secret_checker, [ctx.config.path])

    def is_secret(found: str) -> bool:
        return secret(real_path(cwd / found)) is not None

    def redacts(found: str) -> bool:
        return is_git_config(real_path(cwd / found))

    def quick(found: str) -> str:  # by name only: no stat
        path = Path(os.path.normpath(cwd / found))
        return "secret" if secret(path) is not None else "gitconfig" if is_git_config(path) else ""

    # "~/x" is expanded here (no shell runs rg): rg would look for a folder named "~"
    searched = str(target) if path_arg.startswith("~") else path_arg

    async def execute(exec_ctx: ExecContext) -> ToolResult:
        result = await run_search(query, searched, cwd, timeout, is_secret, redacts, quick)
        if shutil.which("rg") and not result.is_error:
            found = await asyncio.to_thread(ignore_files, target)
            if found:
                result.text += "\n" + IGNORED_NOTE.format(files=" / ".join(found))
        return result

    return PreparedItem(
        call_id=call_id,
        func_name=name,
        args=args,
        header=f"search: {query!r} in {path_arg}" + (f" (outside the workspace: {real})" if outside else ""),
        preview=f"pattern: {query}\npath: {target}",
        needs_approval=outside,
        execute=execute,
        subject=Subject(paths=(str(real),)),
    )


async def run_search(
    query: str,
    path_arg: str,
    cwd: Path,
    time_limit: int,
    is_secret: Callable[[str], bool] | None = None,
    redacts: Callable[[str], bool] | None = None,
    quick: Callable[[str], str] | None = None,
) -> ToolResult:
    matches = MatchSink(is_secret=is_secret, redacts=redacts, quick=quick)
    errors = HeadTailBuffer(4000)
    argv = search_command(query, path_arg)
    try:
        outcome = await run_process(
            argv,
            cwd=cwd,
            env=scrubbed_env({"LC_ALL": "C.UTF-8"}),
            time_limit=time_limit,
            stdout_sink=matches,
            stderr_sink=BufferSink(errors),
        )
    except OSError as exc:
        return ToolResult(f"search: cannot run {argv[0]}: {exc.strerror or exc}", is_error=True)
    stderr = errors.text().strip()
    if outcome.timed_out:
        partial = "\n".join(matches.kept)
        return ToolResult(
            f"search timed out after {time_limit} s; partial results:\n{partial}", is_error=True
        )
    if matches.total == 0:
        if outcome.returncode == 1 or (outcome.returncode == 0 and not stderr):
            return ToolResult(f"No matches for {query!r} in {path_arg}.")
        return ToolResult(f"search failed ({argv[0]}, exit {outcome.returncode}): {stderr}", is_error=True)
    out = "\n".join(matches.kept)
    if matches.total > len(matches.kept):
        out += (
            f"\n[... {matches.total - len(matches.kept):,} more matching lines not shown "
            f"({matches.total:,} in all): narrow the pattern or the path]"
        )
    if stderr:
        out += f"\n[warnings: {stderr[:1000]}]"
    return ToolResult(out)


PREPARERS: dict[str, Preparer] = {"search": prepare_search}
