"""Where keys and tokens live on this machine: the secret stores that the file tools refuse
(``executors/path_policy.py``) and that the sandbox hides from the commands it runs.

- directories: ``~/.ssh``, ``~/.aws``, ``~/.gnupg``, ``~/.kube``, ``~/.docker``, ``~/.azure``,
  ``~/.config/gcloud``, ``~/.config/gh``, and turnstone's own config and data directories (the
  platform's: ``$XDG_CONFIG_HOME/turnstone`` when set, else ``~/.config/turnstone``; same for data);
- files: ``~/.netrc``, ``~/.git-credentials``, ``~/.pgpass``, ``~/.npmrc``, ``~/.pypirc``, plus what
  the caller adds (the config file in use, the database);
- services reachable through unix sockets, which a read-only mount does not stop: the user's runtime
  dir (``$XDG_RUNTIME_DIR``, ``/run/user/UID``: the D-Bus session bus, through which
  ``systemd-run --user`` starts processes outside the sandbox, the ssh and gpg agents, Wayland ...)
  and the system's service sockets (D-Bus system bus, docker, podman, containerd).

Only plain data and pathlib here (the sandbox imports nothing else from turnstone_tui).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

SECRET_DIRS = (
    "~/.ssh", "~/.aws", "~/.gnupg", "~/.kube", "~/.docker", "~/.azure", "~/.config/gcloud", "~/.config/gh",
    "~/.config/turnstone", "~/.local/share/turnstone",
)  # fmt: skip
SECRET_FILES = ("~/.netrc", "~/.git-credentials", "~/.pgpass", "~/.npmrc", "~/.pypirc")
APP_NAME = "turnstone"
SERVICE_SOCKETS = (
    "/run/dbus", "/var/run/dbus", "/run/docker.sock", "/var/run/docker.sock", "/run/podman", "/var/run/podman",
    "/run/containerd", "/var/run/containerd", "/run/snapd.socket", "/run/snapd-snap.socket",
)  # fmt: skip
KEPT_READABLE = ("skills",)
"""Entries of turnstone's config dir that sandboxed commands still read (a skill's scripts)."""


def app_dirs() -> list[tuple[str, Path]]:
    """(how the README names it, path) of turnstone's config and data directories on this platform."""
    import platformdirs

    return [
        ("turnstone's config dir", Path(platformdirs.user_config_dir(APP_NAME, appauthor=False))),
        ("turnstone's data dir", Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))),
    ]


def secret_dirs() -> list[tuple[str, Path]]:
    """(shown, path) of every secret directory, ``~`` expanded (not resolved)."""
    return [(shown, Path(shown).expanduser()) for shown in SECRET_DIRS] + app_dirs()


GIT_CODE_PATHS = ("config", "hooks")
"""What in a repository's ``.git`` makes git run code (hooks, ``core.fsmonitor``, ``core.hooksPath``,
aliases, filters). Protecting only these was not enough: a sandboxed command could write
``.git/commondir`` (git then reads its config from a folder the command made), rename ``.git`` and
put a ``.git`` file there naming such a folder, or add a gitlink to the index for a nested repository
whose own config runs code, each run by the user's next ``git status`` outside the sandbox."""


def git_code_paths(folder: Path, writable: tuple[Path, ...] = ()) -> list[Path]:
    """What stays read-only for sandboxed commands in the repository whose work tree is ``folder``:
    its whole ``.git`` (a directory, or a worktree's ``.git`` file; bound over itself, it can be
    neither changed nor renamed: git status, log and diff work, add and commit do not) and the
    ``.git`` of each submodule ``.gitmodules`` names. Not where ``[sandbox] writable`` names that
    ``.git`` itself (the user's opt-in to git writes in the sandbox). Blocking."""
    found: list[Path] = []
    for git in [folder / ".git", *(folder / sub / ".git" for sub in _submodule_paths(folder))]:
        if git.is_symlink() or not git.exists() or git.resolve() in writable:
            continue
        found.append(git)
    return found


def _submodule_paths(folder: Path) -> list[str]:
    """The ``path = ...`` entries of ``folder/.gitmodules`` (relative, inside the folder)."""
    try:
        text = (folder / ".gitmodules").read_text(errors="replace")[: 1 << 20]
    except OSError:
        return []
    paths = []
    for line in text.splitlines():
        key, _, value = line.strip().partition("=")
        value = value.strip().strip('"')
        if (
            key.strip().lower() == "path"
            and value
            and not value.startswith("/")
            and ".." not in value.split("/")
        ):
            paths.append(value)
    return paths


def runtime_dirs() -> list[Path]:
    """The user's runtime dir(s): ``$XDG_RUNTIME_DIR`` and ``/run/user/UID``."""
    found = [Path(f"/run/user/{os.getuid()}")]
    if os.environ.get("XDG_RUNTIME_DIR"):
        found.insert(0, Path(os.environ["XDG_RUNTIME_DIR"]))
    return found


def hidden_paths(extra: Iterable[str | Path] = ()) -> tuple[list[Path], list[Path], list[Path]]:
    """(directories, files, kept) to hide in the sandbox: the existing secret stores with symlinks
    resolved, and the entries of turnstone's config dir to show again read-only. Blocking (stats)."""
    dirs: list[Path] = []
    files: list[Path] = []
    kept: list[Path] = []
    places = [path for _, path in secret_dirs()] + runtime_dirs() + [Path(p) for p in SERVICE_SOCKETS]
    for path in places:
        real = path.resolve()
        if real.is_dir() and real not in dirs:
            dirs.append(real)
            kept.extend(real / name for name in KEPT_READABLE if (real / name).is_dir())
    for item in [
        *(Path(f).expanduser() for f in SECRET_FILES),
        *(Path(p) for p in extra),
        *map(Path, SERVICE_SOCKETS),
    ]:
        real = item.resolve()
        if (
            real.exists()
            and not real.is_dir()
            and real not in files
            and not any(d in real.parents for d in dirs)
        ):
            files.append(real)
    return dirs, files, kept
