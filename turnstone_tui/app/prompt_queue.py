"""Prompts sent while the app cannot start a turn yet: shown in the chat as "queued", sent in order."""

from __future__ import annotations

from ..widgets.chat_messages import InfoMessage
from ..widgets.chat_view import ChatView


class PromptQueue:
    def __init__(self) -> None:
        self._queued: list[tuple[str, InfoMessage]] = []

    def __len__(self) -> int:
        return len(self._queued)

    @property
    def texts(self) -> list[str]:
        return [text for text, _ in self._queued]

    def add(self, text: str, chat: ChatView) -> None:
        """Queue ``text`` and show it as a "queued:" notice at the end of the chat."""
        notice = InfoMessage(f"queued: {text}", classes="-queued")
        self._queued.append((text, notice))
        chat.call_later(chat.add, notice)

    def pop(self) -> str | None:
        """The oldest queued prompt (its notice removed), or None."""
        if not self._queued:
            return None
        text, notice = self._queued.pop(0)
        notice.remove()
        return text

    def take_all(self) -> list[str]:
        """Every queued prompt, oldest first; the queue and its notices are cleared."""
        texts = self.texts
        for _, notice in self._queued:
            notice.remove()
        self._queued.clear()
        return texts
