"""config.toml parsing, environment variables and CLI flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from turnstone_tui.cli import apply_cli, build_parser, main
from turnstone_tui.config import ConfigError, load_config


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_sections_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = write(
        tmp_path,
        """
[api]
base_url = "http://127.0.0.1:9/v1"
api_key = "k"
[model]
name = "m1"
temperature = 0.2
context_window = 1000
[models.fast]
name = "small"
base_url = "http://127.0.0.1:8/v1"
[models.fast.capabilities]
supports_vision = true
[tools]
timeout = 7
truncation = 5000
search = "on"
[mcp]
config_path = "/x/mcp.json"
[mcp.servers.one]
command = "echo"
""",
    )
    cfg = load_config(path)
    assert cfg.api.base_url == "http://127.0.0.1:9/v1" and cfg.model.name == "m1"
    assert cfg.model.temperature == 0.2 and cfg.model.context_window == 1000
    assert cfg.models["fast"].name == "small" and cfg.models["fast"].supports_vision is True
    assert cfg.tools.timeout == 7 and cfg.tools.truncation == 5000 and cfg.tools.search == "on"
    assert cfg.mcp.servers == {"one": {"command": "echo"}}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[tools]\ntimeout = 'soon'", "tools.timeout: expected int"),
        ("[tools]\nsearch = 'maybe'", "tools.search"),
        ("[tools]\nnative_web_search = 'sometimes'", "tools.native_web_search: must be auto, on or off"),
        ("[model]\ncolour = 1", "model.colour: unknown key"),
        ("[nonsense]\na = 1", r"\[nonsense\]: unknown section"),
        ("[mcp]\nlog_level = 'loud'", "mcp.log_level: must be one of debug"),
        ("not = [toml", "invalid TOML"),
    ],
)
def test_invalid_config_is_a_clear_error_naming_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=message) as err:
        load_config(path)
    assert str(path) in str(err.value)


def test_invalid_config_from_the_cli_prints_one_line_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "[tools]\ntimeout = 'soon'")
    assert main(["--config", str(path), "-p", "hi"]) == 2
    err = capsys.readouterr().err
    assert "tools.timeout" in err and "Traceback" not in err


def test_env_and_cli_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("TURNSTONE_CONFIG", str(write(tmp_path, "[tools]\ntimeout = 9")))
    cfg = load_config()
    assert cfg.api.api_key == "from-env" and cfg.api.base_url == "http://127.0.0.1:1/v1"
    assert cfg.tools.timeout == 9
    args = build_parser().parse_args(
        [
            "--api-key",
            "cli",
            "--tool-timeout",
            "3",
            "--tool-search",
            "off",
            "--skip-permissions",
            "--db",
            "x.db",
        ]
    )
    cfg = apply_cli(cfg, args)
    assert cfg.api.api_key == "cli" and cfg.tools.timeout == 3 and cfg.tools.search == "off"
    assert cfg.tools.skip_permissions and cfg.db_path == "x.db"


def test_missing_explicit_config_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.toml")


def test_tool_search_flags_override_the_config(tmp_path: Path) -> None:
    cfg = load_config(
        write(tmp_path, '[tools]\nsearch = "off"\nsearch_threshold = 20\nsearch_max_results = 5')
    )
    args = build_parser().parse_args(
        ["--tool-search", "on", "--tool-search-threshold", "7", "--tool-search-max-results", "3"]
    )
    cfg = apply_cli(cfg, args)
    assert (cfg.tools.search, cfg.tools.search_threshold, cfg.tools.search_max_results) == ("on", 7, 3)
    with pytest.raises(ConfigError, match="--tool-search-threshold: must be positive"):
        apply_cli(cfg, build_parser().parse_args(["--tool-search-threshold", "0"]))
