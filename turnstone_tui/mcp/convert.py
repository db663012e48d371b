"""Pure conversions between MCP SDK objects and what the engine uses.

- names: ``mcp__<server>__<tool>``
- MCP tools -> OpenAI function-calling schemas
- CallToolResult / ReadResourceResult / GetPromptResult -> ToolResult
"""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import json
import re
from typing import Any

import mcp_types as mt

from ..core.mcp_bridge import PromptArgumentInfo, PromptInfo, ResourceInfo, ToolInfo
from ..core.truncate import truncate_output
from ..core.types import ToolResult

PREFIX = "mcp__"
SEPARATOR = "__"
_BAD_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


# One text piece of a result (a content block, a resource, structured content as JSON) is cut to its
# head and tail here, before it is copied into a ToolResult: a server's 300 MB answer is not held
# twice. The tool executor then applies [tools] truncation to the whole.
PIECE_CAP = 4 * 1024 * 1024
MAX_NAME = 64  # OpenAI rejects a whole request whose function names are longer


def qualify(server: str, name: str) -> str:
    """``mcp__<server>__<name>`` as a valid function name.

    Characters OpenAI rejects become '_'; a name over 64 characters is cut and given a short hash
    of the full name, so it stays unique and stable. The manager maps it back to the server's name.
    """
    full = f"{PREFIX}{server}{SEPARATOR}{_BAD_NAME_CHARS.sub('_', name)}"
    if len(full) <= MAX_NAME:
        return full
    digest = hashlib.sha1(f"{server}\0{name}".encode()).hexdigest()[:8]
    return f"{full[: MAX_NAME - 9]}_{digest}"


def split_qualified(qualified: str) -> tuple[str, str] | None:
    """``mcp__github__search_repos`` -> ("github", "search_repos"); None if not an MCP name."""
    if not qualified.startswith(PREFIX):
        return None
    server, sep, rest = qualified[len(PREFIX) :].partition(SEPARATOR)
    if not sep or not server or not rest:
        return None
    return server, rest


def is_mcp_name(name: str) -> bool:
    return split_qualified(name) is not None


# --- lists ------------------------------------------------------------------------------------


def normalize_schema(schema: dict[str, Any] | None) -> dict[str, Any]:
    """An MCP inputSchema as OpenAI ``parameters``: always an object schema with properties."""
    out = copy.deepcopy(schema) if isinstance(schema, dict) else {}
    if out.get("type") != "object":
        out["type"] = "object"
    if not isinstance(out.get("properties"), dict):
        out["properties"] = {}
    out.pop("$schema", None)
    return out


def tool_info(server: str, tool: mt.Tool) -> ToolInfo:
    description = tool.description or tool.title or ""
    hints = tool.annotations
    return ToolInfo(
        qualify(server, tool.name),
        tool.name,
        description,
        normalize_schema(tool.input_schema),
        read_only=hints.read_only_hint if hints else None,
        destructive=hints.destructive_hint if hints else None,
    )


def tool_schema(info: ToolInfo, server: str) -> dict[str, Any]:
    """The OpenAI function-calling schema the model sees."""
    description = f"[MCP: {server}] {info.description}".rstrip()
    return {
        "type": "function",
        "function": {
            "name": info.qualified_name,
            "description": description,
            "parameters": info.input_schema,
        },
    }


def resource_info(resource: mt.Resource) -> ResourceInfo:
    return ResourceInfo(
        uri=str(resource.uri),
        name=resource.name,
        description=resource.description or resource.title or "",
        mime_type=resource.mime_type,
    )


def template_info(template: mt.ResourceTemplate) -> ResourceInfo:
    return ResourceInfo(
        uri=template.uri_template,
        name=template.name,
        description=template.description or template.title or "",
        mime_type=template.mime_type,
        template=True,
    )


def prompt_info(server: str, prompt: mt.Prompt) -> PromptInfo:
    args = tuple(
        PromptArgumentInfo(a.name, a.description or "", bool(a.required)) for a in (prompt.arguments or [])
    )
    return PromptInfo(
        qualify(server, prompt.name), prompt.name, prompt.description or prompt.title or "", args
    )


# --- results ----------------------------------------------------------------------------------


def _decoded_size(b64: str) -> int:
    try:
        return len(base64.b64decode(b64, validate=False))
    except (binascii.Error, ValueError):
        return len(b64) * 3 // 4


def _image_part(mime: str, data: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}}


def _resource_contents_text(contents: mt.TextResourceContents | mt.BlobResourceContents) -> str:
    if isinstance(contents, mt.TextResourceContents):
        return contents.text
    mime = contents.mime_type or "application/octet-stream"
    return f"[binary resource {contents.uri}: {mime}, {_decoded_size(contents.blob)} bytes]"


def render_content(blocks: list[Any]) -> tuple[list[str], list[dict[str, Any]]]:
    """Content blocks -> (text pieces, OpenAI image parts)."""
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, mt.TextContent):
            texts.append(truncate_output(block.text, PIECE_CAP))
        elif isinstance(block, mt.ImageContent):
            texts.append(f"[image: {block.mime_type}, {_decoded_size(block.data)} bytes]")
            images.append(_image_part(block.mime_type, block.data))
        elif isinstance(block, mt.AudioContent):
            texts.append(f"[audio: {block.mime_type}, {_decoded_size(block.data)} bytes, not shown]")
        elif isinstance(block, mt.EmbeddedResource):
            res = block.resource
            texts.append(f"[resource {res.uri}]\n{truncate_output(_resource_contents_text(res), PIECE_CAP)}")
            if isinstance(res, mt.BlobResourceContents) and (res.mime_type or "").startswith("image/"):
                images.append(_image_part(res.mime_type or "image/png", res.blob))
        elif isinstance(block, mt.ResourceLink):
            desc = f" - {block.description}" if block.description else ""
            texts.append(f"[resource link: {block.uri} ({block.name}){desc}]")
        else:
            texts.append(f"[unsupported content: {getattr(block, 'type', type(block).__name__)}]")
    return texts, images


def _with_parts(text: str, images: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """content_parts, when set, is the whole content: the text part first, then the images."""
    if not images:
        return None
    return [{"type": "text", "text": text}, *images]


def call_result(result: mt.CallToolResult) -> ToolResult:
    texts, images = render_content(list(result.content or []))
    structured = result.structured_content
    text = "\n".join(texts)
    if not text.strip() and structured is not None:
        text = truncate_output(json.dumps(structured, indent=2, ensure_ascii=False), PIECE_CAP)
    if not text.strip():
        text = "(the tool returned an error with no message)" if result.is_error else "(no output)"
    return ToolResult(
        text, is_error=bool(result.is_error), content_parts=_with_parts(text, images), structured=structured
    )


def resource_result(uri: str, result: mt.ReadResourceResult) -> ToolResult:
    """Text resources as text; binary ones as base64 (images also as image parts)."""
    pieces: list[str] = []
    images: list[dict[str, Any]] = []
    for contents in result.contents:
        if isinstance(contents, mt.TextResourceContents):
            pieces.append(truncate_output(contents.text, PIECE_CAP))
            continue
        mime = contents.mime_type or "application/octet-stream"
        size = _decoded_size(contents.blob)
        pieces.append(
            f"[binary resource {contents.uri}: {mime}, {size} bytes, base64]\n{truncate_output(contents.blob, PIECE_CAP)}"
        )
        if mime.startswith("image/"):
            images.append(_image_part(mime, contents.blob))
    text = "\n\n".join(pieces) if pieces else f"(resource {uri} is empty)"
    return ToolResult(text, content_parts=_with_parts(text, images))


def prompt_result(result: mt.GetPromptResult) -> ToolResult:
    """Expanded prompt messages as ``[role]: content`` blocks joined with blank lines."""
    blocks: list[str] = []
    images: list[dict[str, Any]] = []
    for message in result.messages:
        texts, imgs = render_content([message.content])
        images.extend(imgs)
        blocks.append(f"[{message.role}]: {chr(10).join(texts)}")
    text = "\n\n".join(blocks) if blocks else "(the prompt expanded to no messages)"
    return ToolResult(text, content_parts=_with_parts(text, images))
