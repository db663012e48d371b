"""The man tool: the formatted manual page as plain text, with ``--help`` as the fallback.

``man -P cat [section] page`` with ``MANWIDTH=100``; overstrike (``x\\bx``, ``_\\bx``) and ANSI
formatting are removed like ``col -b`` would. When man is not installed or has no page, and the
page names a command on PATH, ``<command> --help`` is shown instead, but only for programs on
``HELP_ALLOWLIST`` (well-known tools whose ``--help`` only prints): man is auto-approved, and running
an arbitrary program is not reading a manual. For other programs the model is told to run
``<command> --help`` with the bash tool, which asks the user (and runs in the sandbox).

Neither ``man`` nor ``--help`` runs in the workspace: many tools read their project's files first,
and some run code from them (``pytest --help`` imports ``conftest.py``, yarn runs a ``.yarnrc.yml``
``yarnPath``, rustup a ``rust-toolchain.toml`` toolchain ``path``, maven a ``.mvn/jvm.config``), so a
file the model wrote unasked (accept-edits, full-auto) ran outside the sandbox through this
auto-approved tool. Both run in an empty temp directory, in the sandbox where it can run (no
network, nothing writable but that directory); a program found through a relative ``PATH`` entry
is not run, nor one inside the workspace (a project's venv) where the sandbox cannot run.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..core.child_env import SandboxPolicy, plan, sandbox_policy, scrubbed_env
from ..core.tools import Preparer, ToolContext, error_item, require_str
from ..core.truncate import HeadTailBuffer
from ..core.types import ExecContext, PreparedItem, ToolResult
from .proc_group import BufferSink, run_process

MAN_WIDTH = "100"
MAN_TIMEOUT = 30
HELP_TIMEOUT = 10
HELP_LIMIT = 64 * 1024
_PAGE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:+@-]*$")
_SECTION = re.compile(r"^[0-9][A-Za-z0-9]{0,5}$|^[nlp]$")
_OVERSTRIKE = re.compile(r".\x08")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# Never run "<page> --help" for these: a program that ignores --help must not power off the machine.
_NO_HELP_FALLBACK = frozenset(
    {"shutdown", "reboot", "halt", "poweroff", "init", "telinit", "kill", "killall", "pkill", "rm", "dd",
     "mkfs", "mkswap", "wipefs", "shred", "fdisk", "sfdisk", "parted", "systemctl", "login", "su", "sudo",
     "passwd", "xdg-open", "yes"}
)  # fmt: skip


HELP_ALLOWLIST = frozenset(
    {"git", "grep", "egrep", "fgrep", "rg", "ls", "cat", "head", "tail", "sed", "awk", "gawk", "find", "xargs", "sort",
     "uniq", "wc", "cut", "tr", "diff", "patch", "tar", "gzip", "gunzip", "zip", "unzip", "xz", "jq", "yq", "curl",
     "wget", "make", "cmake", "ninja", "gcc", "g++", "cc", "clang", "ld", "python", "python3", "pip", "pip3", "uv",
     "pytest", "ruff", "mypy", "black", "node", "npm", "npx", "yarn", "pnpm", "deno", "bun", "cargo", "rustc",
     "rustup", "go", "gofmt", "java", "javac", "mvn", "gradle", "docker", "kubectl", "helm", "terraform", "gh",
     "ssh", "scp", "rsync", "openssl", "cp", "mv", "mkdir", "touch", "ln", "chmod", "stat", "du", "df", "ps", "env",
     "date", "echo", "printf", "test", "tee", "less", "file", "which", "basename", "dirname", "realpath", "readlink",
     "sha256sum", "md5sum", "base64", "od", "xxd", "hexdump", "strings", "tmux", "bwrap", "sqlite3", "psql", "fd"}
)  # fmt: skip


def clean_man_text(text: str) -> str:
    """Remove backspace overstrike and ANSI escapes (what ``col -b`` does for man output)."""
    while "\x08" in text:
        cleaned = _OVERSTRIKE.sub("", text)
        if cleaned == text:
            text = text.replace("\x08", "")
            break
        text = cleaned
    return _ANSI.sub("", text)


def _own_files(program: str) -> list[Path]:
    """What the program needs to see in the sandbox when it lives under /tmp (hidden there): its
    directory and the virtualenv it belongs to."""
    path = Path(program)
    venv = path.parent.parent
    return [path.parent, *([venv] if (venv / "pyvenv.cfg").is_file() else [])]


def _in_workspace(program: str, cwd: Path) -> bool:
    """Does ``program`` lie in the workspace (a project's venv, or a file the model wrote)? Blocking."""
    real = Path(os.path.abspath(program)).resolve()
    workspace = cwd.resolve()
    return real == workspace or workspace in real.parents


class _Unconfined(Exception):
    """The sandbox cannot run, and the program is the workspace's own."""


async def _capture(
    argv: list[str],
    policy: SandboxPolicy,
    time_limit: int,
    extra_env: dict[str, str],
    *,
    confined_only: bool = False,
) -> tuple[int | None, str, str]:
    """Run ``argv`` in a fresh empty directory (in the sandbox unless it is off), no network;
    ``confined_only``: raise ``_Unconfined`` rather than run it outside the sandbox."""
    out, err = HeadTailBuffer(512 * 1024), HeadTailBuffer(8 * 1024)
    with tempfile.TemporaryDirectory(prefix="turnstone-man-") as scratch:
        run_plan = await asyncio.to_thread(
            plan, policy, argv, cwd=Path(scratch), network=False, readable=_own_files(argv[0])
        )
        if confined_only and not run_plan.sandboxed:
            raise _Unconfined(run_plan.note)
        outcome = await run_process(
            run_plan.argv,
            cwd=Path(scratch),
            env=scrubbed_env(extra_env),
            time_limit=time_limit,
            stdout_sink=BufferSink(out),
            stderr_sink=BufferSink(err),
        )
    code = None if outcome.timed_out else outcome.returncode
    return code, out.text(), err.text()


async def _help_fallback(page: str, cwd: Path, reason: str, policy: SandboxPolicy) -> ToolResult:
    program = shutil.which(page)
    if program is None:
        return ToolResult(f"{reason}; and {page!r} is not a command on PATH either.", is_error=True)
    if not os.path.isabs(program):
        return ToolResult(
            f"{reason}; `{page}` on PATH is {program} (a relative PATH entry, in the workspace): not run "
            "by man; use the bash tool (the user approves it)",
            is_error=True,
        )
    own = await asyncio.to_thread(_in_workspace, program, cwd)
    if page in _NO_HELP_FALLBACK or page.startswith("mkfs") or page not in HELP_ALLOWLIST:
        return ToolResult(
            f"{reason}. `{page} --help` is not run automatically ({page} is not on man's allowlist of "
            f"well-known tools); run `{page} --help` with the bash tool if you need it (the user approves it).",
            is_error=True,
        )
    try:
        code, out, err = await _capture(
            [program, "--help"], policy, HELP_TIMEOUT, {"PAGER": "cat"}, confined_only=own
        )
    except _Unconfined as exc:
        return ToolResult(
            f"{reason}; `{page}` on PATH is {program}, in the workspace, and the sandbox cannot run it "
            f"({exc}): not run by man; use the bash tool (the user approves it)",
            is_error=True,
        )
    except OSError as exc:
        return ToolResult(f"{reason}; running `{page} --help` failed: {exc.strerror or exc}", is_error=True)
    text = clean_man_text(out or err).strip()
    if not text:
        return ToolResult(f"{reason}; `{page} --help` printed nothing (exit {code}).", is_error=True)
    if len(text) > HELP_LIMIT:
        text = text[:HELP_LIMIT] + "\n[... cut ...]"
    return ToolResult(f"{reason}. Output of `{page} --help` instead:\n\n{text}")


async def read_man_page(
    page: str, section: str | None, cwd: Path, policy: SandboxPolicy | None = None
) -> ToolResult:
    policy = policy or SandboxPolicy()
    what = f"{page}({section})" if section else page
    man = shutil.which("man")
    if man is None:
        return await _help_fallback(
            page, cwd, f"man is not installed on this machine, so there is no man page for {what}", policy
        )
    argv = [man, "-P", "cat", *([section] if section else []), page]
    env = {"MANWIDTH": MAN_WIDTH, "MANPAGER": "cat", "PAGER": "cat", "MAN_KEEP_FORMATTING": "0"}
    try:
        code, out, err = await _capture(argv, policy, MAN_TIMEOUT, env)
    except OSError as exc:
        return await _help_fallback(page, cwd, f"man could not be run ({exc.strerror or exc})", policy)
    text = clean_man_text(out).strip()
    if code == 0 and text:
        return ToolResult(text)
    if code is None:
        return ToolResult(f"man {what}: timed out after {MAN_TIMEOUT} s", is_error=True)
    detail = clean_man_text(err).strip().splitlines()
    reason = detail[0] if detail else f"man found no page for {what} (exit {code})"
    return await _help_fallback(page, cwd, reason.rstrip("."), policy)


async def prepare_man(ctx: ToolContext, call_id: str, args: dict[str, Any]) -> PreparedItem:
    page = require_str(args, "page")
    if page is None or not _PAGE.match(page.strip()):
        return error_item(
            call_id,
            "man",
            args,
            f"man: 'page' must be a man page name like grep or printf, got {args.get('page')!r}",
        )
    page = page.strip()
    section = args.get("section")
    if isinstance(section, int) and not isinstance(section, bool):
        section = str(section)
    if section is not None and (not isinstance(section, str) or not _SECTION.match(section.strip())):
        return error_item(call_id, "man", args, f"man: 'section' must be like 1, 2, 3 or 3p, got {section!r}")
    section = section.strip() if isinstance(section, str) and section.strip() else None
    cwd = ctx.cwd
    policy = sandbox_policy(ctx.config)

    async def execute(exec_ctx: ExecContext) -> ToolResult:
        return await read_man_page(page, section, cwd, policy)

    title = f"{page}({section})" if section else page
    return PreparedItem(
        call_id=call_id,
        func_name="man",
        args=args,
        header=f"man: {title}",
        preview=f"man {section + ' ' if section else ''}{page}",
        needs_approval=False,
        execute=execute,
    )


PREPARERS: dict[str, Preparer] = {"man": prepare_man}
