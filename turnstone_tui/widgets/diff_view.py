"""A unified diff rendered with a line-number gutter, +/- backgrounds and syntax highlighting.

Each hunk's code is highlighted as one block (so strings and comments spanning lines keep their
colours) in the language guessed from the file name in the ``+++`` header, using Textual's
theme-aware highlighter, so it reads well in light and dark themes.
"""

from __future__ import annotations

import re

from textual.content import Content
from textual.highlight import guess_language, highlight
from textual.widgets import Static

_HUNK_RE = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
MAX_WIDTH = 240

ADD_STYLE = "on $success-muted"
DEL_STYLE = "on $error-muted"
ADD_SIGN = "bold $text-success"
DEL_SIGN = "bold $text-error"
GUTTER_STYLE = "$text-muted"
HUNK_STYLE = "$text-accent"
FILE_STYLE = "bold $text"


def diff_path(diff: str) -> str | None:
    """The new file's path from a ``+++ b/path`` header, if any."""
    for line in diff.splitlines()[:20]:
        if line.startswith("+++ "):
            path = line[4:].split("\t", 1)[0].strip()
            if path.startswith("b/"):
                path = path[2:]
            return None if path == "/dev/null" else path
    return None


def _highlight_block(lines: list[str], language: str) -> list[Content]:
    if not lines:
        return []
    highlighted = highlight("\n".join(lines), language=language)
    parts = highlighted.split("\n")
    # highlight() may drop trailing empty lines; pad so indices match.
    while len(parts) < len(lines):
        parts.append(Content(""))
    return parts[: len(lines)]


def render_diff(diff: str, path: str | None = None, max_lines: int = 400) -> Content:
    """Render a unified diff as styled Content (bounded to ``max_lines`` lines)."""
    raw_lines = diff.expandtabs(4).splitlines()
    hidden = max(0, len(raw_lines) - max_lines)
    raw_lines = raw_lines[:max_lines]
    path = path or diff_path(diff)
    body_code = "\n".join(
        line[1:] for line in raw_lines if line[:1] in " +-" and not line.startswith(("+++", "---"))
    )
    language = guess_language(body_code, path) if path else "text"

    rendered: list[tuple[str, Content, str]] = []  # (gutter, content, background style)
    old_no = new_no = 0
    index = 0
    while index < len(raw_lines):
        line = raw_lines[index]
        match = _HUNK_RE.match(line)
        if match:
            old_no, new_no = int(match.group(1)), int(match.group(2))
            rendered.append(("", Content.styled(line, HUNK_STYLE), ""))
            index += 1
            hunk: list[str] = []
            while index < len(raw_lines) and raw_lines[index][:1] in (" ", "+", "-", "\\", ""):
                if _HUNK_RE.match(raw_lines[index]):
                    break
                hunk.append(raw_lines[index])
                index += 1
            code_lines = [entry[1:] for entry in hunk]
            for entry, code in zip(hunk, _highlight_block(code_lines, language), strict=True):
                sign = entry[:1]
                if sign == "+":
                    gutter, sign_style, background = f"{new_no:>4} ", ADD_SIGN, ADD_STYLE
                    new_no += 1
                elif sign == "-":
                    gutter, sign_style, background = f"{old_no:>4} ", DEL_SIGN, DEL_STYLE
                    old_no += 1
                elif sign == "\\":
                    rendered.append(("     ", Content.styled(entry, "dim italic"), ""))
                    continue
                else:
                    gutter, sign_style, background = f"{new_no:>4} ", "", ""
                    old_no += 1
                    new_no += 1
                rendered.append((gutter, Content.assemble((sign or " ", sign_style), code), background))
            continue
        if line.startswith(("+++", "---", "diff ", "index ", "new file", "deleted file")):
            rendered.append(("", Content.styled(line, FILE_STYLE), ""))
        else:
            rendered.append(("", Content(line), ""))
        index += 1

    width = min(MAX_WIDTH, max((len(g) + c.cell_length for g, c, _ in rendered), default=0))
    out: list[Content] = []
    for gutter, content, background in rendered:
        line_content = Content.assemble((gutter, GUTTER_STYLE), content)
        if len(gutter) + content.cell_length < width:
            line_content = line_content.pad_right(width - line_content.cell_length)
        if background:
            line_content = line_content.stylize_before(background)
        out.append(line_content)
    if hidden:
        out.append(Content.styled(f"… {hidden} more diff lines", "dim italic"))
    return Content("\n").join(out)


class DiffView(Static):
    """A static, syntax-highlighted unified diff."""

    DEFAULT_CSS = """
    DiffView {
        height: auto;
        width: 1fr;
        background: $surface;
        padding: 0 1;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    def __init__(
        self,
        diff: str,
        path: str | None = None,
        *,
        max_lines: int = 400,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        self.diff = diff
        self.path = path
        super().__init__(render_diff(diff, path, max_lines), id=id, classes=classes, markup=False)
