"""Where a file tool's path really points, and whether that place is the workspace or a secret store.

Paths are resolved (symlinks followed, also dangling ones, ``..`` collapsed) before anything is
decided or shown, so ``notes.txt -> /elsewhere/x`` is judged and previewed as ``/elsewhere/x``.

Secret stores (refused for read_file / diff_file / search, and for write_file): ``~/.ssh``,
``~/.aws``, ``~/.gnupg``, ``~/.kube``, ``~/.docker``, ``~/.azure``, ``~/.config/gcloud``,
``~/.config/gh``, turnstone's own config and data dirs (config, tokens, the database; where
platformdirs puts them, ``$XDG_CONFIG_HOME`` / ``$XDG_DATA_HOME`` honoured; ``sandbox/secrets.py``),
``~/.netrc``, ``~/.git-credentials``, ``~/.pgpass``, ``~/.npmrc``, ``~/.pypirc`` (and ``.netrc``,
``.git-credentials``, ``.pgpass``, ``.pypirc`` files anywhere), the config file in use, ``.env`` / ``.env.*`` files anywhere (except ``.env.example`` / ``.sample`` / ``.template``), and
a process's environment and memory (``/proc/PID/environ``, ``/proc/PID/mem``, ``/proc/self/...``:
the app's own environment holds its API keys).

Git config files are not secret stores, but the credentials in them are secrets
(``sandbox/gitconfig.py``): read_file shows them redacted, edit_file and write_file refuse a config
that holds one (``holds_credential``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from ..sandbox.gitconfig import MAX_CONFIG_BYTES, is_git_config, redact_text
from ..sandbox.secrets import SECRET_FILES, secret_dirs

_ENV_EXAMPLES = frozenset({".env.example", ".env.sample", ".env.template", ".env.dist"})
_PROCESS_SECRETS = frozenset({"environ", "mem"})
_PROC = Path("/proc")


def real_path(path: Path) -> Path:
    """``path`` with every symlink followed (strict=False: a dangling link gives its target)."""
    return path.resolve(strict=False)


_CREDENTIAL_FILES = frozenset({".netrc", ".git-credentials", ".pgpass", ".pypirc"})


def secret_checker(extra: Iterable[Path | None] = ()) -> Callable[[Path], str | None]:
    """``secret_store`` with the stores' real paths resolved once (blocking: a few stats), for many
    paths in a row (a search's results)."""
    dirs = [(shown, real_path(path)) for shown, path in secret_dirs()]
    files = {real_path(Path(shown).expanduser()): shown for shown in SECRET_FILES}
    for path in extra:
        if path is not None:
            files.setdefault(real_path(Path(path)), "turnstone's config file")

    def check(real: Path) -> str | None:
        name = real.name
        if (name == ".env" or name.startswith(".env.")) and name not in _ENV_EXAMPLES:
            return ".env file"
        if name in _PROCESS_SECRETS and _PROC in real.parents:
            return f"a process's {'environment' if name == 'environ' else 'memory'} (/proc/PID/{name})"
        for shown, base in dirs:
            if real == base or base in real.parents:
                return shown
        if real in files:
            return files[real]
        if name in _CREDENTIAL_FILES:
            return f"{name} file"
        return None

    return check


def secret_store(real: Path, extra: Iterable[Path | None] = ()) -> str | None:
    """The secret store ``real`` lies in (as the README names it), or None."""
    return secret_checker(extra)(real)


def outside_workspace(real: Path, workspace: Path) -> bool:
    base = real_path(workspace)
    return not (real == base or base in real.parents)


def secret_refusal(tool: str, shown: str, store: str) -> str:
    return (
        f"{tool}: refused: {shown} is in a secret store ({store}); keys and tokens must not enter the "
        "conversation. Ask the user for what you need from it."
    )


def runs_code_in_git(real: Path, workspace: Path) -> bool:
    """Is ``real`` inside a ``.git`` (a directory or a worktree's ``.git`` file) or the ``.gitmodules``
    of the workspace, at any depth? What git runs comes from there (hooks, ``core.fsmonitor``, a
    ``commondir`` or ``gitdir`` naming another config, a nested repository): an edit there is never a
    plain workspace edit, so accept-edits and full-auto ask for it."""
    try:
        parts = real.relative_to(real_path(workspace)).parts
    except ValueError:
        return False
    return ".git" in parts or (bool(parts) and parts[-1] == ".gitmodules")


def holds_credential(real: Path) -> bool:
    """Is ``real`` a git config holding a credential (``sandbox/gitconfig.py``)? read_file shows it
    redacted; edit_file and write_file refuse it: an edit's old_string, found or not, would answer
    guesses about the token. Blocking (a read)."""
    if not is_git_config(real):
        return False
    try:
        with real.open("r", encoding="utf-8", errors="replace") as fh:
            text = fh.read(MAX_CONFIG_BYTES)
    except OSError:
        return False
    return redact_text(text)[1] > 0


def credential_refusal(tool: str, shown: str) -> str:
    return (
        f"{tool}: refused: {shown} is a git config that holds a credential (a token in a URL, an "
        "extraHeader, a password; read_file shows it as REDACTED), and an edit would tell you about it. "
        "Ask the user to make this change."
    )
