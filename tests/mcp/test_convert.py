"""Names, schemas and result rendering (pure conversions, on the SDK's own types)."""

from __future__ import annotations

import mcp_types as mt

from turnstone_tui.mcp import convert


def test_qualified_names() -> None:
    assert convert.qualify("github", "search_repos") == "mcp__github__search_repos"
    assert convert.split_qualified("mcp__github__search_repos") == ("github", "search_repos")
    assert convert.split_qualified("mcp__github__a__b") == ("github", "a__b")
    assert convert.split_qualified("bash") is None
    assert convert.split_qualified("mcp__github") is None
    assert convert.qualify("fs", "read.file/v2") == "mcp__fs__read_file_v2"


def test_long_names_fit_openai_limit_and_stay_distinct() -> None:
    a = convert.qualify("server", "x" * 80 + "a")
    b = convert.qualify("server", "x" * 80 + "b")
    assert len(a) == 64 and len(b) == 64 and a != b
    assert a == convert.qualify("server", "x" * 80 + "a")  # stable


def test_schema_normalized_to_object() -> None:
    assert convert.normalize_schema(None) == {"type": "object", "properties": {}}
    schema = {"$schema": "x", "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    assert convert.normalize_schema(schema) == {
        "type": "object",
        "properties": {"q": {"type": "string"}},
        "required": ["q"],
    }
    assert "$schema" in schema  # the input is not modified


def test_call_result_rendering() -> None:
    result = mt.CallToolResult(
        content=[
            mt.TextContent(type="text", text="line one"),
            mt.AudioContent(type="audio", data="AAAA", mime_type="audio/wav"),
            mt.ResourceLink(type="resource_link", uri="file:///x", name="x"),
            mt.EmbeddedResource(
                type="resource",
                resource=mt.BlobResourceContents(uri="blob://b", mime_type="application/pdf", blob="AAAA"),
            ),
        ],
        is_error=True,
    )
    tr = convert.call_result(result)
    assert tr.is_error
    assert tr.text.splitlines()[0] == "line one"
    assert "[audio: audio/wav, 3 bytes, not shown]" in tr.text
    assert "[resource link: file:///x (x)]" in tr.text
    assert "[binary resource blob://b: application/pdf, 3 bytes]" in tr.text
    assert tr.content_parts is None

    empty = convert.call_result(mt.CallToolResult(content=[], structured_content={"n": 1}))
    assert empty.text == '{\n  "n": 1\n}' and empty.structured == {"n": 1}
    assert convert.call_result(mt.CallToolResult(content=[])).text == "(no output)"


def test_a_huge_result_is_cut_before_it_is_held() -> None:
    huge = "z" * (convert.PIECE_CAP * 3)
    result = convert.call_result(mt.CallToolResult(content=[mt.TextContent(type="text", text=huge)]))
    assert len(result.text) < convert.PIECE_CAP + 200
    assert "truncated" in result.text
    resource = convert.resource_result(
        "file:///big", mt.ReadResourceResult(contents=[mt.TextResourceContents(uri="file:///big", text=huge)])
    )
    assert len(resource.text) < convert.PIECE_CAP + 200
