"""The Config that points turnstone at the scripted model server (tests, snapshots, benchmarks)."""

from __future__ import annotations

from pathlib import Path

from turnstone_tui.config import Config


def scripted_config(
    openai_base_url: str, db_path: str | Path, *, context_window: int = 8000, api_key: str = "test-key"
) -> Config:
    """An OpenAI-protocol model named ``scripted-model`` at ``openai_base_url``, no retries, the
    database at ``db_path``."""
    config = Config()
    config.api.base_url = openai_base_url
    config.api.api_key = api_key
    config.model.name = "scripted-model"
    config.model.provider = "openai"
    config.model.context_window = context_window
    config.model.retries = 0
    config.db_path = str(db_path)
    return config
