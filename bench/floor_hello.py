"""The floor for the real-terminal benches: a Textual hello-world with a focused text input.

Run in a pseudo-terminal by the benches, interleaved with the real app: what Textual itself costs
on this machine, right now (first frame, key -> character on screen).
"""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Footer, Input, Static


class HelloApp(App[None]):
    AUTO_FOCUS = "Input"
    BINDINGS = [("ctrl+q", "quit", "Quit")]

    def compose(self) -> ComposeResult:
        yield Static("Hello, world")
        yield Input(placeholder="type here")
        yield Footer()


if __name__ == "__main__":
    HelloApp().run()
