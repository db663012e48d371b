"""Slash commands: the table (each handler registered next to its entry), parsing and completion.

A handler is ``async def handler(app, argument)``; what it may raise as a user error
(``ConfigError``, ``ProviderError``, ``ValueError``) is shown as ``/name: message``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.types import SessionState

if TYPE_CHECKING:
    from ..core.session import ChatSession
    from .app import TurnstoneApp

CommandHandler = Callable[["TurnstoneApp", str], Awaitable[None]]
# (app, partial first argument) -> [(value, help)] or [(value, help, reopen)]: reopen keeps
# completing after the value (a space is added and nothing is sent)
ArgumentCompleter = Callable[["TurnstoneApp", str], Sequence[tuple[str, str] | tuple[str, str, bool]]]
# (app, the whole argument, which has a space) -> [(last word, help, reopen)], asked asynchronously
LaterCompleter = Callable[["TurnstoneApp", str], Awaitable[list[tuple[str, str, bool]]]]


@dataclass(frozen=True, slots=True)
class SlashCommand:
    name: str  # without the slash
    args: str  # argument hint shown in completion and help, "" when none
    help: str
    run: CommandHandler
    complete: ArgumentCompleter | None = None  # (app, partial argument) -> [(value, help)]
    complete_later: LaterCompleter | None = None  # the words after the first one

    @property
    def usage(self) -> str:
        return f"/{self.name}" + (f" {self.args}" if self.args else "")


_TABLE: list[SlashCommand] = []


def slash_command(
    name: str,
    args: str,
    help: str,
    *,
    complete: ArgumentCompleter | None = None,
    complete_later: LaterCompleter | None = None,
) -> Callable[[CommandHandler], CommandHandler]:
    """Register the decorated handler as ``/name`` (the table keeps the order of registration)."""

    def register(handler: CommandHandler) -> CommandHandler:
        _TABLE.append(SlashCommand(name, args, help, handler, complete, complete_later))
        return handler

    return register


# --- the commands ------------------------------------------------------------------------------


async def _idle_session(app: TurnstoneApp, command: str) -> ChatSession | None:
    """The session, when no turn runs; else None after telling the user why ``/command`` waits."""
    if app.session is not None and app.busy:
        await app.chat.add_error(f"/{command}: wait for the turn to finish (or press esc) first.")
        return None
    return app.session


@slash_command("help", "", "Show commands and keys")
async def _help(app: TurnstoneApp, argument: str) -> None:
    app.action_help()


@slash_command("new", "", "Start a new conversation")
async def _new(app: TurnstoneApp, argument: str) -> None:
    await app.replace_session(None)
    app.notify("Started a new conversation.", timeout=2)


@slash_command("clear", "", "Clear the screen (the conversation is kept)")
async def _clear(app: TurnstoneApp, argument: str) -> None:
    await app.chat.clear_chat()
    await app.chat.add_info("Screen cleared (the conversation continues; /new starts afresh).")


@slash_command("resume", "[session]", "Resume a saved conversation (pick one, or give its id)")
async def _resume(app: TurnstoneApp, argument: str) -> None:
    runtime = app.need_runtime()
    if argument:
        await app.replace_session(argument)
        return
    from .screens.sessions import SessionPickerScreen

    sessions = await runtime.list_sessions()
    current = app.session.session_id if app.session else ""
    sessions = [s for s in sessions if s.get("id") != current and s.get("message_count")]
    if not sessions:
        await app.chat.add_info("No saved conversations to resume.")
        return
    chosen = await app.push_screen_wait(SessionPickerScreen(sessions))
    if chosen:
        await app.replace_session(chosen)


@slash_command("inbox", "", "Watch results waiting for closed conversations (F3)")
async def _inbox(app: TurnstoneApp, argument: str) -> None:
    app.action_inbox()


@slash_command("history", "[query]", "Search past conversations, or list recent ones")
async def _history(app: TurnstoneApp, argument: str) -> None:
    runtime = app.need_runtime()
    if not argument:
        sessions = await runtime.list_sessions(limit=20)
        await app.chat.add_markdown_info(format_session_list(sessions))
        return
    hits = await runtime.search_history(argument)
    await app.chat.add_markdown_info(format_search_hits(argument, hits))


def _complete_model(app: TurnstoneApp, partial: str) -> list[tuple[str, str]]:
    runtime = app.runtime
    if runtime is None:
        return []
    return [
        (alias, runtime.config.models[alias].name or "")
        for alias in runtime.model_aliases()
        if alias.startswith(partial)
    ]


@slash_command(
    "model", "[alias]", "Show the model, or switch to a configured alias", complete=_complete_model
)
async def _model(app: TurnstoneApp, argument: str) -> None:
    runtime = app.need_runtime()
    if not argument:
        aliases = runtime.model_aliases()
        lines = [f"Model: **{runtime.provider.model or '(none)'}** via {runtime.provider.name}"]
        if aliases:
            lines.append("")
            lines.append("Aliases (`/model <alias>`): " + ", ".join(f"`{a}`" for a in aliases))
        await app.chat.add_markdown_info("\n".join(lines))
        return
    if app.busy:
        await app.chat.add_error("/model: wait for the turn to finish (or press esc) before switching.")
        return
    provider = await runtime.switch_model(argument)
    app.show_model(runtime)
    app.refresh_status()
    note = "" if argument in runtime.config.models else " (not a configured alias: used as a model name)"
    await app.chat.add_info(f"Switched to {provider.model} via {provider.name}{note}.")


_MCP_VERBS = (
    ("refresh", "re-read tools, resources and prompts"),
    ("login", "log in to an HTTP server in the browser (OAuth)"),
    ("logout", "forget an HTTP server's stored login"),
)


def _complete_mcp(app: TurnstoneApp, partial: str) -> list[tuple[str, str]]:
    if app.runtime is None or app.runtime.mcp is None:
        return []
    words = partial.split(" ")
    if len(words) == 2 and words[0] in ("login", "logout", "refresh"):
        return [
            (f"{words[0]} {s.name}", f"{s.transport} · {s.state}")
            for s in app.runtime.mcp.statuses()
            if s.name.startswith(words[1]) and (words[0] == "refresh" or s.transport == "http")
        ]
    return [(verb, what) for verb, what in _MCP_VERBS if verb.startswith(partial)]


@slash_command(
    "mcp",
    "[verb [server]]",
    "List the MCP tools; verbs: refresh, login, logout (F2: panel)",
    complete=_complete_mcp,
)
async def _mcp(app: TurnstoneApp, argument: str) -> None:
    words = argument.split()
    verb = words[0] if words else ""
    usage_ok = (
        not words
        or (verb == "refresh" and len(words) <= 2)
        or (verb in ("login", "logout") and len(words) == 2)
    )
    if not usage_ok:
        await app.chat.add_error("usage: /mcp [refresh [server] | login NAME | logout NAME]")
        return
    runtime = app.need_runtime()
    if runtime.mcp is None:
        await app.chat.add_error("/mcp: no MCP servers are configured.")
        return
    if not words:  # the spec's /mcp: list the connected tools (the panel has its own key, F2)
        from ..mcp.listing import format_tool_table

        await app.chat.add_markdown_info(format_tool_table(runtime.mcp.statuses()))
        return
    if verb == "login":
        from .mcp_login import start_mcp_login

        start_mcp_login(app, words[1])
        return
    if verb == "logout":
        from ..mcp.auth.login import LoginError

        try:
            await app.chat.add_info(await runtime.mcp.logout(words[1]))
        except LoginError as exc:
            await app.chat.add_error(str(exc))
        app.refresh_status()
        return
    report = await runtime.mcp.refresh(words[1] if len(words) == 2 else None)
    await app.chat.add_info(report)
    app.refresh_status()


def _complete_prompt(app: TurnstoneApp, partial: str) -> list[tuple[str, str, bool]]:
    from .prompt_command import complete_prompt_names

    return complete_prompt_names(app, partial)


async def _complete_prompt_later(app: TurnstoneApp, argument: str) -> list[tuple[str, str, bool]]:
    from .prompt_command import complete_prompt_arguments

    return await complete_prompt_arguments(app, argument)


@slash_command(
    "prompt",
    "[name] [args]",
    "Send an MCP prompt as your message (tab completes)",
    complete=_complete_prompt,
    complete_later=_complete_prompt_later,
)
async def _prompt(app: TurnstoneApp, argument: str) -> None:
    from .prompt_command import run_prompt

    await run_prompt(app, argument)


@slash_command("tools", "", "Show the tools sent to the model and the tool search tier")
async def _tools(app: TurnstoneApp, argument: str) -> None:
    from ..core.tool_search import TIER_LABELS

    session = app.session
    if session is None:
        return
    visible = session.visible_tool_schemas()
    deferred = session.deferred_tool_schemas()
    mcp_count = len(session.mcp.tool_schemas()) if session.mcp is not None else 0
    tier = session.tool_search_tier
    search = session.ctx.tool_search
    active = search is not None and search.active
    lines = [
        f"**Tools**: {len(visible)} sent to the model"
        + (f", {len(deferred)} deferred" if deferred else "")
        + f" ({len(session.registry.TOOLS)} built-in, {mcp_count} MCP)",
        "",
        f"Tool search tier for `{session.provider.model}`: {TIER_LABELS.get(tier, tier or 'none')}"
        + ("" if active or tier == "off" else " — not active now (too few tools to defer)"),
    ]
    if search is not None and search.expanded:
        lines.append(f"Found so far: {', '.join(f'`{n}`' for n in sorted(search.expanded))}")
    await app.chat.add_markdown_info("\n".join(lines))


@slash_command("permissions", "", "Permission rules: list, add, edit, delete")
async def _permissions(app: TurnstoneApp, argument: str) -> None:
    from .permission_editor import PermissionEditor
    from .screens.permissions import PermissionsScreen

    runtime = app.need_runtime()
    await asyncio.to_thread(runtime.permissions.reload)  # another process may have changed the files
    editor = PermissionEditor(runtime, app.session, await runtime.persisted_allow())
    await app.push_screen_wait(PermissionsScreen(editor))
    app.refresh_status()


@slash_command("compact", "", "Summarise the conversation to free context")
async def _compact(app: TurnstoneApp, argument: str) -> None:
    session = await _idle_session(app, "compact")
    if session is None:
        return
    app.busy = True
    app.status_bar.state = SessionState.THINKING
    app.status_bar.activity = "compacting"
    compaction = app.compaction = asyncio.ensure_future(session.compact())
    try:
        summary = await compaction
    except asyncio.CancelledError:
        if compaction.cancelled():  # esc: the history is only replaced at the end
            await app.chat.add_info("Compaction cancelled; the conversation is unchanged.")
            return
        raise
    finally:
        app.compaction = None
        app.busy = False
        app.status_bar.activity = ""
        app.status_bar.state = SessionState.IDLE
    if not summary:
        await app.chat.add_info("Nothing to compact yet.")
        return
    await app.chat.add_info("Conversation compacted; the model continues from this summary:")
    await app.chat.add_markdown_info(summary)
    app.refresh_status()


@slash_command("raw", "", "Toggle showing answers as raw Markdown source")
async def _raw(app: TurnstoneApp, argument: str) -> None:
    app.raw_mode = not app.raw_mode
    app.chat.set_raw(app.raw_mode)
    app.notify("Raw Markdown on." if app.raw_mode else "Raw Markdown off.", timeout=2)


@slash_command("copy", "", "Copy the last answer to the clipboard")
async def _copy(app: TurnstoneApp, argument: str) -> None:
    from ..core.transcript import last_answer

    text = last_answer(app.session.messages) if app.session is not None else ""
    if not text:
        await app.chat.add_info("Nothing to copy yet: no answer in this conversation.")
        return
    app.copy_to_clipboard(text)  # OSC 52: works over ssh and in tmux with set-clipboard on
    app.notify(f"Copied the last answer ({len(text)} characters).", timeout=3)


@slash_command("export", "[file]", "Save the conversation to a Markdown file")
async def _export(app: TurnstoneApp, argument: str) -> None:
    from pathlib import Path

    from ..core.transcript import transcript_markdown

    session = app.session
    if session is None or not session.messages:
        await app.chat.add_info("Nothing to export yet.")
        return
    messages, title = list(session.messages), f"turnstone conversation {session.session_id}"

    def write() -> Path:  # off the loop: a long conversation is a big document
        text = transcript_markdown(messages, title=title, model=session.provider.model)
        target = Path(argument).expanduser() if argument else Path(f"turnstone-{session.session_id}.md")
        target = target if target.is_absolute() else session.cwd / target
        try:
            with target.open("x", encoding="utf-8") as handle:  # never overwrite a file
                handle.write(text)
        except OSError as exc:
            exc.filename = str(target)
            raise
        return target

    try:
        target = await asyncio.to_thread(write)
    except FileExistsError as exc:
        await app.chat.add_error(f"/export: {exc.filename} exists; give another file name.")
        return
    except OSError as exc:
        await app.chat.add_error(f"/export: could not write {exc.filename}: {exc.strerror or exc}")
        return
    await app.chat.add_info(f"Exported {len(messages)} messages to {target}")


@slash_command("undo", "", "Put back the files the agent changed last")
async def _undo(app: TurnstoneApp, argument: str) -> None:
    from .screens.undo import UndoScreen

    session = await _idle_session(app, "undo")
    if session is None:
        return
    plan = await session.plan_undo()
    if plan is None:
        await app.chat.add_info(
            "Nothing to undo: the agent has not changed a file with write_file or edit_file in this "
            "session (changes made by bash commands are not tracked)."
        )
        return
    if not plan.applicable:
        lines = [f"{step.path}: {step.action.value}" for step in plan.steps]
        await app.chat.add_info("Nothing to undo in the last turn that changed files:\n" + "\n".join(lines))
        return
    if not await app.push_screen_wait(UndoScreen(plan, session.cwd)):
        await app.chat.add_info("Undo cancelled; the files are unchanged.")
        return
    lines = await session.undo(plan)
    await app.chat.add_info("Undone (the model is told):\n" + "\n".join(lines))


@slash_command("exit", "", "Quit turnstone")
async def _exit(app: TurnstoneApp, argument: str) -> None:
    await app.action_quit()


SLASH_COMMANDS: tuple[SlashCommand, ...] = tuple(_TABLE)
_BY_NAME = {command.name: command for command in SLASH_COMMANDS}


# --- parsing and completion --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    command: SlashCommand | None  # None: unknown command
    name: str
    argument: str


def parse_slash(text: str) -> ParsedCommand | None:
    """``"/model fast"`` -> ParsedCommand(model, "fast"); None when ``text`` is not a command.

    A leading ``//`` escapes the slash (the prompt is sent as text starting with ``/``).
    """
    stripped = text.strip()
    if not stripped.startswith("/") or stripped.startswith("//"):
        return None
    head, _, argument = stripped[1:].partition(" ")
    if not head or "/" in head:  # "/usr/bin/foo is broken" is a prompt, not a command
        return None
    name = head.lower()
    return ParsedCommand(_BY_NAME.get(name), name, argument.strip())


def complete_slash(prefix: str) -> list[SlashCommand]:
    """Commands whose name starts with ``prefix`` (without the slash), then fuzzy contains."""
    prefix = prefix.lower()
    starts = [c for c in SLASH_COMMANDS if c.name.startswith(prefix)]
    contains = [c for c in SLASH_COMMANDS if prefix and prefix in c.name and c not in starts]
    return starts + contains


class SlashCompleter:
    """The prompt's completer (``widgets.prompt_input.PromptCompleter``): command names from the
    table, arguments from each command's own completer."""

    def __init__(self, app: TurnstoneApp) -> None:
        self._app = app

    def commands(self, typed: str) -> Sequence[SlashCommand]:
        return complete_slash(typed)

    def arguments(self, command: str, partial: str) -> Sequence[tuple[str, str] | tuple[str, str, bool]]:
        entry = _BY_NAME.get(command.lower())
        if entry is None or entry.complete is None:
            return []
        return entry.complete(self._app, partial)

    async def later_arguments(self, command: str, argument: str) -> list[tuple[str, str, bool]]:
        entry = _BY_NAME.get(command.lower())
        if entry is None or entry.complete_later is None:
            return []
        return await entry.complete_later(self._app, argument)


# --- output formats ----------------------------------------------------------------------------


def format_session_list(sessions: list[dict[str, Any]]) -> str:
    if not sessions:
        return "No saved conversations yet."
    lines = ["**Recent conversations** (`/resume <id>` to continue one)", ""]
    for s in sessions:
        first = " ".join(str(s.get("first_prompt") or s.get("name") or "").split())[:70]
        lines.append(
            f"- `{str(s.get('id', ''))[:12]}` · {s.get('message_count', 0)} msgs · {first or '(empty)'}"
        )
    return "\n".join(lines)


def format_search_hits(query: str, hits: list[dict[str, Any]]) -> str:
    if not hits:
        return f"No messages match **{query}**."
    lines = [f"**{len(hits)} match{'es' if len(hits) != 1 else ''} for {query}** (`/resume <id>`)", ""]
    for hit in hits:
        snippet = " ".join(str(hit.get("snippet") or "").split())
        lines.append(f"- `{str(hit.get('session_id', ''))[:12]}` {hit.get('role', '')}: {snippet}")
    return "\n".join(lines)
