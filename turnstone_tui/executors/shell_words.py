"""What a shell word will be when bash runs it, as far as that can be known before it runs.

``read_word`` takes the word's source text (quotes and all) and returns a ``Word``:
- ``value``: the text after quote removal, with every expansion (``$X``, ``${X}``, ``$(...)``,
  backquotes, ``$'...'``) replaced by nothing: the worst case for a path (``$X/*`` becomes ``/*``);
- ``dynamic``: the word holds an expansion, so its real text is only known at run time;
- ``pattern``: the word holds an unquoted glob (``* ? [``) or brace expansion (``{a,b}``, ``{1..3}``).

``$HOME`` / ``${HOME}`` are the one expansion taken at face value (the user's home). The scan is one
pass over the word: linear in its length.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BRACE = re.compile(r"\{[^{}\s]*(,|\.\.)[^{}\s]*\}")
MAX_BRACE_WORDS = 64


@dataclass(frozen=True, slots=True)
class Word:
    raw: str
    value: str
    dynamic: bool = False
    pattern: bool = False

    @property
    def literal(self) -> bool:
        return not self.dynamic and not self.pattern


def literal(text: str) -> Word:
    return Word(text, text)


def _skip_balanced(raw: str, i: int, open_ch: str, close_ch: str) -> int:
    """Index just past the ``close_ch`` that balances the ``open_ch`` at ``raw[i]`` (or the end)."""
    depth = 0
    n = len(raw)
    while i < n:
        c = raw[i]
        if c == "\\":
            i += 2
            continue
        if c == "'" and open_ch == "(":
            end = raw.find("'", i + 1)
            i = n if end < 0 else end + 1
            continue
        if c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def _expansion(raw: str, i: int, home: str) -> tuple[int, str | None]:
    """At a ``$`` or backquote: (index after the expansion, its known value or None)."""
    n = len(raw)
    if raw[i] == "`":
        j = i + 1
        while j < n and raw[j] != "`":
            j += 2 if raw[j] == "\\" else 1
        return min(j + 1, n), None
    if i + 1 >= n:
        return n, "$"  # a lone trailing $ is literal
    nxt = raw[i + 1]
    if nxt == "{":
        end = _skip_balanced(raw, i + 1, "{", "}")
        return end, home if raw[i + 2 : end - 1] == "HOME" else None
    if nxt == "(":
        return _skip_balanced(raw, i + 1, "(", ")"), None
    if nxt in "'\"":  # $'...' (ANSI-C: escapes decoded at run time) and $"..." (locale translation)
        end = raw.find(nxt, i + 2)
        return (n if end < 0 else end + 1), None
    m = _NAME.match(raw, i + 1)
    if m:
        return m.end(), home if m.group() == "HOME" else None
    if nxt.isdigit() or nxt in "@*#?$!-":
        return i + 2, None
    return i + 1, "$"


def read_word(raw: str, home: str | None = None) -> Word:
    home = os.path.expanduser("~") if home is None else home
    out: list[str] = []
    dynamic = pattern = False
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if c == "\\":
            if i + 1 < n and raw[i + 1] != "\n":
                out.append(raw[i + 1])
            i += 2
            continue
        if c == "'":
            end = raw.find("'", i + 1)
            end = n if end < 0 else end
            out.append(raw[i + 1 : end])
            i = end + 1
            continue
        if c == '"':
            i += 1
            while i < n and raw[i] != '"':
                d = raw[i]
                if d == "\\" and i + 1 < n:
                    if raw[i + 1] in '$`"\\':
                        out.append(raw[i + 1])
                    elif raw[i + 1] != "\n":
                        out.append(raw[i : i + 2])
                    i += 2
                    continue
                if d in "$`":
                    i, known = _expansion(raw, i, home)
                    if known is None:
                        dynamic = True
                    else:
                        out.append(known)
                    continue
                out.append(d)
                i += 1
            i += 1
            continue
        if c in "$`":
            i, known = _expansion(raw, i, home)
            if known is None:
                dynamic = True
            else:
                out.append(known)
            continue
        if c in "*?" or (c == "[" and "]" in raw[i + 1 :]):  # a lone [ (the test command) is literal
            pattern = True
        elif c == "{" and _BRACE.match(raw, i):
            pattern = True
        out.append(c)
        i += 1
    return Word(raw, "".join(out), dynamic, pattern)


def expand_braces(text: str) -> list[str]:
    """Simple brace expansion of a word's value (``/{etc,usr}`` -> ``/etc``, ``/usr``), capped."""
    results = [text]
    for _ in range(8):
        changed = False
        nxt: list[str] = []
        for item in results:
            m = re.search(r"\{([^{}]*,[^{}]*)\}", item)
            if m is None:
                nxt.append(item)
                continue
            changed = True
            nxt.extend(item[: m.start()] + part + item[m.end() :] for part in m.group(1).split(","))
        results = nxt[:MAX_BRACE_WORDS]
        if not changed:
            break
    return results


MAX_EMBEDDED = 256


def embedded_scripts(text: str) -> list[str]:
    """The commands of the ``$(...)`` and backquote substitutions in ``text``, which bash runs in an
    unquoted heredoc body and inside ``${...}`` / ``~...`` (``${x:-$(cmd)}``), where bashlex does not
    parse them. Quotes are not honoured (a heredoc body's ``'`` is literal): it errs on the side of
    finding a command. ``$((...))`` gives its ``(...)``, which runs any substitution inside it.
    Substitutions nested in one found are left to whoever parses it. At most ``MAX_EMBEDDED``."""
    found: list[str] = []
    i, n = 0, len(text)
    while i < n and len(found) < MAX_EMBEDDED:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "$" and i + 1 < n and text[i + 1] == "(":
            end = _skip_balanced(text, i + 1, "(", ")")
            found.append(text[i + 2 : end - 1 if end <= n and text[end - 1 : end] == ")" else end])
            i = end
            continue
        if c == "`":
            j = i + 1
            while j < n and text[j] != "`":
                j += 2 if text[j] == "\\" else 1
            found.append(text[i + 1 : j].replace("\\`", "`"))
            i = j + 1
            continue
        i += 1
    return found


def has_substitution(text: str) -> bool:
    return "$(" in text or "`" in text
