"""The file tools through the real engine: scripted model -> ChatSession -> read_file, edit_file, bash."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.executors.exec_helpers import wait_gone
from tests.helpers.model_server import Reply, ScriptedModelServer
from tests.helpers.recording_ui import RecordingUI
from turnstone_tui.config import Config
from turnstone_tui.core.session import ChatSession
from turnstone_tui.providers.factory import create_provider
from turnstone_tui.runtime import build_session

pytestmark = pytest.mark.timeout(60)


def make_config(server: ScriptedModelServer, tmp_path: Path) -> Config:
    cfg = Config()
    cfg.model.provider = "openai"
    cfg.api.base_url = server.openai_base_url
    cfg.api.api_key = "test-key"
    cfg.model.name = "test-model"
    cfg.db_path = str(tmp_path / "t.db")
    return cfg


async def new_session(cfg: Config, ui: RecordingUI, tmp_path: Path) -> ChatSession:
    session = build_session(cfg, create_provider(cfg), ui, cwd=tmp_path)  # type: ignore[arg-type]
    await session.start()
    return session


def tool_messages(body: dict) -> list[dict]:
    return [m for m in body["messages"] if m["role"] == "tool"]


async def test_model_reads_then_edits_a_file(model_server, tmp_path: Path) -> None:
    target = tmp_path / "app.py"
    target.write_text("DEBUG = True\n")
    model_server.script(
        [
            Reply.tools([("edit_file", {"path": "app.py", "old_string": "True", "new_string": "False"})]),
            Reply.tools([("read_file", {"path": "app.py"})]),
            Reply.tools([("edit_file", {"path": "app.py", "old_string": "True", "new_string": "False"})]),
            Reply.text("Turned debug off."),
        ]
    )
    ui = RecordingUI()
    session = await new_session(make_config(model_server, tmp_path), ui, tmp_path)
    await session.send("turn debug off")
    assert ui.text == "Turned debug off."
    requests = model_server.model_requests()
    refused = tool_messages(requests[1].body)[0]["content"]
    assert "has not been read" in refused  # the first edit was refused before any read
    assert "1\tDEBUG = True" in tool_messages(requests[2].body)[-1]["content"]
    assert "Edited app.py" in tool_messages(requests[3].body)[-1]["content"]
    assert target.read_text() == "DEBUG = False\n"
    # only the valid edit asked for approval (read_file is auto-approved, the refused edit errored)
    assert [[i.func_name for i in batch] for batch in ui.approval_requests] == [["edit_file"]]
    assert ui.approval_requests[0][0].preview_kind == "diff"


async def test_session_cancel_kills_a_running_bash_group(model_server, tmp_path: Path) -> None:
    model_server.script([Reply.tools([("bash", {"command": "echo $$; sleep 100 & echo $!; wait"})])])
    ui = RecordingUI()
    config = make_config(model_server, tmp_path)
    config.sandbox.mode = "off"  # the test reads host pids ($$, $!); a PID namespace would renumber them
    session = await new_session(config, ui, tmp_path)
    turn = asyncio.create_task(session.send("run it"))
    pids: list[int] = []
    for _ in range(200):
        pids = [int(line) for chunks in ui.chunks.values() for line, _ in chunks if line.isdigit()]
        if len(pids) == 2:
            break
        await asyncio.sleep(0.05)
    assert len(pids) == 2
    session.cancel()
    await asyncio.wait_for(turn, 10)
    assert wait_gone(pids) == []
