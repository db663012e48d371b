"""web_fetch (SSRF guard, redirects, HTML to text, the model's answer) and web_search (Tavily)."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from tests.executors.local_http import LocalServer, Request, Response, make_ctx, run_item
from tests.helpers.model_server import Reply, ScriptedModelServer
from turnstone_tui.executors import ssrf
from turnstone_tui.executors.web import MAX_BYTES, NOT_CONFIGURED, PREPARERS, FetchError
from turnstone_tui.providers.openai_provider import OpenAIProvider

pytestmark = pytest.mark.timeout(30)

PAGE = """<html><head><title>Launch</title></head><body>
<h1>Mission notes</h1><p>The launch code is <b>7731</b>.</p><script>var x = 1;</script>
</body></html>"""


def page(_req: Request) -> Response:
    return Response(200, PAGE)


async def fetch(ctx, url: str, question: str = "what is the launch code?"):
    item = await PREPARERS["web_fetch"](ctx, "c1", {"url": url, "question": question})
    if item.error:
        return item, None
    return item, await run_item(item)


# --- the guard refuses internal addresses, and never connects ---------------------------------


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1:{port}",
        "localhost:{port}",
        "[::1]:{port}",
        "0x7f000001:{port}",  # hex
        "2130706433:{port}",  # decimal
        "0177.0.0.1:{port}",  # octal
        "127.1:{port}",  # short form
        "[::ffff:127.0.0.1]:{port}",  # IPv4-mapped IPv6
        "0.0.0.0:{port}",
        "10.0.0.1",
        "192.168.1.1",
        "172.16.0.5",
        "100.64.0.1",
        "169.254.169.254",
        "[fd00:ec2::254]",
        "[fe80::1]",
        "224.0.0.1",
    ],
)
async def test_internal_addresses_are_refused_without_connecting(tmp_path: Path, host: str) -> None:
    with LocalServer({"/": page}) as server:
        ctx = make_ctx(tmp_path)
        item, result = await fetch(ctx, f"http://{host.format(port=server.port)}/")
        assert item.needs_approval
        assert result is not None and result.is_error
        assert "refused" in result.text
        assert server.requests == []


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://example.com/x", "gopher://x", "javascript:alert(1)"]
)
async def test_non_http_schemes_are_refused_at_prepare(tmp_path: Path, url: str) -> None:
    item, _ = await fetch(make_ctx(tmp_path), url)
    assert item.error and "http" in item.error


async def test_allow_seam_is_exact_host_and_port(tmp_path: Path) -> None:
    """Allowing one local port does not open the others."""
    with LocalServer({"/": page}) as allowed, LocalServer({"/": page}) as other:
        ctx = make_ctx(tmp_path, web_allow_hosts=frozenset({allowed.host_port}))
        _, result = await fetch(ctx, f"{other.url}/")
        assert result is not None and result.is_error and "loopback" in result.text
        assert other.requests == []


async def test_redirect_to_another_local_port_is_refused_at_the_hop(tmp_path: Path) -> None:
    with LocalServer({"/secret": page}) as internal:
        routes = {
            "/go": lambda r: Response(302, "", {"Location": f"http://127.0.0.1:{internal.port}/secret"})
        }
        with LocalServer(routes) as public:
            ctx = make_ctx(tmp_path, web_allow_hosts=frozenset({public.host_port}))
            _, result = await fetch(ctx, f"{public.url}/go")
            assert result is not None and result.is_error
            assert "refused" in result.text and "loopback" in result.text
            assert [r.path for r in public.requests] == ["/go"]
            assert internal.requests == []


@pytest.mark.parametrize(
    "location",
    [
        "http://10.0.0.1/admin",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:10.0.0.1]/",
        "file:///etc/passwd",
    ],
)
async def test_redirect_to_private_or_odd_targets_is_refused(tmp_path: Path, location: str) -> None:
    with LocalServer({"/go": lambda r: Response(301, "", {"Location": location})}) as public:
        ctx = make_ctx(tmp_path, web_allow_hosts=frozenset({public.host_port}))
        _, result = await fetch(ctx, f"{public.url}/go")
        assert result is not None and result.is_error and "refused" in result.text


async def test_redirect_loop_stops(tmp_path: Path) -> None:
    with LocalServer({"/loop": lambda r: Response(302, "", {"Location": "/loop"})}) as server:
        ctx = make_ctx(tmp_path, web_allow_hosts=frozenset({server.host_port}))
        _, result = await fetch(ctx, f"{server.url}/loop")
        assert result is not None and result.is_error and "too many redirects" in result.text
        assert len(server.requests) == 6  # the first request + 5 redirects


# --- happy paths -------------------------------------------------------------------------------


async def test_page_text_reaches_the_model_which_answers(
    tmp_path: Path, model_server: ScriptedModelServer
) -> None:
    model_server.script([Reply.text("The launch code is 7731.")])
    provider = OpenAIProvider(base_url=model_server.openai_base_url, api_key="x", model="scripted")
    routes = {"/start": lambda r: Response(302, "", {"Location": "/page"}), "/page": page}
    try:
        with LocalServer(routes) as server:
            ctx = make_ctx(tmp_path, provider=provider, web_allow_hosts=frozenset({server.host_port}))
            item, result = await fetch(ctx, f"{server.url}/start")
    finally:
        await provider.aclose()
    assert "GET" in item.preview and "launch code" in item.preview
    assert result is not None and not result.is_error, result.text
    assert result.text.startswith(f"[web_fetch {server.url}/page]")
    assert "The launch code is 7731." in result.text
    [request] = model_server.model_requests()
    messages = request.body["messages"]
    assert messages[0]["role"] == "system"
    user = messages[-1]["content"]
    assert "what is the launch code?" in user
    assert "7731" in user and "Mission notes" in user
    assert "<p>" not in user and "var x" not in user  # HTML converted, scripts dropped
    assert not request.body.get("tools")


async def test_without_provider_the_extracted_text_is_returned(tmp_path: Path) -> None:
    with LocalServer({"/": page}) as server:
        ctx = make_ctx(tmp_path, web_allow_hosts=frozenset({server.host_port}))
        _, result = await fetch(ctx, f"{server.url}/")
    assert result is not None and not result.is_error
    assert "7731" in result.text and "<b>" not in result.text


async def test_connects_to_the_checked_address_with_the_real_host_header(tmp_path: Path) -> None:
    with LocalServer({"/": page}) as server:
        ctx = make_ctx(tmp_path, web_allow_hosts=frozenset({f"localhost:{server.port}"}))
        _, result = await fetch(ctx, f"http://localhost:{server.port}/")
    assert result is not None and not result.is_error, result.text
    assert server.requests[-1].headers["host"] == f"localhost:{server.port}"


async def test_size_limit_cuts_the_page(tmp_path: Path) -> None:
    big = "<p>" + "word " * (MAX_BYTES // 5 + 1000) + "</p>"
    with LocalServer({"/big": lambda r: Response(200, big)}) as server:
        ctx = make_ctx(tmp_path, web_allow_hosts=frozenset({server.host_port}))
        _, result = await fetch(ctx, f"{server.url}/big")
    assert result is not None and not result.is_error
    assert "page cut at 5 MB" in result.text
    assert len(result.text) < 300_000


async def test_binary_content_and_http_errors_are_clear(tmp_path: Path) -> None:
    routes = {
        "/img": lambda r: Response(200, b"\x89PNG....", {"Content-Type": "image/png"}),
        "/missing": lambda r: Response(404, "nope"),
    }
    with LocalServer(routes) as server:
        ctx = make_ctx(tmp_path, web_allow_hosts=frozenset({server.host_port}))
        _, img = await fetch(ctx, f"{server.url}/img")
        _, missing = await fetch(ctx, f"{server.url}/missing")
    assert img is not None and img.is_error and "image/png" in img.text
    assert missing is not None and missing.is_error and "404" in missing.text


async def test_missing_arguments_are_errors(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    assert (await PREPARERS["web_fetch"](ctx, "c", {"url": "http://x.org"})).error
    assert (await PREPARERS["web_fetch"](ctx, "c", {"question": "q"})).error


# --- the guard's pieces --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("10.1", "10.0.0.1"),
        ("0x0a.0.0.1", "10.0.0.1"),
        ("example.com", None),
        ("1.2.3.4.5", None),
        ("256.0.0.1", None),
    ],
)
def test_numeric_ipv4_forms(text: str, expected: str | None) -> None:
    parsed = ssrf.parse_numeric_ipv4(text)
    assert (str(parsed) if parsed else None) == expected


@pytest.mark.parametrize(
    "address",
    ["::ffff:169.254.169.254", "2002:7f00:0001::1", "::127.0.0.1", "fd00:ec2::254", "::", "fc00::1"],
)
def test_ipv6_wrappers_of_internal_addresses_are_blocked(address: str) -> None:
    assert ssrf.blocked_reason(ipaddress.ip_address(address)) is not None


async def test_public_literal_address_passes_the_guard() -> None:
    target = await ssrf.check_url("https://93.184.216.34/path?q=1")
    assert target.addresses == ("93.184.216.34",)
    assert target.pinned_url("93.184.216.34") == "https://93.184.216.34:443/path?q=1"
    assert target.host_header == "93.184.216.34"


async def test_credentials_in_url_are_refused() -> None:
    with pytest.raises(ssrf.SsrfError):
        await ssrf.check_url("http://user:pw@93.184.216.34/")


# --- web_search -----------------------------------------------------------------------------------


async def test_web_search_not_configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    item = await PREPARERS["web_search"](make_ctx(tmp_path), "c", {"query": "python asyncio"})
    assert item.needs_approval
    result = await run_item(item)
    assert result.is_error and result.text == NOT_CONFIGURED


async def test_web_search_posts_to_tavily_and_formats_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test-key")
    payload = {
        "results": [
            {
                "title": "Asyncio docs",
                "url": "https://docs.python.org/3/library/asyncio.html",
                "content": "asyncio is a library to write concurrent code.",
                "score": 0.9,
            },
            {"title": "Tutorial", "url": "https://example.org/t", "content": "An intro.", "score": 0.5},
        ]
    }
    import json

    with LocalServer(
        {"/search": lambda r: Response(200, json.dumps(payload), {"Content-Type": "application/json"})}
    ) as server:
        ctx = make_ctx(tmp_path, tavily_base_url=f"{server.url}/search")
        item = await PREPARERS["web_search"](
            ctx, "c", {"query": "python asyncio", "max_results": 2, "topic": "news"}
        )
        result = await run_item(item)
    assert not result.is_error, result.text
    [req] = server.requests
    assert req.method == "POST" and req.headers["authorization"] == "Bearer tvly-test-key"
    assert req.json() == {
        "query": "python asyncio",
        "max_results": 2,
        "topic": "news",
        "search_depth": "basic",
    }
    assert (
        "1. Asyncio docs" in result.text and "https://docs.python.org/3/library/asyncio.html" in result.text
    )
    assert "2. Tutorial" in result.text


async def test_web_search_rejected_key_and_bad_args(tmp_path: Path) -> None:
    with LocalServer({"/search": lambda r: Response(401, "{}")}) as server:
        ctx = make_ctx(tmp_path, tavily_base_url=f"{server.url}/search")
        ctx.config.api.tavily_key = "bad"
        result = await run_item(await PREPARERS["web_search"](ctx, "c", {"query": "x"}))
    assert result.is_error and "rejected" in result.text
    for bad in (
        {"query": ""},
        {"query": "x", "max_results": 21},
        {"query": "x", "max_results": 0},
        {"query": "x", "topic": "sports"},
    ):
        assert (await PREPARERS["web_search"](ctx, "c", bad)).error


async def test_through_the_session_pipeline(tmp_path: Path, model_server: ScriptedModelServer) -> None:
    """The model calls web_fetch; the fetch asks the model; the answer goes back into the conversation."""
    from tests.helpers.recording_ui import RecordingUI
    from turnstone_tui.config import Config
    from turnstone_tui.runtime import build_session

    with LocalServer({"/": lambda r: Response(200, "<p>The code is 7731</p>")}) as server:
        model_server.script(
            [
                Reply.tools([("web_fetch", {"url": f"{server.url}/", "question": "what is the code?"})]),
                Reply.text("7731, per the page"),  # web_fetch's own question to the model
                Reply.text("The code is 7731."),
            ]
        )
        provider = OpenAIProvider(base_url=model_server.openai_base_url, api_key="x", model="scripted")
        ui = RecordingUI()
        session = build_session(Config(), provider, ui, cwd=tmp_path)
        try:
            await session.start()
            session.ctx.web_allow_hosts = frozenset({server.host_port})
            await session.send("what's the code on that page?")
        finally:
            await provider.aclose()
    assert ui.text == "The code is 7731."
    [(name, result)] = ui.results.values()
    assert name == "web_fetch" and result.text == f"[web_fetch {server.url}/]\n7731, per the page"
    assert [i.func_name for batch in ui.approval_requests for i in batch] == ["web_fetch"]
    last = model_server.model_requests()[-1].body["messages"]
    assert last[-1]["role"] == "tool" and "7731, per the page" in last[-1]["content"]


@pytest.fixture
def tls_cert(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for ``localhost`` (made with the openssl command)."""
    import shutil
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a test certificate")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
        ],
        check=True,
        capture_output=True,
        timeout=30,
    )
    return key, cert


async def test_https_sends_the_real_name_as_sni_and_verifies_the_certificate(
    tmp_path: Path, tls_cert: tuple[Path, Path]
) -> None:
    """Connecting to the pinned IP still presents the host name (SNI) and checks its certificate."""
    import ssl

    key, cert = tls_cert
    seen_sni: list[str | None] = []
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    tls.sni_callback = lambda sock, name, context: seen_sni.append(name)
    with LocalServer({"/": page}, tls=tls) as server:
        ctx = make_ctx(tmp_path, web_allow_hosts=frozenset({f"localhost:{server.port}"}))
        _, result = await fetch(ctx, f"https://localhost:{server.port}/")
    assert seen_sni and seen_sni[0] == "localhost"
    # The self-signed certificate is rejected: verification stays on while the IP is pinned.
    assert result is not None and result.is_error and "CERTIFICATE_VERIFY_FAILED" in result.text


async def test_time_limit(tmp_path: Path) -> None:
    import time

    def slow(_req: Request) -> Response:
        time.sleep(8)
        return Response(200, "late")

    with LocalServer({"/slow": slow}) as server:
        ctx = make_ctx(tmp_path, web_allow_hosts=frozenset({server.host_port}), web_fetch_timeout=0.5)
        started = time.monotonic()
        _, result = await fetch(ctx, f"{server.url}/slow")
        assert time.monotonic() - started < 6  # the 0.5 s limit, not the 8 s answer
    assert result is not None and result.is_error and "did not answer within 0.5 s" in result.text


# --- permission rules are judged again at each redirect -----------------------------------------


def _policy(*rules: tuple[str, str], skip: bool = False):
    from turnstone_tui.core.permissions import parse_rule
    from turnstone_tui.core.pipeline import ApprovalPolicy

    return ApprovalPolicy(skip_permissions=skip, session_rules=[parse_rule(t, e) for t, e in rules])


async def test_a_redirect_to_a_domain_the_rules_do_not_allow_is_not_followed(tmp_path: Path) -> None:
    """web_fetch(domain:127.0.0.1) lets the first URL run unasked; its redirect to another domain
    (localhost) is judged like a first URL: it would ask, so it is not followed, and the model is
    told to fetch it by itself (which asks the user). Once a rule allows that domain it is followed;
    a deny rule refuses it even under --skip-permissions."""
    with LocalServer({"/secret": page}) as other:
        target = f"http://localhost:{other.port}/secret"
        with LocalServer({"/go": lambda r: Response(302, "", {"Location": target})}) as first:
            allow_hosts = frozenset({first.host_port, f"localhost:{other.port}"})
            cases = [
                (_policy(("web_fetch(domain:127.0.0.1)", "allow")), "stopped"),
                (
                    _policy(
                        ("web_fetch(domain:127.0.0.1)", "allow"), ("web_fetch(domain:localhost)", "allow")
                    ),
                    "ok",
                ),
                (_policy(("web_fetch(domain:localhost)", "deny"), skip=True), "denied"),
                (_policy(skip=True), "ok"),
            ]
            for policy, expected in cases:
                ctx = make_ctx(tmp_path, web_allow_hosts=allow_hosts, judge=policy.verdict)
                before = len(other.requests)
                item, result = await fetch(ctx, f"{first.url}/go")
                assert policy.verdict(item).effect == "allow"  # the first URL runs without asking
                assert result is not None
                if expected == "ok":
                    assert not result.is_error and "7731" in result.text
                    assert len(other.requests) == before + 1
                    continue
                assert result.is_error and len(other.requests) == before
                assert f"redirected to {target}" in result.text
                if expected == "stopped":
                    assert "not followed" in result.text and "Call web_fetch with that URL" in result.text
                else:
                    assert "denied by the rule web_fetch(domain:localhost)" in result.text


async def test_a_session_judges_redirects_with_its_rules(
    tmp_path: Path, model_server: ScriptedModelServer
) -> None:
    """Through the real pipeline: --allow web_fetch(domain:127.0.0.1) runs the call unasked, and the
    redirect to another domain reaches the model as a stopped fetch, with nothing fetched there."""
    from tests.helpers.recording_ui import RecordingUI
    from turnstone_tui.providers.factory import create_provider
    from turnstone_tui.runtime import build_session

    with LocalServer({"/secret": page}) as other:
        target = f"http://localhost:{other.port}/secret"
        with LocalServer({"/go": lambda r: Response(302, "", {"Location": target})}) as first:
            model_server.script(
                [
                    Reply.tools([("web_fetch", {"url": f"{first.url}/go", "question": "code?"}, "call_f")]),
                    Reply.text("ok"),
                ]
            )
            cfg = model_server.config("openai")
            ui = RecordingUI()
            session = build_session(
                cfg, create_provider(cfg), ui, cwd=tmp_path, allow={"web_fetch(domain:127.0.0.1)"}
            )
            session.ctx.web_allow_hosts = frozenset({first.host_port, f"localhost:{other.port}"})
            await session.start()
            await session.send("fetch it")
            await session.aclose()
    assert ui.approval_requests == []
    result = ui.results["call_f"][1]
    assert result.is_error and result.text.startswith("web_fetch stopped:") and "not followed" in result.text
    assert other.requests == [] and [r.path for r in first.requests] == ["/go"]


async def test_html_is_converted_off_the_event_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """html2text is pure Python: a 5 MB page (the size limit) took 8 s of CPU on the event loop,
    the app frozen meanwhile. It runs in a worker thread now."""
    import threading

    from turnstone_tui.executors import web

    threads: list[str] = []
    convert = web.html_to_text

    def recording(html: str) -> str:
        threads.append(threading.current_thread().name)
        return convert(html)

    monkeypatch.setattr(web, "html_to_text", recording)
    with LocalServer({"/": page}) as server:
        ctx = make_ctx(tmp_path, web_allow_hosts=frozenset({server.host_port}))
        _, result = await fetch(ctx, f"{server.url}/")
    assert result is not None and "7731" in result.text
    assert threads and threads[0] != threading.main_thread().name


async def test_a_compressed_page_is_inflated_no_further_than_the_size_limit(tmp_path: Path) -> None:
    """httpx inflated each network chunk whole: a gzip body of 64 MB of zeros (64 KB on the wire)
    came out 64 MB at once before the 5 MB cut (and 'gzip, gzip', which it decoded in turn, would
    be 64 GB). The body is now inflated here, never past the limit; stacked or unknown encodings
    are refused; an ordinary gzip or deflate page reads as before."""
    import gzip
    import tracemalloc
    import zlib

    from turnstone_tui.executors.web import fetch_page

    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024), compresslevel=9)
    text = {"Content-Type": "text/plain"}
    routes = {
        "/bomb": lambda r: Response(200, bomb, {**text, "Content-Encoding": "gzip"}),
        "/twice": lambda r: Response(200, gzip.compress(bomb), {**text, "Content-Encoding": "gzip, gzip"}),
        "/br": lambda r: Response(200, b"x", {**text, "Content-Encoding": "br"}),
        "/gzip": lambda r: Response(200, gzip.compress(b"plain words"), {**text, "Content-Encoding": "gzip"}),
        "/deflate": lambda r: Response(
            200, zlib.compress(b"zlib words"), {**text, "Content-Encoding": "deflate"}
        ),
        "/raw": lambda r: Response(
            200, zlib.compress(b"raw words")[2:-4], {**text, "Content-Encoding": "deflate"}
        ),
    }
    with LocalServer(routes) as server:
        hosts = frozenset({server.host_port})
        tracemalloc.start()
        try:
            _, _, page, truncated = await fetch_page(f"{server.url}/bomb", hosts)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert truncated and len(page) == MAX_BYTES
        assert peak < 4 * MAX_BYTES, f"{peak:,} bytes allocated"  # 64 MB+ before
        for path in ("/twice", "/br"):
            with pytest.raises(FetchError, match="unsupported Content-Encoding"):
                await fetch_page(f"{server.url}{path}", hosts)
        assert server.requests[-1].headers["accept-encoding"] == "gzip, deflate"
        for path, words in (("/gzip", "plain words"), ("/deflate", "zlib words"), ("/raw", "raw words")):
            _, _, page, truncated = await fetch_page(f"{server.url}{path}", hosts)
            assert page == words and not truncated
