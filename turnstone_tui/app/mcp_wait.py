"""Before the first turn: wait (bounded by ``[mcp] first_turn_wait``, visibly; esc skips) for MCP
servers still connecting, so the model sees their tools."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ..widgets.chat_messages import InfoMessage
from ..widgets.chat_view import ChatView

if TYPE_CHECKING:
    from ..runtime import Runtime


class FirstTurnMcpWait:
    def __init__(self) -> None:
        self._waited = False  # the first turn waited (or had no need to) for connecting servers
        self._skip: asyncio.Event | None = None  # set by esc during that wait

    def skip(self) -> bool:
        """esc: stop waiting; False when no wait is running."""
        if self._skip is None:
            return False
        self._skip.set()
        return True

    async def wait(self, runtime: Runtime | None, chat: ChatView) -> None:
        mcp = runtime.mcp if runtime is not None else None
        if self._waited or runtime is None or mcp is None:
            return
        self._waited = True
        connecting = [s.name for s in mcp.statuses() if str(s.state) == "connecting"]
        limit = runtime.config.mcp.first_turn_wait
        if not connecting or limit <= 0:
            return
        notice = InfoMessage(
            f"waiting up to {limit:g}s for MCP server(s) still connecting: {', '.join(connecting)}"
            " · esc to go on without them",
            classes="-mcp-wait",
        )
        await chat.add(notice)
        skip = self._skip = asyncio.Event()
        waiter = asyncio.ensure_future(mcp.wait_ready(limit))
        skipper = asyncio.ensure_future(skip.wait())
        try:
            await asyncio.wait({waiter, skipper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
            skipper.cancel()
            self._skip = None
            notice.remove()
        late = [s.name for s in mcp.statuses() if str(s.state) == "connecting"]
        if late:
            await chat.add_info(
                f"going on without MCP server(s) still connecting: {', '.join(late)} "
                "(their tools join when they connect)"
            )
