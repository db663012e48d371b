"""The terminal driver marks each key the moment its input thread reads it (core.input_gate).

Textual's driver reads the terminal in a thread of its own and hands each key to the event loop,
where it waits its turn behind whatever is ready; marking it here, before the loop knows of it,
lets the output pumps and the panes step aside for it at once (the app opens the gate again once
the key's frame is drawn: ``TurnstoneApp.on_event``).
"""

from __future__ import annotations

from functools import cache

from textual import events
from textual.driver import Driver
from textual.message import Message

from ..core.input_gate import GATE


@cache
def input_gated(base: type[Driver]) -> type[Driver]:
    """``base`` (the platform's driver class) with every key and paste marked on the input gate."""

    class InputGatedDriver(base):  # type: ignore[valid-type, misc]
        def process_message(self, message: Message) -> None:
            if isinstance(message, (events.Key, events.Paste)):
                GATE.key_read()
            super().process_message(message)

    InputGatedDriver.__name__ = InputGatedDriver.__qualname__ = f"InputGated{base.__name__}"
    return InputGatedDriver
