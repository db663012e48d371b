"""A seccomp filter for sandboxed commands: no unix sockets, so no host service behind one.

A read-only mount does not stop ``connect()`` on a unix socket, and host daemons listen on sockets
all over the filesystem (``/run/postgresql``, ``/var/run/*.sock``, a project's own ``*.sock``) and,
when the network namespace is shared (``network = "on"``), on abstract addresses (X11's
``@/tmp/.X11-unix/X0``: keystrokes into your terminal). Hiding them by list misses the next one, so
the filter denies the means instead of the places: a sandboxed process cannot create a unix socket.

- ``socket(AF_UNIX, ...)`` fails with EACCES (TCP/UDP sockets are untouched);
- ``socketpair(AF_UNIX, SOCK_DGRAM, ...)`` fails too (a datagram socket can ``sendto`` any path);
  stream and seqpacket pairs stay allowed: they are connected to each other and nothing else
  (asyncio's self-pipe, libuv's child stdio);
- ``io_uring_setup/enter/register`` fail (io_uring creates and connects sockets past seccomp);
- the x32 ABI and, for a 32-bit program, ``socketcall`` fail; its own ``socket`` / ``socketpair``
  are filtered as above.

So programs that serve on a unix socket of their own inside the sandbox (tmux, a test's unix
server, Python 3.14's forkserver) fail there too. bwrap loads the program (``--seccomp FD``) just
before it runs the command; the program is written once per agent process to a memory file. The
argv of a confined command opens it through a small ``/bin/sh`` launcher (so it works whoever starts
the command: an MCP client library); the agent's own runner (``executors/proc_group``) starts bwrap
directly instead, with the descriptor passed in (``without_launcher``).
Supported: x86_64 and aarch64 (elsewhere ``program()`` is None and the profile has no filter).
"""

from __future__ import annotations

import atexit
import functools
import os
import platform
import shutil
import struct
import tempfile
from collections.abc import Sequence
from pathlib import Path

AF_UNIX = 1
SOCK_DGRAM = 2
SOCK_TYPE_MASK = 0xF
EACCES = 13

# classic BPF opcodes (linux/bpf_common.h) and seccomp return values (linux/seccomp.h)
LD_W_ABS = 0x00 | 0x00 | 0x20
JEQ_K = 0x05 | 0x10
JGE_K = 0x05 | 0x30
AND_K = 0x04 | 0x50
RET_K = 0x06
RET_ALLOW = 0x7FFF0000
RET_DENY = 0x00050000 | EACCES  # SECCOMP_RET_ERRNO | EACCES

OFF_NR, OFF_ARCH = 0, 4


def _arg_low(index: int) -> int:
    """Offset of the low 32 bits of syscall argument ``index`` in seccomp_data (little-endian)."""
    return 16 + 8 * index


IO_URING = (425, 426, 427)  # the same number on every architecture
ARCHES = {
    # machine: (audit arch, socket, socketpair, extra denied, compat arch, compat socket, compat socketpair, compat denied)
    "x86_64": (0xC000003E, 41, 53, (), 0x40000003, 359, 360, (102,)),  # i386: 102 = socketcall
    "aarch64": (0xC00000B7, 198, 199, (), 0x40000028, 281, 288, ()),  # arm (EABI)
}
X32_BIT = 0x40000000


class _Asm:
    """A tiny classic-BPF assembler with forward labels."""

    def __init__(self) -> None:
        self.code: list[tuple[int, int | str, int | str, int]] = []
        self.labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def op(self, code: int, k: int, jt: int | str = 0, jf: int | str = 0) -> None:
        self.code.append((code, jt, jf, k))

    def build(self) -> bytes:
        out = bytearray()
        for pc, (code, jt, jf, k) in enumerate(self.code):
            jumps = []
            for target in (jt, jf):
                offset = target if isinstance(target, int) else self.labels[target] - pc - 1
                if not 0 <= offset <= 255:
                    raise ValueError(f"jump out of range at {pc}")
                jumps.append(offset)
            out += struct.pack("=HBBI", code, jumps[0], jumps[1], k)
        return bytes(out)


def _syscalls(asm: _Asm, prefix: str, socket_nr: int, pair_nr: int, denied: tuple[int, ...]) -> None:
    asm.op(LD_W_ABS, OFF_NR)
    asm.op(JEQ_K, socket_nr, f"{prefix}socket", 0)
    asm.op(JEQ_K, pair_nr, f"{prefix}pair", 0)
    for nr in (*denied, *IO_URING):
        asm.op(JEQ_K, nr, "deny", 0)
    asm.op(RET_K, RET_ALLOW)
    asm.label(f"{prefix}socket")
    asm.op(LD_W_ABS, _arg_low(0))
    asm.op(JEQ_K, AF_UNIX, "deny", "allow")
    asm.label(f"{prefix}pair")
    asm.op(LD_W_ABS, _arg_low(0))
    asm.op(JEQ_K, AF_UNIX, 0, "allow")
    asm.op(LD_W_ABS, _arg_low(1))
    asm.op(AND_K, SOCK_TYPE_MASK)
    asm.op(JEQ_K, SOCK_DGRAM, "deny", "allow")


def program(machine: str | None = None) -> bytes | None:
    """The filter for ``machine`` (default: this one) as bwrap's ``--seccomp`` reads it, or None."""
    machine = machine or platform.machine()
    spec = ARCHES.get(machine)
    if spec is None:
        return None
    arch, socket_nr, pair_nr, denied, compat, compat_socket, compat_pair, compat_denied = spec
    asm = _Asm()
    asm.op(LD_W_ABS, OFF_ARCH)
    asm.op(JEQ_K, arch, 0, "compat")
    asm.op(LD_W_ABS, OFF_NR)
    if machine == "x86_64":
        asm.op(JGE_K, X32_BIT, "deny", 0)
    _syscalls(asm, "native_", socket_nr, pair_nr, denied)
    asm.label("compat")
    asm.op(JEQ_K, compat, 0, "deny")  # any other architecture: nothing runs
    _syscalls(asm, "compat_", compat_socket, compat_pair, compat_denied)
    asm.label("allow")
    asm.op(RET_K, RET_ALLOW)
    asm.label("deny")
    asm.op(RET_K, RET_DENY)
    return asm.build()


@functools.cache
def program_file() -> Path | None:
    """A path the filter can be read from while this process lives, or None where no filter
    exists for this machine. The filter lives in an anonymous memory file (``memfd``) opened
    through ``/proc/<pid>/fd``: it goes with the process, so even a killed app leaves nothing
    behind. Where that is not available, a private file (0600, in a 0700 temp dir removed at
    exit). Blocking (a write): call it off the event loop."""
    code = program()
    if code is None:
        return None
    try:
        fd = os.memfd_create("turnstone-seccomp", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        return _temp_file(code)
    os.write(fd, code)
    path = Path(f"/proc/{os.getpid()}/fd/{fd}")
    if not path.exists():  # no /proc
        os.close(fd)
        return _temp_file(code)
    return path


def _temp_file(code: bytes) -> Path:
    folder = tempfile.mkdtemp(prefix="turnstone-seccomp-")
    atexit.register(shutil.rmtree, folder, True)
    path = Path(folder) / "filter.bpf"
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(code)
    return path


FD = 9
"""The descriptor the launcher opens the filter file on for bwrap's ``--seccomp``."""

_LAUNCHER = ("/bin/sh", "-c", f'f=$1; shift; exec "$@" {FD}<"$f"', "turnstone-sandbox")


def launcher(path: Path) -> list[str]:
    """The argv prefix that opens ``path`` on ``FD`` and execs the rest (bwrap ... --seccomp FD):
    the filter reaches bwrap in its argv alone, whoever starts it (an MCP client library included)."""
    return [*_LAUNCHER, str(path)]


def without_launcher(argv: Sequence[str]) -> tuple[list[str], int] | None:
    """For an argv made by ``bwrap.confine`` with a filter (``launcher(path)``, then bwrap's
    arguments with ``--seccomp FD``): the bwrap argv alone, reading the same filter from a
    descriptor opened here on ``path`` (its own open file, read from its start), and that
    descriptor. The caller passes it to the child (``pass_fds``) and closes its own copy once the
    child started. The same confinement without a shell started in front of every command (an
    exec more per command, on the way from the user's approval to the command). None for any
    other argv (run as it is). Raises OSError if the filter cannot be opened."""
    head = len(_LAUNCHER) + 1
    if len(argv) <= head or tuple(argv[: len(_LAUNCHER)]) != _LAUNCHER:
        return None
    rest = list(argv[head:])
    end = rest.index("--") if "--" in rest else -1
    at = rest.index("--seccomp") if "--seccomp" in rest[:end] else -1
    if end < 0 or at < 0 or rest[at + 1] != str(FD):
        return None
    fd = os.open(argv[head - 1], os.O_RDONLY | os.O_CLOEXEC)
    rest[at + 1] = str(fd)
    return rest, fd
