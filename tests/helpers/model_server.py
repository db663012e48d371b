"""A scripted model server speaking the OpenAI and Anthropic wire protocols, with real SSE.

Use it in-process (background thread)::

    with ScriptedModelServer([Reply.text("Hello!")]) as server:
        client = openai.AsyncOpenAI(base_url=server.openai_base_url, api_key="x")
        ...
        assert server.requests[0].body["messages"][-1]["content"] == "hi"

or standalone for subprocess / tmux tests::

    python -m tests.helpers.model_server --script script.json --port-file port.txt \
        [--requests-file requests.jsonl]

``script.json`` is a JSON list of reply dicts (``Reply.to_dict()``), e.g.
``[{"kind": "text", "content": "Hello"}, {"kind": "tools", "calls": [["bash", {"command": "ls"}]]}]``.
The port file is written (atomically) once the server listens; every request is appended to the
requests file as one JSON line ``{"method", "path", "headers", "body"}``.

Endpoints: ``POST /v1/chat/completions`` (OpenAI; base URL ``server.openai_base_url``),
``POST /v1/responses`` (OpenAI's Responses API, same base URL: typed SSE events ending with
``response.completed``, no ``[DONE]``) and ``POST /v1/messages`` (Anthropic; base URL
``server.anthropic_base_url``), streaming or not, and ``GET /v1/models``. Replies are consumed in order across both endpoints; when the script is
exhausted every request gets a 500 "script exhausted" error.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from turnstone_tui.config import Config

DEFAULT_CUT_TEXT = "This answer is going to be cut off somewhere in the middle of the stream."


@dataclass
class ToolCallSpec:
    name: str
    arguments: dict[str, Any] | str  # a str is sent as-is (may be invalid JSON)
    id: str | None = None

    def arguments_text(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)


def _call_spec(item: Any) -> ToolCallSpec:
    if isinstance(item, ToolCallSpec):
        return item
    if isinstance(item, dict):
        return ToolCallSpec(item["name"], item.get("arguments", {}), item.get("id"))
    name, arguments, *rest = item
    return ToolCallSpec(name, arguments, rest[0] if rest else None)


@dataclass
class Reply:
    """One scripted model response. Build with the class methods, not the constructor."""

    kind: str = "text"  # text | tools | error | cut | stream_error | raw | stall
    content: str = ""
    reasoning: str = ""
    think_tags: bool = False  # OpenAI only: reasoning sent as <think>..</think> inside content
    calls: list[ToolCallSpec] = field(default_factory=list)
    status: int = 200
    error_message: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    cut_at: int | None = None  # SSE events sent before the connection is dropped (or the error event)
    clean_cut: bool = False  # end the HTTP body properly, just without the protocol's terminator
    chunk_size: int = 4  # characters per content / reasoning / arguments delta
    delay: float = 0.0  # seconds between SSE events
    usage: tuple[int, int] | None = None  # (prompt, completion); default: estimated
    finish_reason: str | None = None  # override (OpenAI finish_reason / Anthropic stop_reason)
    interleave_tools: bool = False  # OpenAI: alternate argument pieces of parallel calls
    reasoning_field: str = "reasoning_content"  # OpenAI delta key: "reasoning_content" or "reasoning"
    # A provider-side web search, {"query": ..., "results": [[title, url], ...]}: Anthropic streams
    # a server_tool_use block and its results before the text, which cites every result; OpenAI
    # (search models) sends url_citation annotations after the text.
    web_search: dict[str, Any] | None = None
    # kind "raw": these SSE frames are sent verbatim (``"data: {...}\n\n"``, or with ``event:``)
    raw_events: list[str] = field(default_factory=list)
    # kind "stall": say nothing for ``delay`` seconds (after the 200 headers unless
    # ``stall_before_headers``), then drop the connection
    stall_before_headers: bool = False
    # A provider-side tool search, {"query": ..., "found": [tool names]} or with "error_code"
    # instead of "found". Anthropic: a server_tool_use block (tool_search_tool_bm25, with a
    # "caller" field) and its tool_search_tool_result, streamed before the text. Responses API:
    # tool_search_call and tool_search_output items (execution "server"; the output loads the
    # found tools' definitions from the request, an error is an "incomplete" output).
    tool_search: dict[str, Any] | None = None

    @classmethod
    def text(cls, text: str, *, reasoning: str = "", think_tags: bool = False, **options: Any) -> Reply:
        return cls(kind="text", content=text, reasoning=reasoning, think_tags=think_tags, **options)

    @classmethod
    def tools(
        cls,
        calls: Iterable[
            tuple[str, dict[str, Any] | str] | tuple[str, dict[str, Any] | str, str] | ToolCallSpec
        ],
        *,
        text: str = "",
        reasoning: str = "",
        **options: Any,
    ) -> Reply:
        """Tool calls ``(name, arguments[, id])``; a str ``arguments`` is sent raw (maybe invalid JSON)."""
        specs = [_call_spec(c) for c in calls]
        return cls(kind="tools", content=text, reasoning=reasoning, calls=specs, **options)

    @classmethod
    def error(
        cls,
        status: int,
        message: str = "",
        *,
        headers: dict[str, str] | None = None,
        retry_after: float | None = None,
        retry_after_ms: int | None = None,
    ) -> Reply:
        hdrs = dict(headers or {})
        if retry_after is not None:
            hdrs["Retry-After"] = str(retry_after)
        if retry_after_ms is not None:
            hdrs["retry-after-ms"] = str(retry_after_ms)
        return cls(
            kind="error", status=status, error_message=message or f"scripted error {status}", headers=hdrs
        )

    @classmethod
    def cut_after(
        cls, events: int, text: str = DEFAULT_CUT_TEXT, *, clean: bool = False, **options: Any
    ) -> Reply:
        """Stream ``text`` but stop after ``events`` SSE events: drop the connection (or, with
        ``clean=True``, end the body normally without ``[DONE]`` / ``message_stop``)."""
        return cls(kind="cut", content=text, cut_at=events, clean_cut=clean, **options)

    @classmethod
    def error_in_stream(
        cls, events: int, message: str, text: str = DEFAULT_CUT_TEXT, **options: Any
    ) -> Reply:
        """Stream ``text`` for ``events`` SSE events, then send an error event in the stream (as a
        server does when generation fails after the 200 response started) and end the body."""
        return cls(kind="stream_error", content=text, cut_at=events, error_message=message, **options)

    @classmethod
    def stall(cls, seconds: float, *, before_headers: bool = False) -> Reply:
        """A server that goes silent: no answer at all, or 200 headers and then not a byte."""
        return cls(kind="stall", delay=seconds, stall_before_headers=before_headers)

    @classmethod
    def raw(cls, frames: Iterable[str], **options: Any) -> Reply:
        """A stream of exactly these SSE frames (for garbage, fuzzed or hand-made streams)."""
        return cls(kind="raw", raw_events=list(frames), **options)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["calls"] = [[c.name, c.arguments, c.id] if c.id else [c.name, c.arguments] for c in self.calls]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Reply:
        data = dict(data)
        data["calls"] = [_call_spec(c) for c in data.get("calls", [])]
        if data.get("usage") is not None:
            data["usage"] = tuple(data["usage"])
        return cls(**data)


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON, or the raw text if it was not JSON, or None

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "path": self.path, "headers": self.headers, "body": self.body}


def _pieces(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _estimate_usage(reply: Reply, body: Any) -> tuple[int, int]:
    if reply.usage is not None:
        return reply.usage
    prompt = max(1, len(json.dumps(body.get("messages", []) if isinstance(body, dict) else "")) // 4)
    produced = reply.content + reply.reasoning + "".join(c.arguments_text() for c in reply.calls)
    return prompt, max(1, len(produced) // 4)


# ----------------------------------------------------------------------------------------- OpenAI


def _openai_call_id(n: int, i: int, spec: ToolCallSpec) -> str:
    return spec.id or f"call_{n}_{i}"


def openai_events(reply: Reply, body: dict[str, Any], n: int) -> list[str]:
    """The SSE ``data:`` payloads of a Chat Completions stream (the last one is ``[DONE]``)."""
    model = body.get("model") or "scripted-model"
    base = {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return json.dumps({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    out = [chunk({"role": "assistant", "content": ""})]
    if reply.think_tags and reply.reasoning:
        content = f"<think>{reply.reasoning}</think>{reply.content}"
    else:
        content = reply.content
        out += [chunk({reply.reasoning_field: p}) for p in _pieces(reply.reasoning, reply.chunk_size)]
    out += [chunk({"content": p}) for p in _pieces(content, reply.chunk_size)]
    if reply.web_search is not None:  # as OpenAI's search models cite pages: url_citation annotations
        annotations = [
            {
                "type": "url_citation",
                "url_citation": {"url": url, "title": title, "start_index": 0, "end_index": len(content)},
            }
            for title, url in reply.web_search["results"]
        ]
        out.append(chunk({"annotations": annotations}))
    per_call: list[list[str]] = []
    for i, spec in enumerate(reply.calls):
        first = {
            "index": i,
            "id": _openai_call_id(n, i, spec),
            "type": "function",
            "function": {"name": spec.name, "arguments": ""},
        }
        rest = [
            chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]})
            for p in _pieces(spec.arguments_text(), reply.chunk_size)
        ]
        per_call.append([chunk({"tool_calls": [first]}), *rest])
    if reply.interleave_tools:
        while any(per_call):
            for pieces in per_call:
                if pieces:
                    out.append(pieces.pop(0))
    else:
        out += [c for pieces in per_call for c in pieces]
    finish = reply.finish_reason or ("tool_calls" if reply.calls else "stop")
    out.append(chunk({}, finish))
    if (body.get("stream_options") or {}).get("include_usage"):
        prompt, completion = _estimate_usage(reply, body)
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        out.append(json.dumps({**base, "choices": [], "usage": usage}))
    out.append("[DONE]")
    return [f"data: {payload}\n\n" for payload in out]


def openai_completion(reply: Reply, body: dict[str, Any], n: int) -> dict[str, Any]:
    content = reply.content
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reply.reasoning:
        if reply.think_tags:
            message["content"] = f"<think>{reply.reasoning}</think>{content}"
        else:
            message[reply.reasoning_field] = reply.reasoning
    if reply.calls:
        message["tool_calls"] = [
            {
                "id": _openai_call_id(n, i, spec),
                "type": "function",
                "function": {"name": spec.name, "arguments": spec.arguments_text()},
            }
            for i, spec in enumerate(reply.calls)
        ]
    prompt, completion = _estimate_usage(reply, body)
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model") or "scripted-model",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": reply.finish_reason or ("tool_calls" if reply.calls else "stop"),
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def openai_error(reply: Reply) -> dict[str, Any]:
    return {"error": {"message": reply.error_message, "type": "scripted_error", "code": reply.status}}


# ------------------------------------------------------------------------------ OpenAI Responses


def _responses_usage(reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
    prompt = max(1, len(json.dumps(body.get("input", ""))) // 4)
    _, completion = _estimate_usage(reply, {})
    if reply.usage is not None:
        prompt, completion = reply.usage
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + completion,
    }


def responses_tool_search_items(reply: Reply, body: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """The tool_search_call and tool_search_output items of a scripted hosted tool search: the
    output carries the definitions of the found tools as the request sent them."""
    search = reply.tool_search
    if search is None:
        return []
    call_id = f"tscall_{n}"
    call = {
        "id": f"tsc_{n}",
        "type": "tool_search_call",
        "call_id": call_id,
        "execution": "server",
        "status": "completed",
        "arguments": {"query": search["query"]},
    }
    sent = {t.get("name"): t for t in body.get("tools") or () if isinstance(t, dict)}
    found = (
        []
        if "error_code" in search
        else [sent.get(name, {"type": "function", "name": name}) for name in search["found"]]
    )
    output = {
        "id": f"tso_{n}",
        "type": "tool_search_output",
        "call_id": call_id,
        "execution": "server",
        "status": "incomplete" if "error_code" in search else "completed",
        "tools": found,
    }
    return [call, output]


def responses_output(reply: Reply, body: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """The finished output items of a scripted response, in order."""
    items: list[dict[str, Any]] = []
    if reply.reasoning:
        items.append(
            {
                "id": f"rs_{n}",
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": reply.reasoning}],
                "encrypted_content": f"enc-{n}",
            }
        )
    items += responses_tool_search_items(reply, body, n)
    if reply.content:
        items.append(
            {
                "id": f"msg_{n}",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [
                    {"type": "output_text", "text": reply.content, "annotations": [], "logprobs": []}
                ],
            }
        )
    for i, spec in enumerate(reply.calls):
        items.append(
            {
                "id": f"fc_{n}_{i}",
                "type": "function_call",
                "call_id": _openai_call_id(n, i, spec),
                "name": spec.name,
                "arguments": spec.arguments_text(),
                "status": "completed",
            }
        )
    return items


def responses_object(
    reply: Reply, body: dict[str, Any], n: int, *, status: str, output: list[Any]
) -> dict[str, Any]:
    response: dict[str, Any] = {
        "id": f"resp_{n}",
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": body.get("model") or "scripted-model",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": body.get("tools") or [],
        "incomplete_details": None,
        "error": None,
    }
    if status == "incomplete":
        reason = "content_filter" if reply.finish_reason == "content_filter" else "max_output_tokens"
        response["incomplete_details"] = {"reason": reason}
    if status in ("completed", "incomplete"):
        response["usage"] = _responses_usage(reply, body)
    return response


def openai_responses_events(reply: Reply, body: dict[str, Any], n: int) -> list[str]:
    """The SSE events of a Responses stream (``event: <type>`` lines, as the API sends them),
    ending with ``response.completed`` (``response.incomplete`` for finish_reason "length")."""
    out: list[dict[str, Any]] = []

    def add(kind: str, **data: Any) -> None:
        out.append({"type": kind, "sequence_number": len(out), **data})

    add("response.created", response=responses_object(reply, body, n, status="in_progress", output=[]))
    add("response.in_progress", response=responses_object(reply, body, n, status="in_progress", output=[]))
    done = responses_output(reply, body, n)
    for index, item in enumerate(done):
        kind, item_id = item["type"], item["id"]
        if kind == "reasoning":
            add("response.output_item.added", output_index=index, item={**item, "summary": []})
            part = {"type": "summary_text", "text": ""}
            add(
                "response.reasoning_summary_part.added",
                item_id=item_id,
                output_index=index,
                summary_index=0,
                part=part,
            )
            for p in _pieces(reply.reasoning, reply.chunk_size):
                add(
                    "response.reasoning_summary_text.delta",
                    item_id=item_id, output_index=index, summary_index=0, delta=p,
                )  # fmt: skip
            add(
                "response.reasoning_summary_text.done",
                item_id=item_id, output_index=index, summary_index=0, text=reply.reasoning,
            )  # fmt: skip
            part = {"type": "summary_text", "text": reply.reasoning}
            add(
                "response.reasoning_summary_part.done",
                item_id=item_id,
                output_index=index,
                summary_index=0,
                part=part,
            )
        elif kind == "message":
            add(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "content": []},
            )
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            add(
                "response.content_part.added", item_id=item_id, output_index=index, content_index=0, part=part
            )
            for p in _pieces(reply.content, reply.chunk_size):
                add(
                    "response.output_text.delta",
                    item_id=item_id, output_index=index, content_index=0, delta=p, logprobs=[],
                )  # fmt: skip
            add(
                "response.output_text.done",
                item_id=item_id, output_index=index, content_index=0, text=reply.content, logprobs=[],
            )  # fmt: skip
            add(
                "response.content_part.done",
                item_id=item_id,
                output_index=index,
                content_index=0,
                part=item["content"][0],
            )
        elif kind == "function_call":
            add(
                "response.output_item.added",
                output_index=index,
                item={**item, "arguments": "", "status": "in_progress"},
            )
            for p in _pieces(item["arguments"], reply.chunk_size):
                add("response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=p)
            add(
                "response.function_call_arguments.done",
                item_id=item_id, output_index=index, name=item["name"], arguments=item["arguments"],
            )  # fmt: skip
        else:  # tool_search_call / tool_search_output: whole items, as hosted tools arrive
            add("response.output_item.added", output_index=index, item={**item, "status": "in_progress"})
        add("response.output_item.done", output_index=index, item=item)
    status = "incomplete" if reply.finish_reason in ("length", "content_filter") else "completed"
    add(f"response.{status}", response=responses_object(reply, body, n, status=status, output=done))
    return [f"event: {data['type']}\ndata: {json.dumps(data)}\n\n" for data in out]


def responses_error_event(reply: Reply, sequence_number: int) -> str:
    data = {
        "type": "error",
        "code": "server_error",
        "message": reply.error_message,
        "param": None,
        "sequence_number": sequence_number,
    }
    return f"event: error\ndata: {json.dumps(data)}\n\n"


# -------------------------------------------------------------------------------------- Anthropic


def _anthropic_call_id(n: int, i: int, spec: ToolCallSpec) -> str:
    return spec.id or f"toolu_{n}_{i}"


def anthropic_events(reply: Reply, body: dict[str, Any], n: int) -> list[str]:
    """The SSE events of a Messages stream, ending with ``message_stop``."""
    prompt, completion = _estimate_usage(reply, body)
    out: list[tuple[str, dict[str, Any]]] = []

    def add(event: str, **data: Any) -> None:
        out.append((event, {"type": event, **data}))

    message = {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model") or "scripted-model",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": prompt, "output_tokens": 1},
    }
    add("message_start", message=message)
    add("ping")
    index = 0
    if reply.reasoning:
        add(
            "content_block_start",
            index=index,
            content_block={"type": "thinking", "thinking": "", "signature": ""},
        )
        for p in _pieces(reply.reasoning, reply.chunk_size):
            add("content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": p})
        add("content_block_delta", index=index, delta={"type": "signature_delta", "signature": f"sig-{n}"})
        add("content_block_stop", index=index)
        index += 1
    for block, json_input in anthropic_tool_search_blocks(reply, n):
        add("content_block_start", index=index, content_block=block)
        for p in _pieces(json_input, reply.chunk_size):
            add("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": p})
        add("content_block_stop", index=index)
        index += 1
    search = reply.web_search
    if search is not None:
        tool_id = f"srvtoolu_{n}"
        block = {"type": "server_tool_use", "id": tool_id, "name": "web_search", "input": {}}
        add("content_block_start", index=index, content_block=block)
        query = json.dumps({"query": search["query"]})
        for p in _pieces(query, reply.chunk_size):
            add("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": p})
        add("content_block_stop", index=index)
        index += 1
        results = [
            {
                "type": "web_search_result",
                "title": title,
                "url": url,
                "encrypted_content": "x",
                "page_age": None,
            }
            for title, url in search["results"]
        ]
        block = {"type": "web_search_tool_result", "tool_use_id": tool_id, "content": results}
        add("content_block_start", index=index, content_block=block)
        add("content_block_stop", index=index)
        index += 1
    if reply.content:
        add("content_block_start", index=index, content_block={"type": "text", "text": ""})
        for title, url in (search or {}).get("results", []):
            citation = {
                "type": "web_search_result_location",
                "cited_text": title,
                "url": url,
                "title": title,
                "encrypted_index": "x",
            }
            add("content_block_delta", index=index, delta={"type": "citations_delta", "citation": citation})
        for p in _pieces(reply.content, reply.chunk_size):
            add("content_block_delta", index=index, delta={"type": "text_delta", "text": p})
        add("content_block_stop", index=index)
        index += 1
    for i, spec in enumerate(reply.calls):
        block = {"type": "tool_use", "id": _anthropic_call_id(n, i, spec), "name": spec.name, "input": {}}
        add("content_block_start", index=index, content_block=block)
        for p in _pieces(spec.arguments_text(), reply.chunk_size):
            add("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": p})
        add("content_block_stop", index=index)
        index += 1
    stop = reply.finish_reason or ("tool_use" if reply.calls else "end_turn")
    add(
        "message_delta",
        delta={"stop_reason": stop, "stop_sequence": None},
        usage={"output_tokens": completion},
    )
    add("message_stop")
    return [f"event: {event}\ndata: {json.dumps(data)}\n\n" for event, data in out]


def anthropic_tool_search_blocks(reply: Reply, n: int) -> list[tuple[dict[str, Any], str]]:
    """The server_tool_use and tool_search_tool_result blocks of a scripted tool search, each with
    the input JSON streamed for it ("" for the result, which arrives whole)."""
    search = reply.tool_search
    if search is None:
        return []
    tool_id = f"srvtoolu_search_{n}"
    use = {
        "type": "server_tool_use",
        "id": tool_id,
        "name": "tool_search_tool_bm25",
        "input": {},
        "caller": {"type": "direct"},
    }
    if "error_code" in search:
        content: dict[str, Any] = {
            "type": "tool_search_tool_result_error",
            "error_code": search["error_code"],
        }
    else:
        references = [{"type": "tool_reference", "tool_name": name} for name in search["found"]]
        content = {"type": "tool_search_tool_search_result", "tool_references": references}
    result = {"type": "tool_search_tool_result", "tool_use_id": tool_id, "content": content}
    return [(use, json.dumps({"query": search["query"]})), (result, "")]


def anthropic_message(reply: Reply, body: dict[str, Any], n: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.reasoning:
        content.append({"type": "thinking", "thinking": reply.reasoning, "signature": f"sig-{n}"})
    for block, json_input in anthropic_tool_search_blocks(reply, n):
        content.append({**block, "input": json.loads(json_input)} if json_input else block)
    if reply.content:
        content.append({"type": "text", "text": reply.content})
    for i, spec in enumerate(reply.calls):
        args: Any = spec.arguments if isinstance(spec.arguments, dict) else {"raw_arguments": spec.arguments}
        content.append(
            {"type": "tool_use", "id": _anthropic_call_id(n, i, spec), "name": spec.name, "input": args}
        )
    prompt, completion = _estimate_usage(reply, body)
    return {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model") or "scripted-model",
        "content": content,
        "stop_reason": reply.finish_reason or ("tool_use" if reply.calls else "end_turn"),
        "stop_sequence": None,
        "usage": {"input_tokens": prompt, "output_tokens": completion},
    }


def anthropic_error(reply: Reply) -> dict[str, Any]:
    kinds = {
        429: "rate_limit_error",
        401: "authentication_error",
        404: "not_found_error",
        529: "overloaded_error",
    }
    kind = kinds.get(reply.status, "invalid_request_error" if reply.status < 500 else "api_error")
    return {"type": "error", "error": {"type": kind, "message": reply.error_message}}


# ----------------------------------------------------------------------------------------- server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer
    timeout = 60

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet test output
        return

    def do_GET(self) -> None:  # noqa: N802
        self.server.owner._record(self, None)
        if self.path.rstrip("/").endswith("/models"):
            models = [{"id": name, "object": "model"} for name in self.server.owner.served_models]
            self._json(200, {"object": "list", "data": models})
        else:
            self._json(404, {"error": {"message": f"no such endpoint: GET {self.path}"}})

    def do_POST(self) -> None:  # noqa: N802
        self.received_at = time.monotonic()  # (the request line and headers were just read)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        owner = self.server.owner
        n = owner._record(self, body)
        path = self.path.split("?")[0].rstrip("/")
        missing = next((code for end, code in owner.missing.items() if path.endswith(end)), None)
        if missing is not None:
            self._json(missing, {"detail": "Not Found" if missing == 404 else "Method Not Allowed"})
            return
        if path.endswith("/chat/completions"):
            protocol = "openai"
        elif path.endswith("/responses"):
            protocol = "responses"
        elif path.endswith("/messages"):
            protocol = "anthropic"
        else:
            self._json(404, {"error": {"message": f"no such endpoint: POST {self.path}"}})
            return
        reply = owner._next_reply()
        if reply is None:
            message = f"script exhausted: no scripted reply left for request #{n} ({self.path})"
            reply = Reply.error(500, message)
        if not isinstance(body, dict):
            reply = Reply.error(400, "request body is not a JSON object")
        if reply.kind == "error":
            payload = anthropic_error(reply) if protocol == "anthropic" else openai_error(reply)
            self._json(reply.status, payload, reply.headers)
            return
        if not body.get("stream"):
            if protocol == "responses":
                output = responses_output(reply, body, n)
                self._json(200, responses_object(reply, body, n, status="completed", output=output))
                return
            make = openai_completion if protocol == "openai" else anthropic_message
            self._json(200, make(reply, body, n))
            return
        if reply.kind == "raw":
            self._stream(reply, reply.raw_events)
            return
        if reply.kind == "stall":
            self._stall(reply)
            return
        make_events = {"openai": openai_events, "responses": openai_responses_events}
        events = make_events.get(protocol, anthropic_events)(reply, body, n)
        if reply.kind == "stream_error":
            limit = reply.cut_at or 0
            if protocol == "responses":
                error = responses_error_event(reply, limit)
            elif protocol == "openai":
                error = f"data: {json.dumps(openai_error(reply))}\n\n"
            else:
                error = f"event: error\ndata: {json.dumps(anthropic_error(reply))}\n\n"
            events = [*events[:limit], error]
        self._stream(reply, events)

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _stall(self, reply: Reply) -> None:
        try:
            if not reply.stall_before_headers:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.wfile.flush()
            self.server.owner._stopping.wait(reply.delay)
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            self.close_connection = True

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _stream(self, reply: Reply, events: list[str]) -> None:
        stop = self.server.owner._stopping
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        limit = reply.cut_at if reply.kind == "cut" and reply.cut_at is not None else len(events)
        try:
            started = time.monotonic()
            written: list[float] = []  # when each event went out (benches compare the screen's pace with it)
            for i, event in enumerate(events[:limit]):
                # Paced on an absolute schedule (event i at i * delay), so the rate is 1/delay
                # events a second however long each write takes.
                if i and reply.delay and stop.wait(max(0.0, started + i * reply.delay - time.monotonic())):
                    break
                self._write_chunk(event.encode())
                written.append(time.monotonic())
            if reply.kind == "cut" and not reply.clean_cut:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            received = getattr(self, "received_at", started)
            self.server.owner._record_stream(started, time.monotonic(), limit, written, received)
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: ScriptedModelServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client dropping an idle keep-alive connection is normal, not worth a traceback
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class _Addresses:
    """The base URLs the SDKs and configs use, from the server's ``port``."""

    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url


class ScriptedModelServer(_Addresses):
    """The scripted server. ``start()`` runs it in a daemon thread; ``stop()`` shuts it down."""

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        requests_file: str | Path | None = None,
    ) -> None:
        self._replies: deque[Reply] = deque(replies)
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._requests_file = Path(requests_file) if requests_file else None
        self._streams: list[dict[str, Any]] = []
        self.served_models: list[str] = ["scripted-model"]
        """What ``GET /v1/models`` lists."""
        self.missing: dict[str, int] = {}
        """Endpoints this server plays without, as a proxy that lacks them does: a POST to a path
        ending in a key (``"/responses"``) answers its status (404, 405) with a plain body and uses
        no scripted reply."""
        self._httpd = _HTTPServer((host, port), _Handler)
        self._httpd.owner = self
        self._thread: threading.Thread | None = None

    # -- scripting
    def script(self, replies: Iterable[Reply]) -> None:
        """Append replies to the script (consumed in order by both endpoints)."""
        with self._lock:
            self._replies.extend(replies)

    def rescript(self, replies: Iterable[Reply]) -> None:
        """Drop the replies not consumed yet and script these instead."""
        with self._lock:
            self._replies.clear()
            self._replies.extend(replies)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._replies)

    def _next_reply(self) -> Reply | None:
        with self._lock:
            return self._replies.popleft() if self._replies else None

    # -- recording
    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def model_requests(self) -> list[RecordedRequest]:
        """Only the POSTs to the model endpoints."""
        return [r for r in self.requests if r.method == "POST"]

    def _record(self, handler: BaseHTTPRequestHandler, body: Any) -> int:
        headers = {k.lower(): v for k, v in handler.headers.items()}
        record = RecordedRequest(handler.command, handler.path, headers, body)
        with self._lock:
            self._requests.append(record)
            n = len(self._requests)
            if self._requests_file is not None:
                with self._requests_file.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(record.to_dict()) + "\n")
        return n

    def _record_stream(
        self, started: float, ended: float, events: int, written: list[float], received: float | None = None
    ) -> None:
        """A streamed reply was written whole: when its first and last event went out
        (``time.monotonic()``, the same clock in every process of this machine: benches compare it
        with the time a screen showed the text), when each event did (``written``), and when its
        request came in (``received``: its headers read)."""
        record: dict[str, Any] = {
            "received": started if received is None else received,
            "started": started,
            "ended": ended,
            "events": float(events),
            "written": written,
        }
        with self._lock:
            self._streams.append(record)
            if self._requests_file is not None:
                with Path(f"{self._requests_file}.streams").open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(record) + "\n")

    @property
    def streams(self) -> list[dict[str, Any]]:
        """Each streamed reply written whole, in order: ``started``, ``ended`` (monotonic), ``events``,
        ``written`` (when each event went out)."""
        with self._lock:
            return list(self._streams)

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> list[RecordedRequest]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.requests) >= count:
                break
            time.sleep(0.01)
        return self.requests

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    # -- configs pointing at this server
    def config_values(self, protocol: str = "openai") -> dict[str, dict[str, Any]]:
        """Config sections (as for ``parse_config``) that make turnstone talk to this server."""
        if protocol not in ("openai", "anthropic"):
            raise ValueError(f"protocol must be openai or anthropic, got {protocol!r}")
        anthropic = protocol == "anthropic"
        return {
            "api": {
                "base_url": self.anthropic_base_url if anthropic else self.openai_base_url,
                "api_key": "test-key",
            },
            "model": {
                "name": "claude-test" if anthropic else "test-model",
                "provider": protocol,
                "retries": 1,
                "retry_base_delay": 0.01,
            },
        }

    def config(self, protocol: str = "openai") -> Config:
        """A ``Config`` for this server (``protocol``: "openai" or "anthropic"); tweak fields as needed."""
        from turnstone_tui.config import parse_config

        return parse_config(self.config_values(protocol), "model-server")

    def write_config(self, path: str | Path, protocol: str = "openai") -> Path:
        """Write a config.toml for this server (for ``turnstone-tui --config PATH`` subprocess tests)."""
        lines: list[str] = []
        for section, values in self.config_values(protocol).items():
            lines.append(f"[{section}]")
            lines += [f"{key} = {json.dumps(value)}" for key, value in values.items()]
            lines.append("")
        path = Path(path)
        path.write_text("\n".join(lines), encoding="utf-8")
        return path

    # -- lifecycle
    def start(self) -> ScriptedModelServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="model-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def load_script(path: str | Path) -> list[Reply]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: the script must be a JSON list of reply objects")
    return [Reply.from_dict(item) for item in data]


def write_script(path: str | Path, replies: Iterable[Reply]) -> Path:
    """Write replies as a script file for ``python -m tests.helpers.model_server --script``."""
    path = Path(path)
    path.write_text(json.dumps([r.to_dict() for r in replies], indent=1), encoding="utf-8")
    return path


def read_requests_file(path: str | Path) -> list[dict[str, Any]]:
    path = Path(path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


class ModelServerProcess(_Addresses):
    """The scripted server as its own process (``python -m tests.helpers.model_server``), as a
    real model server is: for the real app in tmux, and for benches, where a server thread would
    take the GIL from the app. A context manager; ``openai_base_url`` etc. once entered."""

    def __init__(
        self,
        replies: list[Reply],
        workdir: Path,
        *,
        requests_file: Path | None = None,
        start_timeout: float = 30.0,
    ) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.script = write_script(workdir / "script.json", replies)
        self.port_file = workdir / "port"
        self.requests_file = requests_file or Path(f"{self.port_file}.requests.jsonl")
        self.start_timeout = start_timeout
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None

    def requests(self) -> list[dict[str, Any]]:
        """The requests served so far, as recorded by the server process."""
        return read_requests_file(self.requests_file)

    def streams(self) -> list[dict[str, Any]]:
        """The streamed replies written whole so far (see ``ScriptedModelServer.streams``)."""
        return read_requests_file(Path(f"{self.requests_file}.streams"))

    def __enter__(self) -> ModelServerProcess:
        root = Path(__file__).resolve().parents[2]
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.helpers.model_server",
                "--script",
                str(self.script),
                "--port-file",
                str(self.port_file),
                "--requests-file",
                str(self.requests_file),
            ],
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + self.start_timeout
        while not self.port_file.exists():
            if self._process.poll() is not None:
                error = self._process.stderr.read().decode() if self._process.stderr else ""
                raise RuntimeError(f"the scripted model server exited: {error}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the scripted model server did not start")
            time.sleep(0.02)
        self.port = int(self.port_file.read_text(encoding="utf-8"))
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> int | None:
        """Terminate the server; its exit status (0 when it shut down cleanly)."""
        if self._process is None:
            return None
        process, self._process = self._process, None
        process.terminate()
        status = process.wait(10)
        if process.stderr is not None:
            process.stderr.close()
        return status


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--script", required=True, help="JSON list of reply objects")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", help="write the listening port here once ready")
    parser.add_argument(
        "--requests-file", help="append each request as a JSON line (default: PORT_FILE.requests.jsonl)"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    requests_file = args.requests_file or (f"{args.port_file}.requests.jsonl" if args.port_file else None)
    server = ScriptedModelServer(load_script(args.script), port=args.port, requests_file=requests_file)
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    server.start()
    if args.port_file:
        tmp = Path(f"{args.port_file}.tmp")
        tmp.write_text(str(server.port), encoding="utf-8")
        os.replace(tmp, args.port_file)
    print(f"model server listening on {server.url}", file=sys.stderr, flush=True)
    while not done.wait(0.5):
        pass
    server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
