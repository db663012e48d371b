"""Confine a command with bubblewrap (``bwrap``): read-only filesystem, private /tmp, own PID namespace.

The profile (``confine``):
- ``--ro-bind / /``: the whole filesystem read-only;
- ``--dev /dev``: a minimal /dev (null, zero, random, tty ...; no disks);
- ``--proc /proc`` with ``--unshare-pid``: a fresh PID namespace, so the agent's own process (its
  ``/proc/PID/environ``, ``cmdline``, memory) and every other process are invisible;
- ``--tmpfs /tmp``: a private, empty /tmp that disappears with the command;
- then ``--bind`` of each writable path (the workspace, a math temp dir ...). These come AFTER the
  tmpfs on purpose: a workspace under /tmp must stay visible, not be hidden by the private /tmp;
- the secret stores (``secrets.py``: ``~/.ssh``, ``~/.aws``, turnstone's config and data dirs, the
  config file ...) hidden under an empty tmpfs or /dev/null, as the file tools refuse them;
- a git config holding a credential (the working repository's, ``~/.gitconfig``) replaced by a
  redacted copy (``gitconfig.py``);
- ``--unshare-net`` unless the network is allowed: only a loopback interface inside;
- a seccomp filter (``seccomp.py``): no unix sockets, so no host service behind one, wherever its
  socket lies (and abstract ones when the network namespace is shared);
- ``--unshare-ipc --unshare-uts``, ``--die-with-parent`` (the sandbox dies with the agent),
  ``--chdir`` into the working directory. bwrap drops all capabilities and sets no_new_privs.

Not confined: CPU, memory and the number of processes. A PID namespace does not stop a fork bomb
(and root ignores RLIMIT_NPROC); the bash guard refuses the obvious forms, the timeout kills the
whole namespace (when its first process dies, the kernel kills every process in it).
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

PROBE_TIMEOUT = 20.0


@dataclass(frozen=True, slots=True)
class SandboxSupport:
    available: bool
    reason: str  # why not, when unavailable ("" when available)
    bwrap: str = ""


@functools.cache
def support() -> SandboxSupport:
    """Can bubblewrap really run here? Probed once per process (blocking: call it off the event loop)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return SandboxSupport(
            False, "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
        )
    probe = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    probe += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--die-with-parent", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=PROBE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return SandboxSupport(False, f"bubblewrap cannot run here: {exc}", bwrap)
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        why = detail[-1] if detail else f"exit code {done.returncode}"
        return SandboxSupport(
            False,
            f"bubblewrap cannot create namespaces here ({why}); in a container, run it with user namespaces allowed",
            bwrap,
        )
    return SandboxSupport(True, "", bwrap)


def confine(
    argv: Sequence[str],
    *,
    cwd: Path,
    writable: Sequence[Path],
    network: bool,
    bwrap: str = "bwrap",
    readable: Sequence[Path] = (),
    hidden: tuple[Sequence[Path], Sequence[Path], Sequence[Path]] = ((), (), ()),
    seccomp: Path | None = None,
    replaced: Sequence[tuple[Path, Path]] = (),
) -> list[str]:
    """``argv`` wrapped in bwrap with the default profile; ``writable`` paths are bound read-write,
    ``readable`` ones under /tmp (e.g. the program's own files) read-only, both after the private /tmp.
    ``hidden`` (directories, files, kept: ``secrets.hidden_paths``) are mounted over last, even inside
    a writable path: an empty tmpfs on each directory, /dev/null on each file; ``kept`` (inside a hidden
    directory) bound again read-only. ``seccomp``: the filter file (``seccomp.program_file``) that
    bwrap loads before it runs ``argv`` (opened by a ``/bin/sh`` launcher in front of bwrap; the
    agent's own runner, ``executors/proc_group``, passes it to bwrap directly).
    ``replaced``: (copy, file) pairs, each copy bound read-only over its file (``gitconfig``: a git
    config with its credentials redacted)."""
    out = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    shown: set[str] = set()
    for path in readable:
        real = str(Path(path).resolve())
        if (real == "/tmp" or real.startswith("/tmp/")) and real not in shown and Path(real).exists():
            shown.add(real)
            out += ["--ro-bind", real, real]
    seen: set[str] = set()
    for path in writable:
        real = str(Path(path).resolve())
        if real in seen or not Path(real).exists():
            continue
        seen.add(real)
        out += ["--bind", real, real]
    hidden_dirs, hidden_files, kept = hidden
    places = [Path(p) for p in seen] + [Path(cwd).resolve()]
    for folder in hidden_dirs:
        if any(folder == place or folder in place.parents for place in places):
            continue  # the workspace lies inside it: hiding it would hide the workspace
        out += ["--tmpfs", str(folder)]
    for path in kept:
        out += ["--ro-bind", str(path), str(path)]
    for copy, target in replaced:
        out += ["--ro-bind", str(copy), str(target)]
    for file in hidden_files:
        out += ["--ro-bind", "/dev/null", str(file)]
    out += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent"]
    if not network:
        out.append("--unshare-net")
    if seccomp is not None:
        from .seccomp import FD, launcher

        out = [*launcher(seccomp), *out, "--seccomp", str(FD)]
    out += ["--chdir", str(Path(cwd).resolve()), "--", *argv]
    return out
