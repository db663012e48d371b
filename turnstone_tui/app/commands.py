"""Slash commands: the table, parsing, completion, and the command palette provider listing them."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Protocol

from textual.command import DiscoveryHit, Hit, Hits, Provider


@dataclass(frozen=True, slots=True)
class SlashCommand:
    name: str  # without the slash
    args: str  # argument hint shown in completion and help, "" when none
    help: str

    @property
    def usage(self) -> str:
        return f"/{self.name}" + (f" {self.args}" if self.args else "")


SLASH_COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("help", "", "Show commands and keys"),
    SlashCommand("new", "", "Start a new conversation"),
    SlashCommand("clear", "", "Clear the screen (the conversation is kept)"),
    SlashCommand("resume", "[session]", "Resume a saved conversation (pick one, or give its id)"),
    SlashCommand("history", "[query]", "Search past conversations, or list recent ones"),
    SlashCommand("model", "[alias]", "Show the model, or switch to a configured alias"),
    SlashCommand("mcp", "[refresh [server]]", "List the connected MCP tools, or refresh servers (F2: panel)"),
    SlashCommand("permissions", "", "Show and revoke auto-approved tools"),
    SlashCommand("compact", "", "Summarise the conversation to free context"),
    SlashCommand("raw", "", "Toggle showing answers as raw Markdown source"),
    SlashCommand("exit", "", "Quit turnstone"),
)

_BY_NAME = {command.name: command for command in SLASH_COMMANDS}


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


class SlashCommandRunner(Protocol):
    def run_slash_command(self, text: str) -> None: ...


class SlashCommandProvider(Provider):
    """Lists the slash commands in Textual's command palette (ctrl+p)."""

    def _runner(self) -> SlashCommandRunner | None:
        app = self.app
        return app if hasattr(app, "run_slash_command") else None  # type: ignore[return-value]

    async def discover(self) -> Hits:
        runner = self._runner()
        if runner is None:
            return
        for command in SLASH_COMMANDS:
            yield DiscoveryHit(
                f"/{command.name}", partial(runner.run_slash_command, f"/{command.name}"), help=command.help
            )

    async def search(self, query: str) -> Hits:
        runner = self._runner()
        if runner is None:
            return
        matcher = self.matcher(query)
        for command in SLASH_COMMANDS:
            label = f"/{command.name}"
            score = max(matcher.match(label), matcher.match(command.help) * 0.5)
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(label),
                    partial(runner.run_slash_command, label),
                    text=label,
                    help=command.help,
                )
