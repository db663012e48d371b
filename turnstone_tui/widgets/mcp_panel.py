"""The MCP side panel: one tree node per server, fed live by the MCP manager.

Each server row shows a status indicator (spinner while connecting, green when connected, red
with the reason when failed), its tool/resource/prompt counts, and expands to the names. The
manager's listener fires on every state or list change (e.g. ``tools/list_changed``), so the
panel updates without a key press. ``r`` refreshes the focused server, ``R`` every server,
``c`` reconnects the focused server, ``l`` logs in to it (an HTTP server: the app runs the OAuth
login in the browser and the server reconnects with the token).
"""

from __future__ import annotations

import shlex
import threading
from collections.abc import Callable
from pathlib import PurePath
from typing import Any

from rich.style import Style as RichStyle
from rich.text import Text, TextType
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.style import Style as VisualStyle
from textual.timer import Timer
from textual.widgets import Static, Tree
from textual.widgets.tree import TreeNode

from ..core.mcp_bridge import McpBridge, ServerStatus
from . import clock

NodeData = tuple[str, str, str]  # (kind, server name, entry name: a tool, resource URI or prompt; else "")
LOG_VIEW_LINES = 50  # the newest lines shown (the manager keeps up to 500 per server)
_LOG_STYLES = {
    "warning": "$text-warning",
    "error": "$text-error",
    "critical": "$text-error",
    "alert": "$text-error",
    "emergency": "$text-error",
}


def _state(status: ServerStatus) -> str:
    return status.state.value


def _tool_names(status: ServerStatus) -> list[str]:
    return [t.name for t in status.tools]


def _resource_uris(status: ServerStatus) -> list[str]:
    return [r.uri for r in status.resources]


def _prompt_names(status: ServerStatus) -> list[str]:
    return [p.name for p in status.prompts]


def short_target(target: str) -> str:
    """``/venv/bin/python /x/y/server.py --flag`` -> ``python server.py --flag`` (URLs unchanged)."""
    if "://" in target:
        return target
    try:
        parts = shlex.split(target)
    except ValueError:
        return target
    return " ".join(
        PurePath(part).name if "/" in part and not part.startswith("-") else part for part in parts
    )


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def server_label(status: ServerStatus) -> Content:
    """``● name  3 tools · 2 resources · 1 prompt`` (or the failure reason)."""
    state = _state(status)
    name = status.name
    if state == "connecting":
        icon = (clock.spinner_frame(), "$text-accent")
    elif state == "connected":
        icon = ("●", "$text-success")
    elif state == "failed":
        icon = ("✗", "$text-error")
    else:
        icon = ("○", "$text-muted")
    parts: list[tuple[str, str] | str] = [icon, " ", (name, "bold")]
    if state == "connected":
        counts = " · ".join(
            (
                _plural(len(status.tools), "tool"),
                f"{len(status.resources)} res",
                _plural(len(status.prompts), "prompt"),
            )
        )
        parts.append((f"  {counts}", "$text-muted"))
        for progress in (getattr(status, "progress", ()) or ())[:1]:
            parts.append((f" ⟳ {progress.describe().split('  ')[0]}", "$text-accent"))
    elif state == "failed" and getattr(status, "needs_login", False):
        parts.append(("  needs login", "$text-warning"))
    elif state == "failed":
        parts.append(("  failed", "$text-error"))
    else:
        parts.append((f"  {state}…" if state == "connecting" else f"  {state}", "$text-muted"))
    return Content.assemble(*parts)


def entry_detail(status: ServerStatus, kind: str, entry: str) -> Content:
    """What the detail area shows for a selected tool, resource or prompt: its description."""
    parts: list[tuple[str, str] | str] = [(entry, "bold")]
    description = ""
    extra: str | None = None
    if kind == "tools":
        tool = next((t for t in status.tools if t.name == entry), None)
        if tool is not None:
            description = tool.description
            properties = (tool.input_schema or {}).get("properties") or {}
            extra = f"args: {', '.join(properties)}" if properties else None
    elif kind == "resources":
        resource = next((r for r in status.resources if r.uri == entry), None)
        if resource is not None:
            if resource.name not in ("", entry):
                parts.append((f"  {resource.name}", "$text-muted"))
            description = resource.description
    elif kind == "prompts":
        prompt = next((p for p in status.prompts if p.name == entry), None)
        if prompt is not None:
            description = prompt.description
            extra = f"args: {', '.join(a.name for a in prompt.arguments)}" if prompt.arguments else None
    description = (description or "").strip()
    parts.append("\n" + description if description else ("\nno description", "$text-muted"))
    if extra:
        parts.append((f"\n{extra}", "$text-muted"))
    return Content.assemble(*parts)


def _signature(status: ServerStatus) -> tuple[Any, ...]:
    return (
        _state(status),
        status.error,
        tuple(_tool_names(status)),
        tuple(_resource_uris(status)),
        tuple(_prompt_names(status)),
        status.transport,
        status.target,
    )


class ServerTree(Tree[NodeData]):
    """A Tree whose labels may be theme-aware `Content` (``$text-muted`` etc.) and that ends a label
    too wide for the panel with an ellipsis instead of cutting it off."""

    def process_label(self, label: TextType | Content) -> Text:
        if isinstance(label, Content):
            # Resolve the theme's colours against the tree's own background: ``$text-muted`` is an
            # "auto" colour (a contrast shade of whatever is underneath), black without a background.
            base = VisualStyle(background=self.background_colors[1]) if self.is_mounted else VisualStyle()
            parts: list[tuple[str, RichStyle]] = []
            for text, style in label.render(base, end="", parse_style=VisualStyle.parse):
                rich = (base + style).rich_style
                parts.append((text, _without_background(rich)))
            label = Text.assemble(*parts)
        return super().process_label(label)

    def render_label(self, node: TreeNode[NodeData], base_style: RichStyle, style: RichStyle) -> Text:
        text = super().render_label(node, base_style, style)
        room = self.size.width - self._indent(node)
        if room > 1 and text.cell_len > room:
            text.truncate(room, overflow="ellipsis")
        return text

    def _indent(self, node: TreeNode[NodeData]) -> int:
        """Columns of guides left of ``node``'s label (as `Tree._render_line` draws them)."""
        depth = 0
        parent = node.parent
        while parent is not None and not parent.is_root:
            depth += 1
            parent = parent.parent
        return (depth + (1 if self.show_root else 0)) * self.guide_depth


def _without_background(style: RichStyle) -> RichStyle:
    """Keep colour and attributes; the tree paints its own (cursor, hover) backgrounds."""
    return RichStyle(
        color=style.color, bold=style.bold, dim=style.dim, italic=style.italic, underline=style.underline
    )


class McpPanel(Vertical, can_focus=False):
    """A docked side panel listing the MCP servers of ``manager``."""

    DEFAULT_CSS = """
    McpPanel {
        dock: right;
        width: 48;
        height: 1fr;
        background: $surface;
        border-left: vkey $primary 40%;
        padding: 0;
    }

    McpPanel #mcp-title {
        height: 1;
        padding: 0 1;
        background: $panel;
    }

    McpPanel #mcp-tree {
        height: 1fr;
        background: $surface;
        padding: 0 0 0 1;
        scrollbar-size-vertical: 1;
        overflow-x: hidden;
    }

    McpPanel #mcp-detail {
        height: auto;
        max-height: 8;
        padding: 0 1;
        border-top: solid $primary 20%;
    }

    McpPanel #mcp-log {
        height: auto;
        max-height: 50%;
        overflow-y: auto;
        padding: 0 1;
        border-top: solid $primary 30%;
    }

    McpPanel #mcp-hint {
        height: auto;
        max-height: 3;
        padding: 0 1;
        border-top: solid $primary 20%;
    }
    """
    SCOPED_CSS = False

    BINDINGS = [
        Binding("r", "refresh_server", "Refresh"),
        Binding("R", "refresh_all", "Refresh all"),
        Binding("c", "reconnect", "Reconnect"),
        Binding("v", "toggle_log", "Server log"),
        Binding("l", "login", "Log in"),
    ]

    class LoginRequested(Message):
        """``l`` on a server: the app should run the browser login for it."""

        def __init__(self, server: str) -> None:
            super().__init__()
            self.server = server

    class Refreshed(Message):
        """A refresh finished; ``report`` is the manager's text."""

        def __init__(self, server: str | None, report: str) -> None:
            super().__init__()
            self.server = server
            self.report = report

    def __init__(
        self,
        manager: McpBridge | None,
        *,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.manager = manager
        self.server_tree = ServerTree("MCP servers", id="mcp-tree")
        self.server_tree.show_root = False
        self.server_tree.guide_depth = 2
        self._hint = Static("", id="mcp-hint", markup=False)
        self._detail = Static("", id="mcp-detail", markup=False)
        self._log_view = Static("", id="mcp-log", markup=False)
        self._log_view.display = False
        self.log_server: str | None = None  # whose log the log view shows (None: hidden)
        self._server_nodes: dict[str, TreeNode[NodeData]] = {}
        self._signatures: dict[str, tuple[Any, ...]] = {}
        self._statuses: dict[str, ServerStatus] = {}
        self._remove_listener: Callable[[], None] | None = None
        self._sync_scheduled = False
        self._thread_id = threading.get_ident()
        self._spinner: Timer | None = None
        self.refresh_count = 0

    def compose(self) -> ComposeResult:
        yield Static(Content.styled("MCP servers", "bold"), id="mcp-title")
        yield self.server_tree
        yield self._detail
        yield self._log_view
        yield self._hint

    def on_mount(self) -> None:
        self._thread_id = threading.get_ident()
        self.server_tree.focus()  # opened with a key (F2, /mcp): the keys r, R, c and arrows work at once
        if self.manager is not None:
            self._remove_listener = self.manager.add_listener(self._on_manager_event)
        self.sync()
        self.app.theme_changed_signal.subscribe(self, self._on_theme_changed)
        self._spinner = self.set_interval(1 / clock.SPINNER_FPS, self._tick_spinners)

    def on_unmount(self) -> None:
        if self._remove_listener is not None:
            self._remove_listener()
            self._remove_listener = None

    def _on_theme_changed(self, _theme: object) -> None:
        self._signatures.clear()  # re-resolve every label's colours
        self.sync()

    # --- live updates -------------------------------------------------------------------
    def _on_manager_event(self, event: object) -> None:
        """The manager's listener: coalesce events into one sync on the UI's loop."""
        if self._sync_scheduled:
            return
        self._sync_scheduled = True
        if threading.get_ident() == self._thread_id:
            self.call_later(self.sync)
        else:
            self.app.call_from_thread(self.sync)

    def sync(self) -> None:
        """Bring the tree in line with ``manager.statuses()``."""
        self._sync_scheduled = False
        statuses = list(self.manager.statuses()) if self.manager is not None else []
        seen: set[str] = set()
        for status in statuses:
            name = status.name
            seen.add(name)
            self._statuses[name] = status
            node = self._server_nodes.get(name)
            if node is None:
                node = self.server_tree.root.add(
                    server_label(status), data=("server", name, ""), expand=False
                )
                self._server_nodes[name] = node
            else:
                node.set_label(server_label(status))
            signature = _signature(status)
            if self._signatures.get(name) != signature:
                previous_state = self._signatures.get(name, ("",))[0]
                self._signatures[name] = signature
                self._fill_server(node, status)
                if _state(status) == "failed" and previous_state != "failed":
                    node.expand()
        for name in list(self._server_nodes):
            if name not in seen:
                self._server_nodes.pop(name).remove()
                self._signatures.pop(name, None)
                self._statuses.pop(name, None)
        self._show_detail()
        self._show_log()
        if not statuses:
            self._hint.update(Content.styled("No MCP servers configured.", "$text-muted"))
        elif not self._hint.content:
            self._hint.update(Content.styled("r refresh · R all · c reconnect · v log", "$text-muted"))

    def _fill_server(self, node: TreeNode[NodeData], status: ServerStatus) -> None:
        name = status.name
        expanded_sections = {
            str(child.label.plain).split(" ", 1)[0] for child in node.children if child.is_expanded
        }
        node.remove_children()
        state = _state(status)
        error = status.error
        if state == "failed" and error:
            reason = " ".join(str(error).split())  # one line; the detail below shows it whole
            node.add_leaf(Content.styled(f"⚠ {reason}", "$text-error"), data=("error", name, ""))
        target = short_target(status.target or "")
        transport = status.transport
        if target or transport:
            node.add_leaf(
                Content.styled(f"{transport} {target}".strip(), "$text-muted"), data=("info", name, "")
            )
        sections = (
            ("Tools", _tool_names(status)),
            ("Resources", _resource_uris(status)),
            ("Prompts", _prompt_names(status)),
        )
        for title, names in sections:
            if not names:
                continue
            section = node.add(
                Content.assemble(title, (f" ({len(names)})", "$text-muted")),
                data=(title.lower(), name, ""),
                expand=title in expanded_sections,
            )
            for entry in names:
                section.add_leaf(entry, data=(title.lower(), name, entry))

    def _show_detail(self) -> None:
        name = self.focused_server
        status = self._statuses.get(name) if name else None
        if status is None:
            self._detail.update("")
            self._detail.display = False
            return
        node = self.server_tree.cursor_node
        if node is not None and node.data is not None and node.data[2]:
            self._detail.update(entry_detail(status, node.data[0], node.data[2]))
            self._detail.display = True
            return
        state = _state(status)
        style = {"connected": "$text-success", "failed": "$text-error"}.get(state, "$text-muted")
        parts: list[tuple[str, str] | str] = [(str(name), "bold"), " ", (state, style)]
        if getattr(status, "needs_login", False):  # before the long challenge, which may be cut
            parts.append(("  · l to log in", "bold $text-warning"))
        if status.error:
            parts.append(("\n" + status.error, "$text-error"))
        if status.target:
            parts.append((f"\n{status.transport} {short_target(status.target)}", "$text-muted"))
        for progress in status.progress:
            parts.append((f"\n⟳ {progress.tool} {progress.describe()}", "$text-accent"))
        if status.log_count:
            parts.append((f"\n{status.log_count} log messages · v to view", "$text-muted"))

        self._detail.update(Content.assemble(*parts))
        self._detail.display = True

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[NodeData]) -> None:
        self._show_detail()
        if self.log_server is not None and self.focused_server not in (None, self.log_server):
            self.log_server = self.focused_server
            self._show_log()

    # --- the per-server log view (notifications/message) --------------------------------
    def action_toggle_log(self) -> None:
        """Show (or hide) the focused server's recent log messages."""
        self.log_server = None if self.log_server is not None else self.focused_server
        self._show_log()

    def _show_log(self) -> None:
        name = self.log_server
        logs = getattr(self.manager, "logs", None)
        if name is None or not callable(logs):
            self._log_view.display = False
            return
        entries = list(logs(name))[-LOG_VIEW_LINES:]
        parts: list[tuple[str, str] | str] = [(f"{name} log", "bold"), ("  v close", "$text-muted")]
        if not entries:
            parts.append(("\n(no log messages yet)", "$text-muted"))
        for entry in entries:
            style = _LOG_STYLES.get(entry.level, "")
            parts.append("\n")
            parts.append((f"{entry.level[:4]:<4} ", style or "$text-muted"))
            parts.append(" ".join(entry.text.split()))
        self._log_view.update(Content.assemble(*parts))
        self._log_view.display = True

    def _tick_spinners(self) -> None:
        for name, status in self._statuses.items():
            if _state(status) == "connecting" and name in self._server_nodes:
                self._server_nodes[name].set_label(server_label(status))

    # --- actions ------------------------------------------------------------------------
    @property
    def focused_server(self) -> str | None:
        node = self.server_tree.cursor_node
        if node is None or node.data is None:
            return next(iter(self._server_nodes), None)
        return node.data[1]

    def action_refresh_server(self) -> None:
        self._start_refresh(self.focused_server, "refresh")

    def action_refresh_all(self) -> None:
        self._start_refresh(None, "refresh")

    def action_reconnect(self) -> None:
        self._start_refresh(self.focused_server, "reconnect")

    def action_login(self) -> None:
        server = self.focused_server
        status = self._statuses.get(server) if server else None
        if server is None or status is None:
            return
        if status.transport != "http":
            self.notify(f"{server} is a {status.transport} server: only HTTP servers log in.", timeout=4)
            return
        self.post_message(self.LoginRequested(server))

    def _start_refresh(self, server: str | None, verb: str) -> None:
        if self.manager is None:
            return
        target = server or "all servers"
        self._hint.update(Content.assemble((clock.spinner_frame(), "$text-accent"), f" {verb}ing {target}…"))
        self.run_worker(self._refresh(server, verb), group="mcp-refresh", exit_on_error=False)

    async def _refresh(self, server: str | None, verb: str) -> None:
        assert self.manager is not None
        try:
            # refresh reconnects a failed or disconnected server
            report = await self.manager.refresh(server)
        except Exception as exc:  # a failing server must not take the panel down
            report = f"MCP {verb} failed: {exc}"
        self.refresh_count += 1
        lines = [line.strip() for line in report.splitlines() if line.strip()]
        summary = "; ".join(lines[1:4] if len(lines) > 1 else lines) or "done"
        self._hint.update(Content.styled(summary, "$text-muted"))
        self.sync()
        failed = "failed" in report.lower()
        self.notify(summary, title=f"MCP {verb}", severity="warning" if failed else "information", timeout=4)
        self.post_message(self.Refreshed(server, report))
