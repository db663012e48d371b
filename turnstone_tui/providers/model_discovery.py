"""No model configured: ask an OpenAI-compatible server which models it serves.

A local server (llama.cpp, vLLM, Ollama's /v1) usually serves one model, and vLLM or Ollama refuse
a request that names none, so with ``--base-url`` and no ``--model`` the app uses the model the
server offers when there is exactly one. With several (or the hosted API) it names a few and says
how to pick one; nothing is guessed. Stdlib HTTP in a thread: this runs while the app starts, and
importing httpx here would race the provider build's import of it.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from dataclasses import dataclass

DISCOVERY_TIMEOUT = 3.0
"""Seconds to wait for the model list; a server that is down is reported by the first request."""
NAMES_SHOWN = 8
PICK_HINT = "pick one with /model NAME, --model NAME or [model] name in config.toml"


@dataclass(frozen=True, slots=True)
class ModelChoice:
    model: str
    """The model to use ("" when none could be chosen)."""
    notice: str
    """What to tell the user (empty when there is nothing to say)."""


def models_url(base_url: str) -> str:
    return (base_url.rstrip("/") or "https://api.openai.com/v1") + "/models"


def _fetch_model_ids(url: str, api_key: str, timeout: float) -> list[str]:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - the configured API
        body = json.loads(response.read(1_000_000))
    entries = body.get("data") if isinstance(body, dict) else None
    if not isinstance(entries, list):
        return []
    return [str(entry["id"]) for entry in entries if isinstance(entry, dict) and entry.get("id")]


def choose(model_ids: list[str]) -> ModelChoice:
    """The choice for a server offering ``model_ids``."""
    if len(model_ids) == 1:
        return ModelChoice(model_ids[0], f"No model is set: using {model_ids[0]}, the one the server offers.")
    if not model_ids:
        return ModelChoice("", f"No model is set and the server lists none: {PICK_HINT}.")
    shown = ", ".join(model_ids[:NAMES_SHOWN]) + (" …" if len(model_ids) > NAMES_SHOWN else "")
    return ModelChoice("", f"No model is set and the server offers {len(model_ids)} ({shown}): {PICK_HINT}.")


async def discover_model(base_url: str, api_key: str) -> ModelChoice:
    """The model to use when none is configured, and what to tell the user. Never raises."""
    url = models_url(base_url)
    try:
        model_ids = await asyncio.to_thread(_fetch_model_ids, url, api_key, DISCOVERY_TIMEOUT)
    except (OSError, ValueError, urllib.error.URLError) as exc:
        reason = getattr(exc, "reason", None) or exc
        return ModelChoice(
            "", f"No model is set and {url} could not be asked which it serves ({reason}): {PICK_HINT}."
        )
    return choose(model_ids)
