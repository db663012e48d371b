"""math: sympy/numpy in a sandboxed child; every sandbox wall is tried and must hold."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from tests.executors.exec_helpers import execute, make_ctx, prepare, run
from turnstone_tui.executors.math import PREPARERS

pytestmark = pytest.mark.timeout(60)


async def math(tmp_path: Path, code: str, **ctx_overrides):
    return await run(PREPARERS, make_ctx(tmp_path, **ctx_overrides), "math", code=code)


async def test_sympy_numpy_scipy_are_preimported_and_print_is_captured(tmp_path: Path) -> None:
    code = (
        "x = symbols('x')\n"
        "print(solve(x**2 - 4, x))\n"
        "print(np.linalg.det(numpy.eye(3)))\n"
        "print(Fraction(1, 3) + Fraction(1, 6), math.factorial(5), sqrt(8))\n"
        "from scipy import integrate as si\n"
        "print(round(si.quad(lambda t: t**2, 0, 1)[0], 6))\n"
    )
    item = await prepare(PREPARERS, make_ctx(tmp_path), "math", code=code)
    assert item.needs_approval is True and item.preview == code
    result = await execute(item)
    assert result.text == "[-2, 2]\n1.0\n1/2 120 2*sqrt(2)\n0.333333", result.text
    assert not result.is_error


async def test_pytest_is_available_for_import(tmp_path: Path) -> None:
    code = (
        "import pytest\n"
        "with pytest.raises(ZeroDivisionError):\n"
        "    1 / 0\n"
        "print(0.1 + 0.2 == pytest.approx(0.3))\n"
    )
    result = await math(tmp_path, code)
    assert result.text == "True" and not result.is_error, result.text


async def test_last_expression_is_shown_and_errors_show_the_traceback(tmp_path: Path) -> None:
    shown = await math(tmp_path, "a = 6\na * 7")
    assert shown.text == "42"
    failed = await math(tmp_path, "def f(n):\n    return 1 / n\nprint('before')\nf(0)")
    assert failed.is_error
    assert failed.text.startswith("before\n")
    assert "ZeroDivisionError: division by zero" in failed.text
    assert 'File "<math>", line 4' in failed.text and "return 1 / n" in failed.text


async def test_no_output_hint(tmp_path: Path) -> None:
    result = await math(tmp_path, "y = 1")
    assert "use print()" in result.text


async def test_writing_outside_the_temp_dir_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "escaped.txt"
    code = f"open({str(target)!r}, 'w').write('pwned')"
    result = await math(tmp_path, code)
    assert result.is_error and "not allowed" in result.text
    assert not target.exists()


async def test_other_ways_of_writing_outside_are_refused(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("original")
    attempts = [
        f"import os; os.remove({str(victim)!r})",
        f"import os; os.rename({str(victim)!r}, 'stolen')",
        f"import os; os.symlink({str(victim)!r}, 'ln'); open('ln', 'w').write('x')",
        f"import os; fd = os.open({str(tmp_path)!r}, os.O_RDONLY); os.open('x', os.O_WRONLY | os.O_CREAT, dir_fd=fd)",
        f"import shutil; shutil.copy({str(victim)!r}, {str(tmp_path / 'copy')!r})",
    ]
    code = "\n".join(
        f"try:\n    {line}\n    print('ESCAPED')\nexcept PermissionError as e:\n    print('refused')"
        for line in attempts
    )
    result = await math(tmp_path, code)
    assert result.text.splitlines() == ["refused"] * len(attempts), result.text
    assert (
        victim.read_text() == "original"
        and not (tmp_path / "x").exists()
        and not (tmp_path / "copy").exists()
    )


async def test_writing_inside_the_temp_dir_works(tmp_path: Path) -> None:
    result = await math(tmp_path, "open('scratch.txt', 'w').write('ok'); print(open('scratch.txt').read())")
    assert result.text == "ok" and not result.is_error


async def test_network_is_refused_and_no_connection_arrives(tmp_path: Path) -> None:
    connections = 0

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        code = f"import socket\ns = socket.create_connection(('127.0.0.1', {port}))\nprint('connected')"
        result = await math(tmp_path, code)
        urllib = await math(
            tmp_path, f"import urllib.request\nurllib.request.urlopen('http://127.0.0.1:{port}/')"
        )
    finally:
        server.close()
        await server.wait_closed()
    assert (
        result.is_error and "network access is not allowed" in result.text and "connected" not in result.text
    )
    assert urllib.is_error and "network access is not allowed" in urllib.text
    assert connections == 0
    assert socket.AF_INET  # the parent's own sockets are unaffected


async def test_subprocesses_are_refused(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    attempts = [
        f"import subprocess; subprocess.run(['touch', {str(marker)!r}])",
        f"import os; os.system('touch {marker}')",
        "import os; os.fork()",
        f"import os; os.execv('/usr/bin/touch', ['touch', {str(marker)!r}])",
        "import ctypes; ctypes.CDLL(None).system(b'touch /tmp/x')",
        f"import _posixsubprocess as p; p.fork_exec(['touch', {str(marker)!r}])",
    ]
    code = "\n".join(
        f"try:\n    {line}\n    print('ESCAPED')\nexcept PermissionError as e:\n    print('refused')"
        for line in attempts
    )
    result = await math(tmp_path, code)
    assert result.text.splitlines() == ["refused"] * len(attempts), result.text
    assert not marker.exists()


async def test_secrets_are_not_in_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FOO_API_KEY", "sk-math-secret")
    result = await math(tmp_path, "import os; print(sorted(k for k in os.environ if 'FOO' in k))")
    assert result.text == "[]"


async def test_wall_timeout_kills_the_computation(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    ctx.config.tools.timeout = 4
    result = await run(PREPARERS, ctx, "math", code="import time\nprint('start', flush=True)\ntime.sleep(60)")
    assert result.is_error and "timed out after 4 s" in result.text and "start" in result.text


async def test_memory_limit_gives_memory_error(tmp_path: Path) -> None:
    result = await math(tmp_path, "x = bytearray(8 * 1024**3)")
    assert result.is_error and "MemoryError" in result.text


async def test_empty_code_is_rejected(tmp_path: Path) -> None:
    item = await prepare(PREPARERS, make_ctx(tmp_path), "math", code="   ")
    assert item.error and "non-empty" in item.error
