"""man: real pages where man exists; the --help fallback and clear messages hold with or without man."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.executors.exec_helpers import execute, make_ctx, prepare, run
from turnstone_tui.executors import man as man_module
from turnstone_tui.executors.man import PREPARERS, clean_man_text

pytestmark = pytest.mark.timeout(60)


def _has_page(page: str) -> bool:
    if shutil.which("man") is None:
        return False
    return subprocess.run(["man", "-w", page], capture_output=True).returncode == 0


@pytest.mark.skipif(not _has_page("ls"), reason="man or the ls page is not installed on this machine")
async def test_real_man_page_is_plain_text(tmp_path: Path) -> None:
    item = await prepare(PREPARERS, make_ctx(tmp_path), "man", page="ls")
    assert item.needs_approval is False and item.header == "man: ls"
    result = await execute(item)
    assert not result.is_error
    assert "NAME" in result.text and "list directory contents" in result.text
    assert "\x08" not in result.text and "\x1b[" not in result.text
    assert max(len(line) for line in result.text.splitlines()) <= 100


@pytest.mark.skipif(not _has_page("printf.3"), reason="no section 3 printf page here")
async def test_section_is_honoured(tmp_path: Path) -> None:
    result = await run(PREPARERS, make_ctx(tmp_path), "man", page="printf", section="3")
    first = result.text.splitlines()[0].lower()
    assert "printf(3)" in first and "printf(1)" not in first


async def test_missing_page_and_command_is_a_clear_error(tmp_path: Path) -> None:
    result = await run(PREPARERS, make_ctx(tmp_path), "man", page="turnstone-no-such-page-xyz")
    assert result.is_error
    assert "turnstone-no-such-page-xyz" in result.text and "not a command on PATH" in result.text


async def test_help_fallback_when_there_is_no_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tool = bindir / "turnstone-fake-tool"
    tool.write_text(
        "#!/bin/sh\nif [ \"$1\" = --help ]; then echo 'Usage: turnstone-fake-tool [--shiny]'; fi\n"
    )
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(man_module, "HELP_ALLOWLIST", man_module.HELP_ALLOWLIST | {"turnstone-fake-tool"})
    workspace = (
        tmp_path / "project"
    )  # the tool lies outside it (a workspace's own program runs only sandboxed)
    workspace.mkdir()
    result = await run(PREPARERS, make_ctx(workspace), "man", page="turnstone-fake-tool")
    assert not result.is_error
    assert "Output of `turnstone-fake-tool --help` instead" in result.text
    assert "Usage: turnstone-fake-tool [--shiny]" in result.text


@pytest.mark.parametrize(
    ("args", "message"),
    [({"page": "ls; rm -rf /"}, "must be a man page name"), ({"page": "-k"}, "must be a man page name"),
     ({"page": "ls", "section": "1; echo"}, "'section'"), ({}, "must be a man page name")],
)  # fmt: skip
async def test_bad_arguments(tmp_path: Path, args: dict, message: str) -> None:
    item = await prepare(PREPARERS, make_ctx(tmp_path), "man", **args)
    assert item.error and message in item.error


def test_overstrike_and_ansi_are_removed() -> None:
    assert clean_man_text("N\x08NA\x08AM\x08ME\x08E _\x08u_\x08l \x1b[1mbold\x1b[0m") == "NAME ul bold"


async def test_without_man_installed_the_help_fallback_still_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tool = bindir / "turnstone-fake-tool"
    tool.write_text("#!/bin/sh\necho 'fake help text'\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir))  # no man on this PATH
    monkeypatch.setattr(man_module, "HELP_ALLOWLIST", man_module.HELP_ALLOWLIST | {"turnstone-fake-tool"})
    workspace = tmp_path / "project"
    workspace.mkdir()
    result = await run(PREPARERS, make_ctx(workspace), "man", page="turnstone-fake-tool")
    assert "man is not installed" in result.text and "fake help text" in result.text
    missing = await run(PREPARERS, make_ctx(workspace), "man", page="ls")
    assert missing.is_error and "man is not installed" in missing.text


async def test_help_of_a_program_off_the_allowlist_is_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """man is auto-approved: it must not run an arbitrary program (here one that leaves a marker)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    marker = tmp_path / "ran"
    tool = bindir / "turnstone-unknown-tool"
    tool.write_text(f"#!/bin/sh\ntouch {marker}\necho 'help text'\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    result = await run(PREPARERS, make_ctx(tmp_path), "man", page="turnstone-unknown-tool")
    assert result.is_error and "not on man's allowlist" in result.text and "bash tool" in result.text
    assert not marker.exists()


async def test_the_help_fallback_runs_no_code_of_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """man is auto-approved and `pytest --help` imports the working directory's conftest.py: a
    conftest.py the model wrote unasked (accept-edits, full-auto) ran outside the sandbox through
    `man pytest` (yarn's yarnPath, rustup's toolchain path, maven's jvm.config alike). The fallback
    now runs in an empty directory (sandboxed where it can be), and a program found through a
    relative PATH entry is not run at all."""
    import sys

    workspace = tmp_path / "project"
    workspace.mkdir()
    marker = workspace / "conftest-ran"
    (workspace / "conftest.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(man_module.shutil, "which", lambda n, _w=shutil.which: None if n == "man" else _w(n))
    result = await run(PREPARERS, make_ctx(workspace), "man", page="pytest")
    assert "usage: pytest" in result.text, result.text
    assert not marker.exists()

    planted = workspace / "bin"
    planted.mkdir()
    (planted / "pytest").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (planted / "pytest").chmod(0o755)
    monkeypatch.chdir(workspace)
    monkeypatch.setenv("PATH", f"bin{os.pathsep}{os.environ['PATH']}")
    relative = await run(PREPARERS, make_ctx(workspace), "man", page="pytest")
    assert relative.is_error and "relative PATH entry" in relative.text and not marker.exists()
