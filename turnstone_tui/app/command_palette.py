"""The slash commands in Textual's command palette (ctrl+p)."""

from __future__ import annotations

from functools import partial
from typing import Protocol

from textual.command import DiscoveryHit, Hit, Hits, Provider

from .commands import SLASH_COMMANDS


class SlashCommandRunner(Protocol):
    def run_slash_command(self, text: str) -> None: ...


class SlashCommandProvider(Provider):
    """Lists the slash commands; choosing one runs it as if typed."""

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
