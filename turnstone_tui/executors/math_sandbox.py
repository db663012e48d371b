"""Child-side runner of the math tool: ``python -I -B math_sandbox.py TMPDIR`` with the code on stdin.

Order matters:
1. read the code, set memory / file-size / core limits;
2. pre-import the math libraries (they need to open files, maybe start BLAS threads);
3. set the CPU-time limit (counted from now) and forbid new processes (RLIMIT_NPROC);
4. install an audit hook that refuses sockets, process creation, ctypes, and any write, delete,
   rename or permission change outside TMPDIR;
5. run the code; a last bare expression is printed like in a notebook.

This is defence in depth for a tool the user approves call by call, not a jail: the parent also
runs it in its own process group with a wall-clock timeout, a scrubbed environment and cwd=TMPDIR.
It must not import anything from turnstone_tui (it runs isolated, from its file path).
"""

from __future__ import annotations

import ast
import linecache
import os
import sys
import traceback
from typing import Any

CPU_SECONDS = 10
MEMORY_BYTES = 2 * 1024**3
FILE_SIZE_BYTES = 16 * 1024**2
SOURCE_NAME = "<math>"
EXIT_REFUSED = 3

PRE_IMPORTS = (
    "import ctypes as _ctypes_preloaded  # loaded before the hook; dlopen/calls are refused after\n"
    "del _ctypes_preloaded\n"
    "import math, fractions, itertools, functools, collections, decimal, operator, random, re, string\n"
    "from fractions import Fraction\n"
    "from decimal import Decimal\n"
    "import numpy\n"
    "import numpy as np\n"
    "import scipy\n"
    "import sympy\n"
    "import sympy as sp\n"
    "from sympy import (symbols, Symbol, solve, simplify, sqrt, Matrix, Rational, pi, E, I, oo, exp, log,\n"
    "    sin, cos, tan, asin, acos, atan, sinh, cosh, tanh, diff, integrate, limit, series, expand, factor,\n"
    "    Eq, nsimplify, N, summation, product, binomial, factorial, gcd, lcm, isprime, primerange, factorint,\n"
    "    Poly, roots, dsolve, Function, Derivative, Integral, Sum, latex, pprint, zeros, ones, eye, floor,\n"
    "    ceiling, Abs, Piecewise, linsolve, nsolve, apart, together, cancel, trigsimp, Float, Integer)\n"
)

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_PROCESS_EVENTS = frozenset(
    {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
     "os.kill", "os.killpg", "pty.spawn", "os.startfile", "os.popen"}
)  # fmt: skip
_CTYPES_EVENTS = frozenset({"ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata", "ctypes.call_function"})
# event -> indexes of path arguments that must stay inside the temp dir
_PATH_EVENTS: dict[str, tuple[int, ...]] = {
    "os.remove": (0,), "os.rmdir": (0,), "os.mkdir": (0,), "os.rename": (0, 1), "os.replace": (0, 1),
    "os.link": (0, 1), "os.symlink": (1,), "os.chmod": (0,), "os.chown": (0,), "os.utime": (0,),
    "os.truncate": (0,), "os.setxattr": (0,), "os.removexattr": (0,), "shutil.rmtree": (0,),
    "shutil.move": (0, 1), "shutil.chown": (0,), "os.mkfifo": (0,), "os.mknod": (0,),
}  # fmt: skip
# events whose dir_fd argument (index) we cannot check: refuse when it is used
_DIR_FD_INDEXES: dict[str, tuple[int, ...]] = {
    "os.remove": (1,), "os.rmdir": (1,), "os.mkdir": (2,), "os.chmod": (2,), "os.chown": (3,), "os.utime": (3,),
    "os.rename": (2, 3), "os.replace": (2, 3), "os.link": (2, 3), "os.symlink": (2,),
}  # fmt: skip


class SandboxRefused(PermissionError):
    pass


def _set_limit(name: str, soft: int, hard: int | None = None) -> None:
    import resource

    which = getattr(resource, name, None)
    if which is None:
        return
    try:
        cur_soft, cur_hard = resource.getrlimit(which)
        hard = soft if hard is None else hard
        if cur_hard != resource.RLIM_INFINITY:
            hard = min(hard, cur_hard)
            soft = min(soft, hard)
        resource.setrlimit(which, (soft, hard))
    except (ValueError, OSError):
        pass


def _make_hook(root: str) -> Any:
    root = os.path.realpath(root)
    allowed_devices = {"/dev/null"}
    busy = [False]

    def inside(path: Any) -> bool:
        if isinstance(path, int):
            return False
        try:
            real = os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError):
            return False
        return real == root or real.startswith(root + os.sep) or real in allowed_devices

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if busy[0]:
            return
        busy[0] = True
        try:
            _judge(event, args)
        finally:
            busy[0] = False

    def _judge(event: str, args: tuple[Any, ...]) -> None:
        if event.startswith("socket."):
            raise SandboxRefused("math sandbox: network access is not allowed")
        if event in _PROCESS_EVENTS:
            raise SandboxRefused(f"math sandbox: starting or signalling processes is not allowed ({event})")
        if event in _CTYPES_EVENTS:
            raise SandboxRefused("math sandbox: ctypes is not allowed")
        if event == "import" and args and args[0] in ("_posixsubprocess", "posix", "nt"):
            raise SandboxRefused(f"math sandbox: importing {args[0]} is not allowed")
        if event == "open":
            path, mode, flags = (tuple(args) + (None, None, None))[:3]
            writing = (isinstance(flags, int) and flags & _WRITE_FLAGS) or (
                isinstance(mode, str) and any(c in mode for c in "wax+")
            )
            if mode is None and not isinstance(path, int) and not inside(path) and _is_dir(path):
                # os.open() of a directory yields a dir_fd, and "open" events do not show dir_fd:
                # a later os.open(name, O_CREAT, dir_fd=fd) could write anywhere. Refuse the fd.
                raise SandboxRefused("math sandbox: opening directories outside the temp dir is not allowed")
            if writing and not (isinstance(path, int) or inside(path)):
                raise SandboxRefused(
                    f"math sandbox: writing {os.fsdecode(path)!s} is not allowed (only inside the temp dir {root})"
                )
            return
        indexes = _PATH_EVENTS.get(event)
        if indexes is not None:
            for at in _DIR_FD_INDEXES.get(event, ()):
                if len(args) > at and args[at] not in (None, -1):
                    raise SandboxRefused(f"math sandbox: {event} with dir_fd is not allowed")
            for i in indexes:
                if i < len(args) and not inside(args[i]):
                    raise SandboxRefused(f"math sandbox: {event} outside the temp dir is not allowed")

    return hook


def _is_dir(path: Any) -> bool:
    try:
        return os.path.isdir(os.fsdecode(path))
    except (TypeError, ValueError):
        return False


def _neuter_process_primitives() -> None:
    """Close the doors the audit events do not cover (C-level fork_exec)."""
    mod = sys.modules.get("_posixsubprocess")
    if mod is not None:

        def refused(*_a: Any, **_k: Any) -> Any:
            raise SandboxRefused("math sandbox: starting processes is not allowed")

        mod.fork_exec = refused  # type: ignore[attr-defined]


def _print_error(exc: BaseException) -> None:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == SOURCE_NAME]
    out = []
    if frames:
        out.append("Traceback (most recent call last):\n")
        out.extend(traceback.format_list(frames))
    out.extend(traceback.format_exception_only(type(exc), exc))
    sys.stderr.write("".join(out))


def _run(code: str, namespace: dict[str, Any]) -> int:
    linecache.cache[SOURCE_NAME] = (len(code), None, code.splitlines(True), SOURCE_NAME)
    try:
        tree = ast.parse(code, SOURCE_NAME, "exec")
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, SOURCE_NAME, "exec"), namespace)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), SOURCE_NAME, "eval"), namespace)
            if value is not None:
                print(value)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 0
    except BaseException as exc:  # noqa: BLE001 - everything the user code raises is reported
        _print_error(exc)
        return EXIT_REFUSED if isinstance(exc, SandboxRefused) else 1
    return 0


def main() -> int:
    if len(sys.argv) != 2:
        sys.stderr.write("usage: math_sandbox.py TMPDIR < code\n")
        return 2
    root = sys.argv[1]
    code = sys.stdin.read()
    sys.stdin.close()
    os.chdir(root)
    _set_limit("RLIMIT_AS", MEMORY_BYTES)
    _set_limit("RLIMIT_FSIZE", FILE_SIZE_BYTES)
    _set_limit("RLIMIT_CORE", 0)
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    try:
        exec(PRE_IMPORTS, namespace)
    except ImportError as exc:  # a missing library is reported, the rest still works
        sys.stderr.write(f"[math sandbox: pre-import failed: {exc}]\n")
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = int(usage.ru_utime + usage.ru_stime) + 1
    _set_limit("RLIMIT_CPU", used + CPU_SECONDS, used + CPU_SECONDS + 2)
    _set_limit("RLIMIT_NPROC", 0)
    _neuter_process_primitives()
    sys.addaudithook(_make_hook(root))
    status = _run(code, namespace)
    sys.stdout.flush()
    sys.stderr.flush()
    return status


if __name__ == "__main__":
    sys.exit(main())
