"""Floors for the streaming-Markdown bench: the same scripted answer streamed from the same model
server, shown by the least a program can do, in the same pseudo-terminal as the app.

- ``raw``: each delta written straight to the terminal (what a plain CLI costs);
- ``textual``: a minimal Textual app, one ``Markdown`` widget in an anchored ``VerticalScroll``
  fed through ``Markdown.get_stream`` (what Textual's own Markdown widget costs: if the app is no
  slower than this, Textual is the limit);
- ``textual-log``: a minimal Textual app, one ``Log`` widget (Textual's cheapest widget for text
  that grows: line API, no markup) with each delta written to it, plain text: what Textual costs to
  keep a growing text on the screen at all, whatever renders it.

Run by ``bench/terminal_markdown.py``: ``python bench/floor_markdown.py raw|textual|textual-log BASE_URL``.
"""

from __future__ import annotations

import sys

from openai import AsyncOpenAI, OpenAI

REQUEST = {"model": "scripted-model", "messages": [{"role": "user", "content": "explain the build"}]}


def raw(base_url: str) -> None:
    client = OpenAI(base_url=base_url, api_key="bench-key")
    out = sys.stdout
    out.write("raw floor: streaming\n")
    out.flush()
    for chunk in client.chat.completions.create(stream=True, **REQUEST):  # type: ignore[call-overload]
        for choice in chunk.choices:
            if choice.delta.content:
                out.write(choice.delta.content)
                out.flush()
    sys.stdin.read(1)  # stay until the bench has seen the end (any key quits)


def textual(base_url: str) -> None:
    from textual.app import App, ComposeResult
    from textual.containers import VerticalScroll
    from textual.widgets import Markdown

    class MarkdownFloor(App[None]):
        BINDINGS = [("ctrl+q", "quit", "Quit")]

        def compose(self) -> ComposeResult:
            with VerticalScroll():
                yield Markdown("textual floor: streaming")

        async def on_mount(self) -> None:
            self.query_one(VerticalScroll).anchor()
            self.run_worker(self.stream())

        async def stream(self) -> None:
            client = AsyncOpenAI(base_url=base_url, api_key="bench-key")
            markdown = self.query_one(Markdown)
            stream = Markdown.get_stream(markdown)
            response = await client.chat.completions.create(stream=True, **REQUEST)  # type: ignore[call-overload]
            async for chunk in response:
                for choice in chunk.choices:
                    if choice.delta.content:
                        await stream.write(choice.delta.content)
            await stream.stop()

    MarkdownFloor().run()


def textual_log(base_url: str) -> None:
    from textual.app import App, ComposeResult
    from textual.widgets import Log

    class LogFloor(App[None]):
        BINDINGS = [("ctrl+q", "quit", "Quit")]

        def compose(self) -> ComposeResult:
            yield Log()

        async def on_mount(self) -> None:
            self.query_one(Log).write("textual log floor: streaming\n")
            self.run_worker(self.stream())

        async def stream(self) -> None:
            client = AsyncOpenAI(base_url=base_url, api_key="bench-key")
            log = self.query_one(Log)
            response = await client.chat.completions.create(stream=True, **REQUEST)  # type: ignore[call-overload]
            async for chunk in response:
                for choice in chunk.choices:
                    if choice.delta.content:
                        log.write(choice.delta.content)

    LogFloor().run()


if __name__ == "__main__":
    mode, url = sys.argv[1], sys.argv[2]
    {"raw": raw, "textual": textual, "textual-log": textual_log}[mode](url)
