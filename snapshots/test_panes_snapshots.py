"""Snapshots of the real TurnstoneApp (real ChatSession, real tools, scripted model server) showing the
bash panes, the approval modal, the plan review screen and the MCP panel.

Every snapshot was looked at as a picture before it was accepted. The UI clock is frozen (spinners and
elapsed times are fixed), the cursor does not blink and the terminal size is fixed.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from tests.helpers.model_server import Reply, ScriptedModelServer  # noqa: E402
from tests.helpers.scripted_config import scripted_config  # noqa: E402
from turnstone_tui.app.app import TurnstoneApp  # noqa: E402
from turnstone_tui.app.screens.approval import ApprovalScreen  # noqa: E402
from turnstone_tui.app.screens.plan_review import PlanReviewScreen  # noqa: E402
from turnstone_tui.runtime import Runtime, RuntimeOptions  # noqa: E402
from turnstone_tui.widgets.mcp_panel import McpPanel  # noqa: E402
from turnstone_tui.widgets.pane_grid import ParallelPanes  # noqa: E402

pytestmark = pytest.mark.timeout(120)

SIZE = (120, 36)
DEMO_SERVER = _ROOT / "tests" / "helpers" / "mcp_servers" / "demo_server.py"


@pytest.fixture(autouse=True)
def deterministic_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """Session and plan ids come from uuid4: make them repeatable so the screens are."""
    counter = itertools.count(1)
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=next(counter)))


def make_app(server: ScriptedModelServer, tmp_path: Path, mcp_servers: dict | None = None) -> TurnstoneApp:
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    config = scripted_config(server.openai_base_url, tmp_path / "turnstone.db")
    # whether bubblewrap runs depends on the machine: the sandbox is off, so the status bar and the
    # approval modal read the same everywhere
    config.sandbox.mode = "off"
    options = RuntimeOptions(cwd=workdir, start_mcp=False, start_watches=False)
    if mcp_servers is not None:
        mcp_file = tmp_path / "mcp.json"
        mcp_file.write_text(json.dumps({"mcpServers": mcp_servers}))
        options = RuntimeOptions(
            cwd=workdir, start_mcp=True, start_watches=False, mcp_config_path=str(mcp_file)
        )

    async def factory() -> Runtime:
        return await Runtime.create(config, options=options)

    app = TurnstoneApp(runtime_factory=factory, cwd=workdir)
    return app


async def wait_until(
    pilot: Pilot, predicate: Callable[[], object], limit: float = 20.0, what: str = ""
) -> None:
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        await pilot.pause(0.05)
    await pilot.pause()


async def send(pilot: Pilot, text: str) -> None:
    app = pilot.app
    assert isinstance(app, TurnstoneApp)
    await asyncio.wait_for(app.wait_ready(), 20)
    app.cursor_blink = False
    for widget in app.query(Input):
        widget.cursor_blink = False
    prompt = app.prompt
    prompt.cursor_blink = False
    prompt.focus()
    await pilot.pause()
    prompt.insert(text)
    await pilot.press("enter")


def pane_lines(app: TurnstoneApp) -> list[int]:
    panes = app.query_one(ParallelPanes)
    return [len(panes.pane(cid).lines) for cid in panes.call_ids]  # type: ignore[union-attr]


def streaming_command(tag: str) -> str:
    """Six stdout lines, then (once the test creates ``err``) one stderr line, then wait until the
    test creates ``end``: every pane is mid-run, its output complete and in order (stdout and stderr
    are separate pipes, so the stderr line waits until the stdout lines are on screen)."""
    return (
        f'for i in 1 2 3 4 5 6; do echo "{tag} step $i"; done; until test -e err; do sleep 0.1; done; '
        f"echo '{tag}: waiting' >&2; until test -e end; do sleep 0.1; done"
    )


def panes_script(count: int) -> list[Reply]:
    calls = [("bash", {"command": streaming_command(tag)}, f"call_{tag}") for tag in "abcd"[:count]]
    return [Reply.tools(calls), Reply.text("done")]


@pytest.fixture
def gates(tmp_path: Path) -> Iterator[Path]:
    """The folder the pane commands run in; at the end the commands are let go (``end``)."""
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    yield workdir
    (workdir / "err").touch()
    (workdir / "end").touch()


async def approve_and_stream(pilot: Pilot, count: int, workdir: Path) -> None:
    app = pilot.app
    assert isinstance(app, TurnstoneApp)
    await send(pilot, f"run {count} builds in parallel")
    await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="the approval modal")
    await pilot.press("y")
    await wait_until(
        pilot,
        lambda: len(pane_lines(app)) == count and all(n == 6 for n in pane_lines(app)),
        limit=60,
        what="the panes' stdout",
    )
    (workdir / "err").touch()  # now the stderr line, after the stdout lines
    await wait_until(pilot, lambda: all(n == 7 for n in pane_lines(app)), limit=60, what="the panes' stderr")
    # Short panes scroll: wait until each follows its last line (the scrollbar thumb is on screen).
    await wait_until(
        pilot, lambda: all(at_end(app, cid) for cid in app.panes.call_ids), limit=60, what="panes at the end"
    )
    await settled(pilot)


def at_end(app: TurnstoneApp, call_id: str) -> bool:
    pane = app.panes.pane(call_id)
    assert pane is not None
    log = pane.log_view
    if log.size.height == 0 or log.max_scroll_y != log.scroll_y:
        return False
    return not log.show_vertical_scrollbar or log.vertical_scrollbar.position == log.scroll_y


async def settled(pilot: Pilot, frames: int = 3, limit: float = 60.0) -> None:
    """Wait until the screen is fully painted and stays the same: the same screenshot ``frames``
    times in a row, with the scheduled animations and refreshes done in between."""
    app = pilot.app
    deadline = time.monotonic() + limit
    last, same = "", 0
    while same < frames:
        if time.monotonic() > deadline:
            raise AssertionError("the screen did not settle")
        await pilot.wait_for_scheduled_animations()
        await pilot.pause(0.1)
        shot = app.export_screenshot()
        same = same + 1 if shot == last else 1
        last = shot


def test_two_parallel_bash_panes(
    snap_compare, model_server: ScriptedModelServer, tmp_path: Path, gates: Path
) -> None:
    model_server.script(panes_script(2))

    async def run_before(pilot: Pilot) -> None:
        await approve_and_stream(pilot, 2, gates)

    assert snap_compare(make_app(model_server, tmp_path), terminal_size=SIZE, run_before=run_before)


def test_four_parallel_bash_panes(
    snap_compare, model_server: ScriptedModelServer, tmp_path: Path, gates: Path
) -> None:
    model_server.script(panes_script(4))

    async def run_before(pilot: Pilot) -> None:
        await approve_and_stream(pilot, 4, gates)

    assert snap_compare(make_app(model_server, tmp_path), terminal_size=SIZE, run_before=run_before)


async def open_approval(pilot: Pilot, keys: tuple[str, ...] = ()) -> None:
    app = pilot.app
    assert isinstance(app, TurnstoneApp)
    await send(pilot, "please do it")
    await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="the approval modal")
    if keys:
        await pilot.press(*keys)
    await pilot.pause(0.2)


def test_approval_modal_for_bash(snap_compare, model_server: ScriptedModelServer, tmp_path: Path) -> None:
    command = "git status --short && pytest -x -q tests/ | tee test.log"
    model_server.script([Reply.tools([("bash", {"command": command}, "call_1")]), Reply.text("ok")])

    async def run_before(pilot: Pilot) -> None:
        await open_approval(pilot)

    assert snap_compare(make_app(model_server, tmp_path), terminal_size=SIZE, run_before=run_before)


GREET_OLD = (
    'def greet(name):\n    """Say hello."""\n    print("hello", name)\n    return None\n\n\nCOUNT = 1\n'
)
GREET_NEW = (
    'def greet(name: str) -> str:\n    """Say hello."""\n    message = f"hello {name}"\n'
    "    print(message)\n    return message\n\n\nCOUNT = 1\n"
)


def snap_diff_approval(
    snap_compare, model_server: ScriptedModelServer, tmp_path: Path, theme: str | None
) -> bool:
    (tmp_path / "work").mkdir(exist_ok=True)
    (tmp_path / "work" / "greet.py").write_text(GREET_OLD)
    model_server.script(
        [
            # write_file replaces only a file the model has read (issue 14 item 5)
            Reply.tools([("read_file", {"path": "greet.py"}, "call_0")]),
            Reply.tools([("write_file", {"path": "greet.py", "content": GREET_NEW}, "call_1")]),
            Reply.text("ok"),
        ]
    )

    async def run_before(pilot: Pilot) -> None:
        if theme:
            pilot.app.theme = theme
        await open_approval(pilot)

    return snap_compare(make_app(model_server, tmp_path), terminal_size=SIZE, run_before=run_before)


def test_approval_modal_for_a_diff(snap_compare, model_server: ScriptedModelServer, tmp_path: Path) -> None:
    assert snap_diff_approval(snap_compare, model_server, tmp_path, None)


def test_approval_modal_for_a_diff_light_theme(
    snap_compare, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    assert snap_diff_approval(snap_compare, model_server, tmp_path, "textual-light")


def test_approval_modal_mixed_batch_with_toggles(
    snap_compare, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    (tmp_path / "work").mkdir(exist_ok=True)
    (tmp_path / "work" / "notes.txt").write_text("alpha\nbeta\n")
    model_server.script(
        [
            Reply.tools([("read_file", {"path": "notes.txt"}, "call_0")]),
            Reply.tools(
                [
                    ("bash", {"command": "make lint"}, "call_1"),
                    ("write_file", {"path": "notes.txt", "content": "alpha\nbeta\ngamma\n"}, "call_2"),
                    ("bash", {"command": "make test"}, "call_3"),
                ]
            ),
            Reply.text("ok"),
        ]
    )

    async def run_before(pilot: Pilot) -> None:
        # Toggle "always" for row 1 (its rule, this session), leave write_file off, skip row 3
        # ("make test"); type feedback.
        await open_approval(pilot, ("space", "down", "down", "x", "tab", *"only lint for now", "enter"))

    assert snap_compare(make_app(model_server, tmp_path), terminal_size=SIZE, run_before=run_before)


PLAN = """# Plan: add a `--json` flag to the report command

## Context
`report.py` prints a table; scripts want machine-readable output.

## Steps
1. Parse `--json` in `cli.py` (`argparse`, `store_true`).
2. In `report.py`, build a list of dicts and print it with `json.dumps(rows, indent=2)`.
3. Add tests in `tests/test_report.py` for both formats.

```python
parser.add_argument("--json", action="store_true", help="print JSON")
```

## Risks
- The table format is used by other scripts: keep it the default.
"""


def snap_plan_review(
    snap_compare, model_server: ScriptedModelServer, tmp_path: Path, theme: str | None, monkeypatch
) -> bool:
    # The plan lives in the data dir beside the database (tmp_path): shown as ~/plans/... with this HOME.
    monkeypatch.setenv("HOME", str(tmp_path))
    model_server.script(
        [
            Reply.tools([("plan_agent", {"goal": "Add a --json flag to the report command"}, "call_1")]),
            Reply.text(PLAN),  # the planning sub-agent's answer
            Reply.text("ok"),
        ]
    )

    async def run_before(pilot: Pilot) -> None:
        app = pilot.app
        if theme:
            app.theme = theme
        await send(pilot, "please plan it")  # plan_agent runs unasked: the review is the question
        await wait_until(pilot, lambda: isinstance(app.screen, PlanReviewScreen), what="the plan review")
        await pilot.pause(0.3)

    return snap_compare(make_app(model_server, tmp_path), terminal_size=SIZE, run_before=run_before)


def test_plan_review_screen(
    snap_compare, model_server: ScriptedModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert snap_plan_review(snap_compare, model_server, tmp_path, None, monkeypatch)


def test_plan_review_screen_light_theme(
    snap_compare, model_server: ScriptedModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert snap_plan_review(snap_compare, model_server, tmp_path, "textual-light", monkeypatch)


def test_mcp_panel_connected_and_failed(
    snap_compare, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    servers = {
        "demo": {"command": sys.executable, "args": [str(DEMO_SERVER), "--name", "demo"]},
        "broken": {
            "command": sys.executable,
            "args": ["-c", "import sys; sys.stderr.write('missing API token\\n'); sys.exit(3)"],
        },
    }

    async def run_before(pilot: Pilot) -> None:
        app = pilot.app
        assert isinstance(app, TurnstoneApp)
        await asyncio.wait_for(app.wait_ready(), 20)
        app.prompt.cursor_blink = False
        mcp = app.runtime.mcp  # type: ignore[union-attr]
        await mcp.wait_ready(20)
        await pilot.press("f2")
        await wait_until(pilot, lambda: bool(app.query(McpPanel)), what="the MCP panel")
        panel = app.query_one(McpPanel)
        await wait_until(pilot, lambda: "broken" in panel._server_nodes and "demo" in panel._server_nodes)
        panel.server_tree.focus()
        panel.server_tree.move_cursor(panel._server_nodes["demo"])
        await pilot.press("space")  # expand the demo server
        await pilot.pause(0.2)

    assert snap_compare(make_app(model_server, tmp_path, servers), terminal_size=SIZE, run_before=run_before)


# --- small terminals (issue 11 item 7): the prompt and the status bar stay, the panes adapt ------


def test_four_parallel_bash_panes_at_90x30(
    snap_compare, model_server: ScriptedModelServer, tmp_path: Path, gates: Path
) -> None:
    model_server.script(panes_script(4))

    async def run_before(pilot: Pilot) -> None:
        await approve_and_stream(pilot, 4, gates)

    assert snap_compare(make_app(model_server, tmp_path), terminal_size=(90, 30), run_before=run_before)


def test_four_parallel_bash_panes_at_80x24(
    snap_compare, model_server: ScriptedModelServer, tmp_path: Path, gates: Path
) -> None:
    model_server.script(panes_script(4))

    async def run_before(pilot: Pilot) -> None:
        await approve_and_stream(pilot, 4, gates)

    assert snap_compare(make_app(model_server, tmp_path), terminal_size=(80, 24), run_before=run_before)


def test_approval_modal_at_80x24(snap_compare, model_server: ScriptedModelServer, tmp_path: Path) -> None:
    (tmp_path / "work").mkdir(exist_ok=True)
    (tmp_path / "work" / "greet.py").write_text(GREET_OLD)
    model_server.script(
        [
            Reply.tools([("read_file", {"path": "greet.py"}, "call_0")]),
            Reply.tools(
                [
                    (
                        "bash",
                        {"command": "git status --short && pytest -x -q tests/ | tee test.log"},
                        "call_1",
                    ),
                    ("write_file", {"path": "greet.py", "content": GREET_NEW}, "call_2"),
                ]
            ),
            Reply.text("ok"),
        ]
    )

    async def run_before(pilot: Pilot) -> None:
        await open_approval(pilot)

    assert snap_compare(make_app(model_server, tmp_path), terminal_size=(80, 24), run_before=run_before)


def test_approval_modal_rule_choice(snap_compare, model_server: ScriptedModelServer, tmp_path: Path) -> None:
    """The "always" line offers the narrowest rule: a command prefix saved to the project file, a
    directory glob for this session, and none for a line that cannot be parsed into commands."""
    model_server.script(
        [
            Reply.tools(
                [
                    ("bash", {"command": "npm run test -- --coverage"}, "call_1"),
                    ("write_file", {"path": "docs/guide/intro.md", "content": "# Intro\n"}, "call_2"),
                    ("bash", {"command": "[[ -d build ]] && make"}, "call_3"),
                ]
            ),
            Reply.text("ok"),
        ]
    )

    async def run_before(pilot: Pilot) -> None:
        await open_approval(pilot, ("space", "space", "down", "space"))

    assert snap_compare(make_app(model_server, tmp_path), terminal_size=SIZE, run_before=run_before)
