"""Command line: argv + config -> the Textual app, a headless run, or ``mcp list``."""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import logging
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__
from .config import Config, ConfigError, load_config
from .providers.registry import PROVIDER_NAMES, PROVIDERS
from .sandbox.process import make_undumpable

if TYPE_CHECKING:
    from .runtime import Runtime

PROG = "turnstone-tui"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="A full-screen terminal UI for an LLM agent with tools.",
        epilog="Subcommands: `turnstone-tui mcp list` checks the configured MCP servers; "
        "`turnstone-tui mcp login NAME` / `mcp logout NAME` log in to an HTTP server (OAuth).",
    )
    p.add_argument("-p", "--prompt", help="run one prompt headless and exit ('-' reads it from stdin)")
    p.add_argument("--base-url", help="OpenAI-compatible or Anthropic API base URL")
    p.add_argument("--api-key", help="API key (default: $OPENAI_API_KEY / $ANTHROPIC_API_KEY)")
    p.add_argument("--model", help="model name, a [models.<alias>] alias, or a path to a .gguf file")
    p.add_argument("--provider", choices=PROVIDER_NAMES, help="model API to speak")
    p.add_argument("--config", type=Path, help="config file (default: ~/.config/turnstone/config.toml)")
    p.add_argument("--mcp-config", help="MCP servers JSON file (standard mcpServers format)")
    p.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="DIR",
        help="offer DIR to MCP servers as a root besides the working directory (repeatable)",
    )
    p.add_argument("--skip-permissions", action="store_true", help="approve every tool call without asking")
    p.add_argument(
        "--no-sandbox", action="store_true", help="run bash, math and watch commands without the OS sandbox"
    )
    p.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="RULE",
        help="run without asking: a tool name or a permission rule, e.g. 'bash(npm run test:*)' (repeatable)",
    )
    p.add_argument("--tool-timeout", type=int, metavar="SECONDS", help="default bash timeout")
    p.add_argument("--tool-truncation", type=int, metavar="CHARS", help="max characters of a tool result")
    p.add_argument("--tool-search", choices=["auto", "on", "off"], help="dynamic tool search")
    p.add_argument("--tool-search-threshold", type=int, metavar="N")
    p.add_argument("--tool-search-max-results", type=int, metavar="N")
    p.add_argument("--resume", metavar="ID", help="continue a stored session")
    p.add_argument(
        "-c",
        "--continue",
        dest="continue_last",
        action="store_true",
        help="continue the most recent conversation started in this directory",
    )
    p.add_argument("--db", metavar="PATH", help="SQLite database (default: in the user data dir)")
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    return p


def apply_cli(cfg: Config, args: argparse.Namespace) -> Config:
    if args.base_url:
        cfg.api.base_url = args.base_url
    if args.api_key:
        cfg.api.api_key = args.api_key
    if args.provider:
        cfg.model.provider = args.provider
    if args.model:
        if args.model in cfg.models:
            from .providers.factory import resolve_model_alias

            cfg = resolve_model_alias(cfg, args.model)
        else:
            cfg.model.name = args.model
            if args.model.endswith(".gguf") and not args.provider:
                cfg.model.provider = "local"
    if args.provider == "anthropic" and not args.api_key and os.environ.get("ANTHROPIC_API_KEY"):
        cfg.api.api_key = os.environ["ANTHROPIC_API_KEY"]
    if args.skip_permissions:
        cfg.tools.skip_permissions = True
    if args.no_sandbox:
        cfg.sandbox.mode = "off"
    for flag, attr in (
        ("tool_timeout", "timeout"),
        ("tool_truncation", "truncation"),
        ("tool_search_threshold", "search_threshold"),
        ("tool_search_max_results", "search_max_results"),
    ):
        value = getattr(args, flag)
        if value is not None:
            if value <= 0:
                raise ConfigError(f"--{flag.replace('_', '-')}: must be positive, got {value}")
            setattr(cfg.tools, attr, value)
    if args.tool_search:
        cfg.tools.search = args.tool_search
    if args.db:
        cfg.db_path = args.db
    if args.mcp_config:
        cfg.mcp.config_path = args.mcp_config
    if getattr(args, "root", None):
        cfg.mcp.roots = [*cfg.mcp.roots, *args.root]
    return cfg


def _fail(message: str, code: int = 2) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    log_file = os.environ.get("TURNSTONE_LOG_FILE")
    logging.basicConfig(
        level=os.environ.get("TURNSTONE_LOG", "WARNING").upper(),
        **({"filename": log_file} if log_file else {"stream": sys.stderr}),
    )
    if _debug_mode():
        # asyncio's debug mode for every loop this process makes (the app's too); stalls over
        # 100 ms are reported (core.loop_watchdog) to the log, or in headless runs to stderr
        os.environ["PYTHONASYNCIODEBUG"] = "1"
    if argv[:1] == ["mcp"]:
        resume_gc()  # `mcp login` may wait minutes for the browser: the collector runs meanwhile
        return _mcp_command(argv[1:])
    args = build_parser().parse_args(argv)
    # before the config (and its keys) is read: tools' processes must not read our environ or memory
    make_undumpable()
    try:
        cfg = apply_cli(load_config(args.config), args)
    except ConfigError as exc:
        return _fail(str(exc))
    if args.continue_last:
        if args.resume:
            return _fail("--continue and --resume name different conversations: give one of them")
        from .storage.db import latest_session_id

        args.resume = latest_session_id(cfg.resolved_db_path(), Path.cwd().resolve())
        if args.resume is None:
            return _fail(f"no earlier conversation in {Path.cwd()} to continue (--resume ID picks any)", 1)
    if args.prompt is not None:
        prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
        if not prompt.strip():
            return _fail("the prompt is empty")
        return asyncio.run(run_headless(cfg, prompt, args))
    return run_app(cfg, args)


def _debug_mode() -> bool:
    return os.environ.get("TURNSTONE_DEBUG", "") not in ("", "0")


def _report_stalls(report) -> None:  # noqa: ANN001
    from .core.loop_watchdog import enable_stall_reports

    enable_stall_reports(asyncio.get_running_loop(), report)


def _runtime_options(args: argparse.Namespace):  # noqa: ANN202
    from .runtime import RuntimeOptions

    return RuntimeOptions(
        mcp_config_path=args.mcp_config,
        skip_permissions=bool(args.skip_permissions),
        allow=tuple(args.allow),
    )


def _start_sdk_import(cfg: Config) -> None:
    """Import the selected API provider's SDK in a daemon thread, from now: most of a ``-p`` run's
    CPU, overlapping the engine's imports and the database's opening. Only the third-party package
    (it imports nothing of ours); a failure is left for the provider's build to report."""
    from .providers import tls
    from .providers.deferred import IMPORT_LOCK
    from .providers.factory import provider_name

    sdk = PROVIDERS[name].sdk if (name := provider_name(cfg)) in PROVIDERS else ""

    def load() -> None:
        try:
            with IMPORT_LOCK:  # alone: the provider's build (and MCP's import) wait for it
                tls.prepare()  # the client's CA bundle is read meanwhile, on the other core
                importlib.import_module(sdk)
        except Exception:  # noqa: BLE001 - said by the build, once (not as a thread's traceback)
            pass

    if sdk:
        threading.Thread(target=load, name="sdk-import", daemon=True).start()


async def run_headless(cfg: Config, prompt: str, args: argparse.Namespace) -> int:
    _start_sdk_import(cfg)
    from .core.provider import ProviderError
    from .core.registry import ToolDefinitionError
    from .headless import HeadlessUI
    from .runtime import Runtime
    from .storage.db import StorageError

    ui = HeadlessUI()
    if _debug_mode():
        _report_stalls(ui.on_info)
    options = _runtime_options(args)
    options.defer_provider = True  # built in a thread while storage opens, awaited before the session
    try:
        runtime = await Runtime.create(cfg, options=options)
    except (ProviderError, ToolDefinitionError, ConfigError, StorageError) as exc:
        return _fail(str(exc), 1)
    try:
        built = getattr(runtime.provider, "ready", None)  # a deferred (API) provider's build
        if built is not None:
            try:
                await built()
            except ProviderError as exc:  # as if it had failed in Runtime.create
                return _fail(str(exc), 1)
        resume_gc()
        banner = runtime.provider.banner()
        if banner:
            ui.on_info(banner)
        if runtime.model_notice:
            ui.on_info(runtime.model_notice)
        if runtime.mcp is not None and runtime.mcp.statuses():
            await runtime.mcp.wait_ready(cfg.mcp.connect_timeout)
            for status in runtime.mcp.statuses():  # no browser here: say which server is unusable and why
                if getattr(status, "needs_login", False):
                    print(f"MCP server {status.name} {status.error}", file=sys.stderr)  # "needs login: ..."
                elif str(status.state) == "failed":
                    print(f"MCP server {status.name} failed: {status.error}", file=sys.stderr)
        try:
            session = await runtime.create_session(ui, session_id=args.resume)
        except ValueError as exc:
            return _fail(str(exc), 1)
        if session.instructions.files:
            ui.on_info(session.instructions.describe(session.cwd))
        # a resumed session first takes the watch results that waited for it (each as its turn)
        await session.deliver_watch_results()
        await session.send(prompt)
        print(f"session: {session.session_id}", file=sys.stderr)
    finally:
        await runtime.aclose()
    if ui.errors:
        from .headless import terminal_safe

        print(f"{PROG}: error: {terminal_safe(ui.errors[-1])}", file=sys.stderr)
        return 1
    return 0


APP_LOG_BYTES = 1_000_000  # one file of about 1 MB plus one rotated file


def route_logs_to_file(path: Path) -> Path | None:
    """The full-screen app owns the terminal: log records (ours and any library's) go to ``path``
    (0600, rotated, bounded), never to stderr, where they would be drawn over the screen.
    Returns the file, or None when it cannot be written (records are then dropped)."""
    from logging.handlers import RotatingFileHandler

    root = logging.getLogger()
    for handler in list(root.handlers):
        if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler):
            root.removeHandler(handler)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.touch(mode=0o600, exist_ok=True)
        os.chmod(path, 0o600)
        handler = RotatingFileHandler(path, maxBytes=APP_LOG_BYTES, backupCount=1, encoding="utf-8")
    except OSError:
        root.addHandler(logging.NullHandler())
        return None
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    return path


APP_SWITCH_INTERVAL = 0.001
"""Seconds a thread holds the GIL while another waits for it, in the full-screen app."""


def run_app(cfg: Config, args: argparse.Namespace) -> int:
    from .app.app import TurnstoneApp
    from .config import log_dir

    if not os.environ.get("TURNSTONE_LOG_FILE"):
        route_logs_to_file(log_dir() / "turnstone-tui.log")
    # The tool definitions are read with the engine, after the first frame: a broken one is said
    # on the screen ("Could not start a session: ... broken.json: ...").

    async def make_runtime() -> Runtime:
        if _debug_mode():  # the app's loop: stalls go to the log (TURNSTONE_LOG_FILE)
            _report_stalls(logging.getLogger("turnstone.stall").warning)
        # The engine's modules are imported in a thread: the app has drawn its first frame by now
        # and keeps taking keys while they load.
        runtime_module = await asyncio.to_thread(importlib.import_module, f"{__package__}.runtime")
        options = _runtime_options(args)
        options.warm_imports = True
        options.watch_host = True  # the app also polls the watches of sessions open nowhere
        # the SDK loads in a thread once the session is on the screen (or the first prompt asks)
        options.defer_provider = True
        options.provider_build_on_request = True
        return await runtime_module.Runtime.create(cfg, options=options)

    async def stored_history() -> list[dict[str, Any]]:
        # A resumed conversation is drawn from the database while the engine still loads.
        from .storage.db import read_session_messages

        return await asyncio.to_thread(read_session_messages, cfg.resolved_db_path(), args.resume or "")

    # The runtime (storage, provider, MCP) is built inside the app so the first frame is not delayed.
    app = TurnstoneApp(
        runtime_factory=make_runtime,
        resume_id=args.resume,
        stored_history=stored_history if args.resume else None,
    )
    # Textual writes each frame from its own thread, which needs the GIL for every piece of a
    # frame the terminal takes (a pty takes 4 KB at a time): with Python's 5 ms switch interval a
    # frame drawn while the loop went on to other work reached the terminal 5-15 ms later.
    sys.setswitchinterval(APP_SWITCH_INTERVAL)
    app.run()
    return app.return_code or 0


def _mcp_command(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog=f"{PROG} mcp", description="Check the configured MCP servers.")
    sub = p.add_subparsers(dest="command", required=True)
    lst = sub.add_parser("list", help="connect to every configured server and list what it offers")
    login = sub.add_parser("login", help="log in to an HTTP server (OAuth in the browser)")
    login.add_argument("name", help="the server's name")
    login.add_argument("--no-browser", action="store_true", help="only print the URL to open")
    logout = sub.add_parser("logout", help="forget an HTTP server's stored login")
    logout.add_argument("name", help="the server's name")
    for cmd in (lst, login, logout):
        cmd.add_argument("--mcp-config", help="MCP servers JSON file (standard mcpServers format)")
        cmd.add_argument("--config", type=Path, help="config file")
    args = p.parse_args(argv)
    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        return _fail(str(exc))
    mcp_config = args.mcp_config or cfg.mcp.config_path or None
    if args.command in ("login", "logout"):
        try:
            return asyncio.run(
                _mcp_login(
                    cfg,
                    mcp_config,
                    args.name,
                    args.command,
                    not args.no_browser if args.command == "login" else False,
                )
            )
        except ConfigError as exc:
            return _fail(str(exc))
    from .mcp.listing import run_mcp_list

    try:
        return asyncio.run(run_mcp_list(cfg, mcp_config, sys.stdout))
    except ConfigError as exc:
        return _fail(str(exc))


async def _mcp_login(cfg: Config, mcp_config: str | None, name: str, command: str, browser: bool) -> int:
    """``mcp login NAME``: print the URL (and open the browser), wait for the redirect; ``mcp logout NAME``."""
    from .mcp.auth.browser import open_in_browser
    from .mcp.auth.login import LoginError, login, logout
    from .mcp.auth.store import TokenStore
    from .mcp.config import load_server_configs

    servers = load_server_configs(cfg, mcp_config)
    server = servers.get(name)
    if server is None:
        return _fail(f"no MCP server named '{name}' (configured: {', '.join(servers) or 'none'})")
    if server.invalid:
        return _fail(f"MCP server '{name}' is disabled: {server.invalid}")
    if not server.uses_oauth:
        return _fail(
            f"MCP server '{name}' does not log in: only HTTP servers without oauth = false or an "
            "Authorization header use OAuth"
        )
    store = TokenStore(name, server.url)
    if command == "logout":
        print(logout(name, store))
        return 0

    async def show(url: str) -> None:
        opened = browser and await open_in_browser(url)
        where = (
            "Opened your browser; if it did not open, visit" if opened else "Open this URL in your browser"
        )
        print(f"{where}:\n\n  {url}\n\nWaiting for the login to finish...", flush=True)

    try:
        print(await login(name, server.url, server.oauth, store, show, headers=dict(server.headers)))
    except LoginError as exc:
        return _fail(str(exc), 1)
    return 0


def entry() -> None:
    """The ``turnstone-tui`` console script: ``main()``, then exit without tearing the interpreter
    down. Everything of ours is closed by then (the session, storage, the provider, tool processes);
    what is left is freeing every module object, which after a model SDK's thousands of pydantic
    classes costs about as long as the whole answer (0.5-1 s measured). Exit handlers still run and
    the output is flushed first. Errors (argparse's usage exits, tracebacks) take the normal path.

    Start-up runs with the cyclic garbage collector off: loading Textual, the engine and a model
    SDK creates hundreds of thousands of objects that all stay alive, and the collections they
    trigger find nothing to free (about a tenth of the import time). ``resume_gc`` turns it back
    on once the modules are in: a ``-p`` run when its provider is built, the app a second after
    its session is on the screen (``GcPacer.freeze_startup``)."""
    gc.disable()
    code = main()
    _exit_now(code)


def resume_gc() -> None:
    """End of start-up: what is alive now (modules, the SDK's classes) is moved out of the way of
    later collections, and the collector runs again (see ``entry``)."""
    gc.freeze()
    gc.enable()


def _exit_now(code: int) -> None:
    import atexit

    atexit._run_exitfuncs()  # noqa: SLF001 - what a normal exit runs (logging's flush among them)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said
            pass
    os._exit(code)


if __name__ == "__main__":
    entry()
