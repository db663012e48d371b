"""The app's last line filter: no control or invisible format character reaches the terminal.

Textual writes a segment's text to the terminal as it is, and any text the app draws may come
from the model, a tool's output, a file name or an MCP server: an escape sequence in it moved the
cursor, erased what the user was about to approve, retitled the window or hid text. Every line
of every widget passes through ``get_line_filters``; this filter removes what
``core.display.strip_invisible`` removes (zero cells wide to Textual: nothing moves). Where the
user decides (approvals, plans, diffs) ``core.display.visible`` writes those characters out first.
The big, long-lived widgets (the answer's Markdown blocks, the chat's entries) clean their lines as
they render them and skip this filter (widgets/clean_lines.py, where the filter is defined).
"""

from __future__ import annotations

from ..widgets.clean_lines import InvisibleFilter

__all__ = ["InvisibleFilter"]
