"""What /permissions changes: the rule files (off the event loop), the open sessions' rules.

The screen (``screens/permissions.py``) shows ``entries()`` and calls ``add`` / ``replace`` /
``remove`` / ``trust_project``; each returns None or an error to show.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.permission_store import PROJECT_FILE
from ..core.permissions import MODE_HELP, Rule, RuleError, parse_rule
from .screens.permissions import RuleEntry

if TYPE_CHECKING:
    from ..core.session import ChatSession
    from ..runtime import Runtime


def _shown(path: Path) -> str:
    home = Path.home()
    try:
        return f"~/{path.relative_to(home)}"
    except ValueError:
        return str(path)


class PermissionEditor:
    def __init__(self, runtime: Runtime, session: ChatSession | None, saved: list[str]) -> None:
        self.runtime = runtime
        self.session = session
        self.store = runtime.permissions
        self.saved = set(saved)  # the older "always" list in the database (tool names)
        self.from_config = set(runtime.config.tools.allow) | set(runtime.options.allow)

    # --- reading ------------------------------------------------------------------------------
    def entries(self) -> list[RuleEntry]:
        out: list[RuleEntry] = []
        trusted = self.store.project_trusted()
        for rule in self.store.all_rules():
            note = ""
            if rule.scope == "project" and rule.effect == "allow" and not trusted:
                note = "(not in force: project file not trusted, t trusts it)"
            out.append(RuleEntry(rule, rule.scope, note))
        policy = self.session.policy if self.session is not None else None
        if policy is not None:
            out.extend(RuleEntry(rule, "session") for rule in policy.session_rules)
            for name in sorted(policy.auto_approve):
                try:
                    rule = parse_rule(name, "allow", "session")
                except RuleError:
                    continue
                if name in self.from_config:
                    out.append(RuleEntry(replace(rule, scope="config"), "config", editable=False))
                elif name in self.saved:
                    out.append(RuleEntry(replace(rule, scope="config"), "saved"))
                else:
                    out.append(RuleEntry(rule, "session"))
        order = {"deny": 0, "ask": 1, "allow": 2}
        return sorted(out, key=lambda e: order[e.rule.effect])

    def summary(self) -> list[str]:
        lines: list[str] = []
        if self.session is not None:
            mode = self.session.policy.mode
            lines.append(f"Mode: {mode.value} ({MODE_HELP[mode]}); shift+tab switches modes.")
        read_only = ", ".join(sorted(self.runtime.registry.AGENT_AUTO_TOOLS))
        lines.append(f"Built-in tools that never ask (inside the workspace): {read_only}")
        lines.append(
            f"Files: {_shown(self.store.user.path)} (user), {PROJECT_FILE} in the workspace (project)"
        )
        lines.extend(f"! {error}" for error in self.store.errors)
        return lines

    def project_untrusted(self) -> bool:
        return bool(self.store.project.digest) and not self.store.project_trusted()

    # --- changing -----------------------------------------------------------------------------
    async def add(self, rule: Rule) -> str | None:
        if rule.scope == "session":
            for session in self._sessions():
                session.policy.grant_session(rule)
            return None
        return await self._file_op(self.store.add, rule)

    async def remove(self, entry: RuleEntry) -> str | None:
        rule = entry.rule
        if entry.source in ("saved", "session") and rule.text in self._names():
            await self.runtime.revoke({rule.text})
            return None
        if entry.source == "session":
            for session in self._sessions():
                session.policy.session_rules[:] = [r for r in session.policy.session_rules if r != rule]
            return None
        if entry.source == "config":
            where = self.runtime.config.path or "the config file"
            return f"{rule.text} comes from tools.allow in {where} or --allow: remove it there."
        return await self._file_op(self.store.remove, rule)

    async def replace(self, entry: RuleEntry, rule: Rule) -> str | None:
        if entry.source in ("project", "user") and rule.scope in ("project", "user"):
            return await self._file_op(self.store.replace, entry.rule, rule)
        error = await self.remove(entry)
        if error:
            return error
        return await self.add(rule)

    async def trust_project(self) -> str | None:
        return await self._file_op(self.store.trust_project)

    # --- helpers ------------------------------------------------------------------------------
    def _sessions(self) -> list[ChatSession]:
        sessions = list(self.runtime.sessions.values())
        if self.session is not None and self.session not in sessions:
            sessions.append(self.session)
        return sessions

    def _names(self) -> set[str]:
        names: set[str] = set(self.saved)
        for session in self._sessions():
            names |= session.policy.auto_approve
        return names

    async def _file_op(self, op: object, *args: object) -> str | None:
        try:
            await asyncio.to_thread(op, *args)  # type: ignore[arg-type]
        except (OSError, RuleError) as exc:
            return f"could not change the rules: {exc}"
        return None
