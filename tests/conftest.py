"""Shared fixtures for every part's tests: the scripted model server, the OAuth test servers."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:  # make `tests.helpers` importable however pytest was started
    sys.path.insert(0, str(_ROOT))

import traceback  # noqa: E402

from tests.helpers.model_server import ScriptedModelServer  # noqa: E402

if TYPE_CHECKING:
    from tests.helpers.mcp_servers import OAuthServers

# CPython 3.11 keeps the AST constructor's recursion counter per interpreter, not per thread: two
# threads building AST objects at once (3.11's traceback module calls ast.parse for every frame it
# formats, to place its ^~~ carets) can fail one of them with "SystemError: AST constructor recursion
# depth mismatch", seen as a pytest INTERNALERROR when a server thread printed a traceback while the
# main thread formatted another. The tests run threads that format tracebacks (scripted servers,
# workers), so tracebacks here are formatted without the caret anchors (the only thing that parse is for).
if sys.version_info[:2] == (3, 11) and hasattr(traceback, "_extract_caret_anchors_from_line_segment"):
    traceback._extract_caret_anchors_from_line_segment = lambda segment: None  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def private_permission_rules(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """Every test gets its own (empty) user permissions file: never the real user's rules."""
    path = tmp_path_factory.mktemp("user-config") / "permissions.toml"
    monkeypatch.setenv("TURNSTONE_PERMISSIONS", str(path))
    return path


@pytest.fixture(autouse=True)
def private_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every test gets an empty user config directory: the real user's global AGENTS.md (or config)
    never reaches a test's system prompt."""
    path = tmp_path_factory.mktemp("xdg-config")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(path))
    return path


@pytest.fixture
def model_server() -> Iterator[ScriptedModelServer]:
    """A started scripted model server on 127.0.0.1; script it with ``model_server.script([...])``."""
    server = ScriptedModelServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def oauth_servers() -> Iterator[OAuthServers]:
    """The OAuth test authorization server and the MCP server it protects (started, on 127.0.0.1)."""
    from tests.helpers.mcp_servers import OAuthServers

    servers = OAuthServers()
    try:
        yield servers
    finally:
        servers.stop()
