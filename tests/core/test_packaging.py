"""The wheel carries the tool JSONs and the styles, and works outside the source tree."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.helpers.tool_files import BUILTIN_TOOL_COUNT

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=200,
    )
    (path,) = out.glob("turnstone_tui-*.whl")
    return path


def test_wheel_contains_tools_and_styles(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    tools = {n for n in names if n.startswith("turnstone_tui/_data/tools/") and n.endswith(".json")}
    styles = {n for n in names if n.startswith("turnstone_tui/_data/styles/") and n.endswith(".tcss")}
    assert len(tools) == BUILTIN_TOOL_COUNT
    assert "turnstone_tui/_data/styles/app.tcss" in styles
    assert any(n.endswith("entry_points.txt") for n in names)


def test_math_libraries_come_with_a_normal_install(wheel: Path) -> None:
    """The math tool's libraries (pytest among them, as the spec says) are plain dependencies."""
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        lines = archive.read(metadata).decode().splitlines()
    plain = {
        line.split(":", 1)[1].strip().split(">")[0].split("=")[0].split("<")[0].strip().lower()
        for line in lines
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    }
    assert {"sympy", "numpy", "scipy", "pytest"} <= plain, plain


def test_installed_wheel_loads_its_data_from_any_directory(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code = (
        "import turnstone_tui, turnstone_tui.core.registry as r, turnstone_tui.core.resources as res;"
        "print(turnstone_tui.__file__); print(len(r.default_registry().TOOLS)); print(res.styles_dir())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=elsewhere,
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.splitlines()
    assert out[0].startswith(str(target))
    assert out[1] == str(BUILTIN_TOOL_COUNT)
    assert out[2].startswith(str(target)) and (Path(out[2]) / "app.tcss").exists()
    version = subprocess.run(
        [sys.executable, "-m", "turnstone_tui.cli", "--version"],
        cwd=elsewhere,
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert version.stdout.startswith("turnstone-tui ")
