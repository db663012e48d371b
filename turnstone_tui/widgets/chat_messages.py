"""The widgets that make up the conversation: user prompts, streamed answers, reasoning, notices."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.content import Content
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Collapsible, Markdown, Static
from textual.widgets.markdown import MarkdownStream

# Reasoning can be very long; the dimmed block shows at most this many trailing characters.
MAX_REASONING_CHARS = 20_000


class UserMessage(Static):
    """What the user typed, shown once the turn starts."""

    def __init__(self, text: str) -> None:
        super().__init__(Content(text), markup=False)
        self.text = text


class InfoMessage(Static):
    """A notice from the app or the engine (not an error)."""

    def __init__(self, text: str, *, markup: bool = False, classes: str | None = None) -> None:
        super().__init__(text if markup else Content(text), markup=markup, classes=classes)
        self.text = text


class WelcomeMessage(InfoMessage):
    """The first line of an empty chat: model, provider and the keys that matter."""


class ErrorMessage(Static):
    """Something went wrong; shown in the error colour with a title."""

    def __init__(self, text: str) -> None:
        super().__init__(Content(text), markup=False)
        self.text = text
        self.border_title = "error"


FLUSH_INTERVAL = 0.04  # seconds between Markdown updates while an answer streams


class AssistantMessage(Widget):
    """The assistant's answer, streamed into a Markdown widget through ``Markdown.get_stream()``.

    The raw source is kept so ``/raw`` can show it as plain text (class ``-raw`` on the chat view).
    """

    def __init__(self, source: str = "", *, finished: bool = False, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self._initial = source
        self._parts: list[str] = [source] if source else []
        self._stream: MarkdownStream | None = None
        self._unflushed: list[str] = []
        self._flush_timer: Timer | None = None
        self.finished = finished

    @property
    def source(self) -> str:
        return "".join(self._parts)

    def compose(self) -> ComposeResult:
        yield Markdown(self._initial)
        yield Static(Content(self._initial), classes="raw", markup=False)

    async def append(self, text: str) -> None:
        """Append a fragment of the answer (rendering is coalesced by the stream)."""
        if not text:
            return
        self._parts.append(text)
        if self.finished:
            await self.query_one(Markdown).append(text)
        else:
            # Hand text to the Markdown stream at most every FLUSH_INTERVAL: each append re-lays out
            # the document, so per-token appends cap the rate the screen can keep up with.
            self._unflushed.append(text)
            if self._flush_timer is None:
                self._flush_timer = self.set_timer(FLUSH_INTERVAL, self._flush)
        if self.parent is not None and self.parent.has_class("-raw"):
            self.sync_raw()

    async def _flush(self) -> None:
        self._flush_timer = None
        if not self._unflushed:
            return
        text = "".join(self._unflushed)
        self._unflushed.clear()
        if self._stream is None:
            self._stream = Markdown.get_stream(self.query_one(Markdown))
        await self._stream.write(text)

    def sync_raw(self) -> None:
        self.query_one(".raw", Static).update(Content(self.source))

    async def finish(self) -> None:
        """The message is complete: flush whatever the stream still holds."""
        if self.finished:
            return
        if self._flush_timer is not None:
            self._flush_timer.stop()
        await self._flush()
        self.finished = True
        if self._stream is not None:
            stream, self._stream = self._stream, None
            await stream.stop()


class ReasoningBlock(Collapsible):
    """The model's thinking, dimmed; open while it streams, collapsed once the answer starts."""

    def __init__(self, text: str = "", *, finished: bool = False) -> None:
        self._parts: list[str] = [text] if text else []
        self._chars = len(text)
        self.finished = finished
        super().__init__(
            Static(Content(text[-MAX_REASONING_CHARS:]), classes="reasoning-text", markup=False),
            title=self._title_text(),
            collapsed=finished,
        )

    @property
    def text(self) -> str:
        return "".join(self._parts)

    def _title_text(self) -> str:
        if not self.finished:
            return "Thinking…"
        words = len(self.text.split())
        return f"Thought · {words} word{'s' if words != 1 else ''}"

    def append(self, text: str) -> None:
        if not text:
            return
        self._parts.append(text)
        self._chars += len(text)
        if len(self._parts) > 256:  # keep the part list short; join is cheap at this size
            self._parts = ["".join(self._parts)]
        tail = self.text[-MAX_REASONING_CHARS:]
        self.query_one(".reasoning-text", Static).update(Content(tail))

    def finish(self) -> None:
        if self.finished:
            return
        self.finished = True
        self.title = self._title_text()
        self.collapsed = True
