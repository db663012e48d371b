"""web_fetch and web_search.

web_fetch: GET with the SSRF guard of ``ssrf.py`` on the first URL and on every redirect hop
(followed by hand, at most 5), connecting to the checked address itself (Host header and TLS
SNI carry the real name), at most 5 MB and 30 s (the 5 MB are of the decoded page: a gzip or deflate
body is inflated here, never past the limit; other or stacked encodings are refused); HTML becomes text with html2text; then the
session's model answers the question from the text (without a provider, the text is returned).
A hop to another domain is judged by the session's permission rules as the first URL was: a deny
rule refuses it; a domain that would ask is not followed (the model is told to call web_fetch on
that URL, which asks the user).

web_search: the Tavily search API over httpx when a key is configured, else a clear error.
"""

from __future__ import annotations

import asyncio
import os
import zlib
from collections.abc import Callable
from typing import Any
from urllib.parse import urljoin, urlsplit

import html2text
import httpx

from ..core.provider import ContentDelta, ModelRequest, ProviderError
from ..core.tools import Preparer, ToolContext, error_item, require_str
from ..core.types import ExecContext, PreparedItem, Subject, ToolResult
from .ssrf import SsrfError, Target, check_url

MAX_REDIRECTS = 5
MAX_BYTES = 5 * 1024 * 1024
FETCH_TIMEOUT = 30.0  # seconds for the whole fetch, redirects included
ANSWER_TIMEOUT = 120.0  # seconds for the model's answer
USER_AGENT = "turnstone-tui/0.1 (web_fetch)"
TAVILY_URL = "https://api.tavily.com/search"
TEXT_TYPES = (
    "text/",
    "application/json",
    "application/xml",
    "application/xhtml+xml",
    "application/javascript",
)

ANSWER_SYSTEM_PROMPT = (
    "You answer a question from the text of a web page. Use only the page text; quote exact figures, "
    "names and code from it. If the page does not contain the answer, say so plainly."
)


class FetchError(Exception):
    """The page could not be fetched; the message says why."""


class RedirectStopped(FetchError):
    """A redirect led to a domain the permission rules do not let web_fetch reach unasked."""


HopCheck = Callable[[str, str], None]
"""Called with (from URL, to URL) before a redirect is followed; raises RedirectStopped to stop."""


def _site(host: str) -> str:
    return host.removeprefix("www.")


def redirect_guard(ctx: ToolContext, call_id: str, args: dict[str, Any], first_url: str) -> HopCheck:
    """Judge each redirect target's domain as the pipeline judged the first URL's: a deny rule
    refuses it; a domain that runs without asking (a rule, a mode, --skip-permissions) is followed;
    so is the first URL's own site (``www.`` or not), approved with the call. Anything else stops."""
    reached = {_site(_host(first_url))}

    def check(source: str, target: str) -> None:
        if ctx.judge is None:  # no session (a bare tool context): the SSRF guard alone
            return
        host = _host(target)
        hop = PreparedItem(
            call_id, "web_fetch", args, f"web_fetch {target}", subject=Subject(domain=host), read_only=True
        )
        verdict = ctx.judge(hop)
        if verdict.effect == "deny":
            raise RedirectStopped(f"{source} redirected to {target}, which is {verdict.reason}")
        if verdict.runs_without_asking or _site(host) in reached:
            reached.add(_site(host))
            return
        raise RedirectStopped(
            f"{source} redirected to {target}: the permission rules do not let web_fetch reach "
            f"{host or target} without asking, so the redirect was not followed. Call web_fetch with "
            "that URL if you need it (the user is asked)."
        )

    return check


def _allow_hosts(ctx: ToolContext) -> frozenset[str]:
    # Test seam only: a set of exact "host:port" strings the SSRF guard lets through.
    return frozenset(ctx.web_allow_hosts)


def _page_char_limit(ctx: ToolContext) -> int:
    """How much page text the model gets: about half the context window (~3 characters a token)."""
    return max(4000, min(200_000, int(ctx.config.model.context_window * 1.5)))


def html_to_text(html: str) -> str:
    converter = html2text.HTML2Text()
    converter.ignore_images = True
    converter.body_width = 0
    converter.unicode_snob = True
    converter.ignore_emphasis = False
    return converter.handle(html).strip()


ACCEPT_ENCODING = "gzip, deflate"


class BoundedDecoder:
    """Decodes a body of one ``Content-Encoding`` (identity, gzip, deflate) and never produces more
    than asked: httpx inflates each network chunk whole, so a 64 KB chunk of a gzip bomb became
    64 MB at once, and ``gzip, gzip`` (which it decodes in turn) 64 GB."""

    def __init__(self, header: str) -> None:
        names = [n.strip().lower() for n in header.split(",") if n.strip().lower() not in ("", "identity")]
        self._kind = names[0] if len(names) == 1 else "identity" if not names else ""
        if self._kind == "x-gzip":
            self._kind = "gzip"
        if self._kind not in ("identity", "gzip", "deflate"):
            raise FetchError(f"unsupported Content-Encoding {header!r} (only gzip or deflate, once)")
        wbits = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}.get(self._kind, 0)
        self._inflate = zlib.decompressobj(wbits) if wbits else None
        self._started = False

    def feed(self, data: bytes, room: int) -> bytes:
        """The decoded bytes of ``data``, at most ``room`` of them (the rest is dropped: the caller
        stops at the limit)."""
        if self._inflate is None:
            return data[:room]
        try:
            try:
                out = self._inflate.decompress(data, room)
            except zlib.error:
                if self._kind != "deflate" or self._started:
                    raise
                self._inflate = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate, as some servers send
                out = self._inflate.decompress(data, room)
        except zlib.error as exc:
            raise FetchError(f"the page's {self._kind} body cannot be decoded: {exc}") from None
        self._started = True
        return out


async def _get_pinned(client: httpx.AsyncClient, target: Target) -> tuple[httpx.Response, bytes, bool]:
    """GET ``target`` at one of its checked addresses; returns (response, body up to MAX_BYTES, truncated)."""
    last_error: Exception | None = None
    for address in target.addresses:
        request = client.build_request(
            "GET",
            target.pinned_url(address),
            headers={
                "Host": target.host_header,
                "User-Agent": USER_AGENT,
                "Accept": "text/html,*/*;q=0.8",
                "Accept-Encoding": ACCEPT_ENCODING,
            },
            extensions={"sni_hostname": target.host} if target.scheme == "https" else {},
        )
        try:
            response = await client.send(request, stream=True)
        except httpx.ConnectError as exc:
            last_error = exc
            continue
        try:
            chunks: list[bytes] = []
            size = 0
            truncated = False
            if not response.is_redirect:
                decoder = BoundedDecoder(response.headers.get("content-encoding", ""))
                async for raw in response.aiter_raw():
                    chunk = decoder.feed(raw, MAX_BYTES - size)
                    chunks.append(chunk)
                    size += len(chunk)
                    if size >= MAX_BYTES:
                        truncated = True
                        break
            body = b"".join(chunks)
        finally:
            await response.aclose()
        return response, body, truncated
    raise FetchError(f"cannot connect to {target.host_port}: {last_error}")


async def fetch_page(
    url: str, allow_hosts: frozenset[str] = frozenset(), check_hop: HopCheck | None = None
) -> tuple[str, str, str, bool]:
    """Fetch ``url`` through the SSRF guard (and ``check_hop`` at each redirect). Returns (final
    URL, content type, text, truncated)."""
    async with httpx.AsyncClient(
        follow_redirects=False, trust_env=False, timeout=httpx.Timeout(15.0, connect=10.0)
    ) as client:
        current = url
        for _hop in range(MAX_REDIRECTS + 1):
            target = await check_url(current, allow_hosts)
            response, body, truncated = await _get_pinned(client, target)
            if response.is_redirect:
                location = response.headers.get("location")
                if not location:
                    raise FetchError(f"HTTP {response.status_code} redirect without a Location header")
                target_url = urljoin(current, location)
                if check_hop is not None:
                    check_hop(current, target_url)
                current = target_url
                continue
            if response.status_code >= 400:
                raise FetchError(f"HTTP {response.status_code} {response.reason_phrase} from {current}")
            content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
            if content_type and not content_type.startswith(TEXT_TYPES):
                raise FetchError(f"unsupported content type {content_type!r} (only text pages can be read)")
            text = body.decode(response.encoding or "utf-8", errors="replace")
            if content_type in ("text/html", "application/xhtml+xml") or (
                not content_type and "<html" in text[:2000].lower()
            ):
                text = await asyncio.to_thread(html_to_text, text)  # 5 MB of HTML: seconds of CPU
            return current, content_type, text, truncated
        raise FetchError(f"too many redirects (more than {MAX_REDIRECTS})")


async def answer_from_page(ctx: ToolContext, question: str, url: str, text: str) -> str:
    """Ask the session's model to answer ``question`` from ``text``; returns the collected answer."""
    assert ctx.provider is not None
    request = ModelRequest(
        messages=[
            {"role": "system", "content": ANSWER_SYSTEM_PROMPT},
            {"role": "user", "content": f"Question: {question}\n\nPage: {url}\n\nPage text:\n{text}"},
        ],
        tools=[],
        model=ctx.provider.model if ctx.provider is not None else "",
    )
    parts: list[str] = []
    async with asyncio.timeout(ANSWER_TIMEOUT):
        async for event in ctx.provider.stream(request):
            if isinstance(event, ContentDelta):
                parts.append(event.text)
    return "".join(parts).strip()


def _host(url: str) -> str:
    """The host the URL asks (``http://a.org@b.com/`` asks b.com), "" when it has none."""
    try:
        return (urlsplit(url).hostname or "").rstrip(".").lower()
    except ValueError:
        return ""


async def prepare_web_fetch(ctx: ToolContext, call_id: str, args: dict[str, Any]) -> PreparedItem:
    url = require_str(args, "url")
    question = require_str(args, "question")
    if url is None:
        return error_item(call_id, "web_fetch", args, "web_fetch needs a 'url' (http:// or https://)")
    if question is None:
        return error_item(call_id, "web_fetch", args, "web_fetch needs a 'question' to answer from the page")
    url = url.strip()
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme not in ("http", "https"):
        return error_item(
            call_id, "web_fetch", args, f"refused {url!r}: only http:// and https:// URLs can be fetched"
        )
    allow = _allow_hosts(ctx)
    time_limit = float(ctx.web_fetch_timeout or FETCH_TIMEOUT)
    check_hop = redirect_guard(ctx, call_id, args, url)

    async def execute(ectx: ExecContext) -> ToolResult:
        try:
            async with asyncio.timeout(time_limit):
                final_url, _ctype, text, truncated = await fetch_page(url, allow, check_hop)
        except SsrfError as exc:
            return ToolResult(f"web_fetch refused: {exc}", is_error=True)
        except RedirectStopped as exc:
            return ToolResult(f"web_fetch stopped: {exc}", is_error=True)
        except FetchError as exc:
            return ToolResult(f"web_fetch failed: {exc}", is_error=True)
        except TimeoutError:
            return ToolResult(
                f"web_fetch failed: {url} did not answer within {time_limit:g} s", is_error=True
            )
        except httpx.HTTPError as exc:
            return ToolResult(f"web_fetch failed: {type(exc).__name__}: {exc}", is_error=True)
        limit = _page_char_limit(ctx)
        notes: list[str] = []
        if truncated:
            notes.append(f"page cut at {MAX_BYTES // (1024 * 1024)} MB")
        if len(text) > limit:
            text = text[:limit]
            notes.append(f"text cut to {limit:,} characters")
        header = f"[web_fetch {final_url}]" + (f" ({'; '.join(notes)})" if notes else "")
        if not text.strip():
            return ToolResult(f"{header}\nThe page has no readable text.")
        if ctx.provider is None:
            return ToolResult(f"{header}\n{text}")
        try:
            answer = await answer_from_page(ctx, question, final_url, text)
        except (ProviderError, TimeoutError) as exc:
            # The page was fetched; hand its text back so the calling model can still answer.
            return ToolResult(f"{header}\n(the model could not answer: {exc}; page text follows)\n\n{text}")
        return ToolResult(f"{header}\n{answer or '(the model gave an empty answer)'}")

    return PreparedItem(
        call_id=call_id,
        func_name="web_fetch",
        args=args,
        header=f"web_fetch {url}",
        preview=f"GET {url}\nQuestion: {question}",
        execute=execute,
        subject=Subject(domain=_host(url)),
    )


# --- web_search ----------------------------------------------------------------------------

NOT_CONFIGURED = "web_search is not configured: set [api] tavily_key in config.toml or $TAVILY_API_KEY"


def tavily_key(ctx: ToolContext) -> str:
    return ctx.config.api.tavily_key or os.environ.get("TAVILY_API_KEY", "")


def format_results(query: str, payload: dict[str, Any]) -> str:
    results = payload.get("results") or []
    if not isinstance(results, list) or not results:
        return f"No web results for {query!r}."
    lines = [f"Web results for {query!r}:"]
    answer = payload.get("answer")
    if isinstance(answer, str) and answer.strip():
        lines.append(f"Summary: {answer.strip()}")
    for n, item in enumerate(results, 1):
        if not isinstance(item, dict):
            continue
        title = str(item.get("title") or "(untitled)").strip()
        url = str(item.get("url") or "").strip()
        snippet = " ".join(str(item.get("content") or "").split())
        if len(snippet) > 500:
            snippet = snippet[:500] + "…"
        lines.append(f"\n{n}. {title}\n   {url}\n   {snippet}")
    return "\n".join(lines)


async def prepare_web_search(ctx: ToolContext, call_id: str, args: dict[str, Any]) -> PreparedItem:
    query = require_str(args, "query")
    if query is None or not query.strip():
        return error_item(call_id, "web_search", args, "web_search needs a non-empty 'query'")
    max_results = args.get("max_results", 5)
    if isinstance(max_results, bool) or not isinstance(max_results, int) or not 1 <= max_results <= 20:
        return error_item(call_id, "web_search", args, "max_results must be an integer from 1 to 20")
    topic = args.get("topic", "general")
    if topic not in ("general", "news", "finance"):
        return error_item(call_id, "web_search", args, "topic must be general, news or finance")
    base_url = ctx.tavily_base_url or TAVILY_URL

    async def execute(ectx: ExecContext) -> ToolResult:
        key = tavily_key(ctx)
        if not key:
            return ToolResult(NOT_CONFIGURED, is_error=True)
        body = {"query": query, "max_results": max_results, "topic": topic, "search_depth": "basic"}
        try:
            async with httpx.AsyncClient(timeout=30.0, trust_env=False) as client:
                response = await client.post(
                    base_url, json=body, headers={"Authorization": f"Bearer {key}", "User-Agent": USER_AGENT}
                )
        except httpx.HTTPError as exc:
            return ToolResult(f"web_search failed: {type(exc).__name__}: {exc}", is_error=True)
        if response.status_code in (401, 403):
            return ToolResult(
                f"web_search failed: the Tavily key was rejected (HTTP {response.status_code})", True
            )
        if response.status_code >= 400:
            return ToolResult(f"web_search failed: HTTP {response.status_code}: {response.text[:300]}", True)
        try:
            payload = response.json()
        except ValueError:
            return ToolResult("web_search failed: the search service returned invalid JSON", is_error=True)
        if not isinstance(payload, dict):
            return ToolResult("web_search failed: unexpected response shape", is_error=True)
        return ToolResult(format_results(query, payload), structured=payload.get("results"))

    return PreparedItem(
        call_id=call_id,
        func_name="web_search",
        args=args,
        header=f"web_search {query!r}",
        preview=f"Search ({topic}, up to {max_results}): {query}",
        execute=execute,
    )


PREPARERS: dict[str, Preparer] = {"web_fetch": prepare_web_fetch, "web_search": prepare_web_search}
