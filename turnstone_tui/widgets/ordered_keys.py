"""Text fields that apply keys in the order they were typed.

Textual inserts a printable key in a text field's own key handler, but runs the field's binding
for a key (backspace, delete, the arrows, home/end, enter in an ``Input``) only once the key has
bubbled back up to the app, through the message queue of every ancestor (its containers, the
screen, the app), where the keys read after it already wait. Keys read together (a quick typist,
or any typist while the app is busy drawing a stream) were applied out of order: backspaces typed
before "ZQa" deleted "ZQa" and left what was there before ("ZQq"), and a letter typed after an
arrow went where the cursor was before the arrow. Textual issue #6605 (open); its PR #6631 does the
same in TextArea.

:class:`KeysInOrder` runs the field's own binding for a key inside its key handler, as the app
would on the bubble (the focused widget's bindings come first in the screen's binding chain, with
the app's keymap applied); a binding whose action refuses (``check_action``) bubbles on as before,
and priority bindings (checked by the app before the field sees the key) are left alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import events
from textual.widgets import Input, TextArea

if TYPE_CHECKING:
    from textual.widget import Widget

    _Mixin = Widget
else:  # a plain mixin: a Widget base here would hide the field's COMPONENT_CLASSES from Textual
    _Mixin = object


class KeysInOrder(_Mixin):
    """Mix in before a text field (``class F(KeysInOrder, TextArea)``): its own bindings run in
    its key handler, in the order the keys were typed."""

    async def _on_key(self, event: events.Key) -> None:
        await super()._on_key(event)  # type: ignore[misc]
        # (Message._no_default_action: Textual's flag for prevent_default; Textual 8.2.8 is pinned)
        if not event._no_default_action:
            await self.run_own_binding(event)

    async def run_own_binding(self, event: events.Key) -> None:
        """Run this widget's own (non-priority) binding for ``event`` now, if it has one."""
        # (Screen._modal_binding_chain: Textual's, private; the focused widget's entry is first)
        chain = self.screen._modal_binding_chain
        if not chain or chain[0][0] is not self:
            return
        for binding in chain[0][1].key_to_bindings.get(event.key, ()):
            if not binding.priority and await self.app.run_action(binding.action, self):
                event.stop()
                event.prevent_default()
                return


class OrderedTextArea(KeysInOrder, TextArea):
    """Textual's TextArea, its keys applied in the order typed."""


class OrderedInput(KeysInOrder, Input):
    """Textual's Input, its keys applied in the order typed."""
