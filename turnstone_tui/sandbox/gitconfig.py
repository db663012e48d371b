"""Credentials inside git config files, redacted wherever the model could read them.

A repository's ``.git/config`` (or ``~/.gitconfig``) is not a secret store: git needs it for
``status``, ``log`` and ``diff``, and the model may read its remotes and settings. But it can hold
credentials: a remote ``https://user:TOKEN@host/x.git`` (or ``https://TOKEN@host``), an
``http.extraHeader = Authorization: Bearer TOKEN``, a ``[url "https://TOKEN@host/"] insteadOf``,
a credential helper that echoes ``password=TOKEN``, keys such as ``github.token`` or
``sendemail.smtpPass``. So the credentials, not the files, are hidden:

- read_file, diff_file and search show such a file's lines with each credential replaced by
  ``REDACTED`` (``redact_text`` / ``LineRedactor``), and say how many were;
- the sandbox binds a redacted copy, read-only, over the working repository's config (the
  ``.git`` found from the working directory up, a worktree's common dir too) and the user's global
  configs when they hold one (``redacted_copies``): git in the sandbox still reads its remotes and
  settings; a fetch or push with the removed token fails. Other repositories' configs elsewhere on
  the disk stay readable to sandboxed commands (the filesystem is readable; this is not a list of
  every repository).

Only the standard library here (the sandbox imports nothing else from turnstone_tui).
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

MARK = "REDACTED"
MAX_CONFIG_BYTES = 1 << 20
"""A config file bigger than this is not copied for the sandbox (git configs are a few KB)."""

_URL_USERINFO = re.compile(
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<user>[^/@\s\"':]*)(?::(?P<pw>[^/@\s\"']*))?@"
)
_TOKEN_SCHEMES = ("http://", "https://", "ftp://", "ftps://")
_KEY_LINE = re.compile(r"^(?P<lead>\s*(?P<key>[A-Za-z][A-Za-z0-9\-]*)\s*=\s*)(?P<value>.*)$")
_SECRET_KEY = re.compile(
    r"(?i)^(?:extraheader|.*(?:pass|passwd|password|token|secret|apikey|api-key|accesskey|privatekey|credentials?))$"
)
_HEADER = re.compile(r"^(?P<q>\"?)(?P<name>[A-Za-z][A-Za-z0-9\-]*:\s*)")
_INLINE = re.compile(
    r"(?i)(?P<lead>\b(?:password|passwd|token|secret|api[_-]?key)\s*[=:]\s*|\b(?:bearer|basic|token)\s+)"
    r"(?P<secret>[^\s\"';&|]+)"
)


def _url(match: re.Match[str]) -> str:
    scheme, user, password = match["scheme"], match["user"], match["pw"]
    if password is not None:
        return f"{scheme}{user}:{MARK}@"
    if user and scheme.lower() in _TOKEN_SCHEMES:
        return f"{scheme}{MARK}@"  # https://TOKEN@github.com: the user name is the token
    return match.group(0)


class LineRedactor:
    """Redacts one git config line at a time (a value continued with a trailing backslash stays
    secret on its next lines); ``count`` counts the lines changed."""

    def __init__(self) -> None:
        self.count = 0
        self._continued = False

    def __call__(self, line: str) -> str:
        body = line.rstrip("\r\n")
        end = line[len(body) :]
        secret_value = self._continued
        found = None if secret_value else _KEY_LINE.match(body)
        continues = body.endswith("\\")
        # the redacted line still parses: a quote opened is closed, a continuation continues
        tail = "\\" if continues else ""
        if secret_value:
            out = MARK + ('"' if body.rstrip("\\").rstrip().endswith('"') else "") + tail
        elif found and _SECRET_KEY.match(found["key"]) and found["value"].strip():
            value = found["value"]
            header = _HEADER.match(value) if found["key"].lower() == "extraheader" else None
            quote = '"' if value.startswith('"') and not continues else ""
            opened = '"' if value.startswith('"') and not header else ""
            out = f"{found['lead']}{opened}{header.group(0) if header else ''}{MARK}{quote}{tail}"
            secret_value = True
        else:
            out = _INLINE.sub(lambda m: f"{m['lead']}{MARK}", _URL_USERINFO.sub(_url, body))
        self._continued = secret_value and continues
        if out != body:
            self.count += 1
        return out + end


def redact_text(text: str) -> tuple[str, int]:
    """``text`` with its credentials replaced by ``MARK``, and the number of lines changed."""
    redactor = LineRedactor()
    out = "".join(redactor(line) for line in text.splitlines(keepends=True))
    return out, redactor.count


def is_git_config(real: Path) -> bool:
    """Is ``real`` (a resolved path) a git config file: ``.git/config`` (or ``config.worktree``,
    a submodule's or bare repository's), any ``.gitconfig``, ``$XDG_CONFIG_HOME/git/config``?"""
    name = real.name
    if name == ".gitconfig":
        return True
    if name not in ("config", "config.worktree"):
        return False
    parent = real.parent
    if parent.name == ".git" or parent.name.endswith(".git") or ".git" in parent.parts:
        return True
    return parent.name == "git" and parent.parent in _config_homes()


def _config_homes() -> set[Path]:
    homes = {Path("~/.config").expanduser()}
    if os.environ.get("XDG_CONFIG_HOME"):
        homes.add(Path(os.environ["XDG_CONFIG_HOME"]))
    return {h.resolve() for h in homes}


def _git_dirs(folder: Path) -> list[Path]:
    """The git dir of the repository holding ``folder`` (walking up as git does) and, for a
    worktree or submodule, its common dir. Blocking."""
    for place in (folder, *folder.parents):
        dotgit = place / ".git"
        if dotgit.is_dir():
            found = [dotgit.resolve()]
        elif dotgit.is_file():
            try:
                head = dotgit.read_text(errors="replace")[:4096]
            except OSError:
                return []
            if not head.startswith("gitdir:"):
                return []
            target = Path(head[len("gitdir:") :].strip().splitlines()[0])
            found = [(place / target).resolve()]
        else:
            continue
        common = found[0] / "commondir"
        if common.is_file():
            try:
                found.append((found[0] / common.read_text().strip()).resolve())
            except OSError:
                pass
        return found
    return []


def config_files(folders: Iterable[Path]) -> list[Path]:
    """The git config files a git command run in ``folders`` reads that may hold credentials: each
    repository's ``config`` / ``config.worktree``, ``~/.gitconfig``, ``$XDG_CONFIG_HOME/git/config``,
    and the files their ``[include]`` / ``[includeIf]`` sections name (at most ``MAX_CONFIGS``)."""
    files: list[Path] = [Path("~/.gitconfig").expanduser()]
    files += [home / "git" / "config" for home in _config_homes()]
    for folder in folders:
        for git_dir in _git_dirs(Path(folder).resolve()):
            files += [git_dir / "config", git_dir / "config.worktree"]
    out: list[Path] = []
    while files:
        real = files.pop(0).resolve()
        if real in out or not real.is_file() or len(out) >= MAX_CONFIGS:
            continue
        out.append(real)
        files += _includes(real)
    return out


MAX_CONFIGS = 64
_INCLUDE = re.compile(r"^\s*\[\s*include(?:if\s+\"[^\"]*\")?\s*\]\s*$", re.IGNORECASE)
_PATH_LINE = re.compile(r"^\s*path\s*=\s*(?P<value>.*?)\s*$", re.IGNORECASE)


def _includes(config: Path) -> list[Path]:
    """The files ``config``'s ``[include]`` / ``[includeIf "..."]`` sections name (``path = ...``,
    ``~`` expanded, relative to the config's folder): they can hold the same credentials."""
    try:
        text = config.read_text(errors="replace")[:MAX_CONFIG_BYTES]
    except OSError:
        return []
    found: list[Path] = []
    inside = False
    for line in text.splitlines():
        if line.lstrip().startswith("["):
            inside = bool(_INCLUDE.match(line))
            continue
        match = _PATH_LINE.match(line) if inside else None
        if match and match["value"]:
            value = match["value"].strip('"')
            path = Path(value).expanduser()
            found.append(path if path.is_absolute() else config.parent / path)
    return found


@functools.cache
def _private_dir() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="turnstone-gitconfig-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def redacted_copies(folders: Iterable[Path]) -> list[tuple[Path, Path]]:
    """(redacted copy, config file) for each config of ``config_files`` that holds a credential:
    the copy (0600, in a private temp dir, named by its content) is bound over the file in the
    sandbox. Blocking (reads, writes)."""
    pairs: list[tuple[Path, Path]] = []
    for path in config_files(folders):
        try:
            if path.stat().st_size > MAX_CONFIG_BYTES:
                continue
            text = path.read_text(encoding="utf-8", errors="surrogateescape")
        except OSError:
            continue
        redacted, count = redact_text(text)
        if not count:
            continue
        data = redacted.encode("utf-8", errors="surrogateescape")
        copy = _private_dir() / f"{hashlib.sha256(data).hexdigest()[:32]}.gitconfig"
        if not copy.exists():
            fd = os.open(copy, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
        pairs.append((copy, path))
    return pairs
