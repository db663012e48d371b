"""A command line cut into the simple commands bash will run, for permission rules.

``command_parts("git status && npm run test -- -x")`` gives one ``CommandPart`` per simple command,
also those inside pipelines, lists, subshells, ``{ ...; }``, functions, loops and conditionals, and
``$(...)`` / backquote / ``<(...)`` substitutions anywhere (in words, assignments and redirects,
inside ``${...}`` and in unquoted heredoc bodies, which bash expands and bashlex leaves unparsed).
Each word is its text after quote removal (``'git' "status"`` is ``git status``), or None when bash
decides it at run time (``$X``, ``$(...)``, globs, brace expansion). A part with an environment
prefix or a redirect that writes a file is not ``clean`` (see ``CommandPart``).

None when the line cannot be cut reliably: bashlex cannot parse it (``[[ ]]``, ``$(( ))``, ``case``,
...) or it is longer than the bash guard's limit. Rules then never allow it without asking.
"""

from __future__ import annotations

import os
from typing import Any

from ..core.types import CommandPart
from .bash_guard import (
    _WRAPPER_SKIPS_OPERAND,
    _WRAPPERS,
    MAX_COMMAND_CHARS,
    _unquote_heredoc_delimiters,
    nested_commands,
)
from .shell_words import embedded_scripts, has_substitution, read_word

_GIT_VALUE_OPTS = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix"}
)
_WRITES = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
_HARMLESS_TARGETS = frozenset({"/dev/null"})
MAX_PARTS = 1000


class _Unanalysable(Exception):
    pass


def command_parts(command: str) -> tuple[CommandPart, ...] | None:
    """The simple commands of ``command`` (see the module docstring), then those it runs from strings
    (``sh -c 'git push'``, ``eval``, ``find -exec`` ...: ``bash_guard.nested_commands``), so a deny
    rule sees them and an allow rule must cover them too. Blocking (bashlex): off the loop."""
    parts = _parts(command)
    if parts is None:
        return None
    nested = nested_commands(command)
    if nested is None:
        return None  # the guard refuses it: no rule judges it
    found = [CommandPart(words, True, _unwrap(list(words))) for words in nested]
    return parts + tuple(p for p in found if p not in parts)


def _parts(command: str) -> tuple[CommandPart, ...] | None:
    if len(command) > MAX_COMMAND_CHARS:
        return None
    import bashlex  # type: ignore[import-untyped]

    source = _unquote_heredoc_delimiters(command)
    try:
        trees = bashlex.parse(source)
    except RecursionError:
        return None
    except Exception:  # bashlex raises ParsingError, NotImplementedError, IndexError ...
        return None
    parts: list[CommandPart] = []
    try:
        for tree in trees:
            _walk(tree, _Source(source, command), parts)
    except (_Unanalysable, RecursionError):
        return None
    return tuple(parts)


class _Source(str):
    """The text bashlex parsed, carrying the text as written (heredoc delimiters still quoted,
    same offsets)."""

    original: str

    def __new__(cls, text: str, original: str) -> _Source:
        made = super().__new__(cls, text)
        made.original = original
        return made


def _embedded(text: str, parts: list[CommandPart]) -> None:
    """The commands of substitutions bashlex leaves unparsed (``${x:-$(cmd)}``, an unquoted heredoc
    body): cut like the rest, or the whole line is unanalysable."""
    if not has_substitution(text):
        return
    for script in embedded_scripts(text):
        found = _parts(script)
        if found is None:
            raise _Unanalysable("a substitution that cannot be parsed")
        parts.extend(found)


def _heredoc_expands(redirect: Any, source: str) -> bool:
    output = getattr(redirect, "output", None)
    original = getattr(source, "original", "")
    if output is None or not original:
        return True
    return not any(q in original[redirect.pos[0] : output.pos[1]] for q in "'\"\\")


def _value(node: Any, source: str) -> str | None:
    if any(
        getattr(p, "kind", "") in ("commandsubstitution", "processsubstitution") for p in node.parts or ()
    ):
        return None
    start, end = node.pos
    word = read_word(source[start:end])
    return word.value if word.literal else None


def _walk(node: Any, source: str, parts: list[CommandPart]) -> None:
    kind = getattr(node, "kind", "")
    if kind == "command":
        _command(node, source, parts)
        return
    if kind == "function":
        _walk(node.body, source, parts)
        return
    if kind == "compound":
        for part in node.list:
            _walk(part, source, parts)
        for redirect in getattr(node, "redirects", None) or []:
            _redirect(redirect, source, parts)
        return
    if kind in ("word", "assignment"):
        _substitutions(node, source, parts)
        return
    if kind in ("commandsubstitution", "processsubstitution"):
        _walk(node.command, source, parts)
        return
    if kind in ("operator", "pipe", "reservedword", "tilde", "parameter", "heredoc"):
        return
    children = getattr(node, "parts", None)
    if children is None and kind not in ("list", "pipeline", "if", "for", "while", "until"):
        raise _Unanalysable(kind)  # a node this walker does not know: do not guess
    for child in children or []:
        _walk(child, source, parts)


def _substitutions(node: Any, source: str, parts: list[CommandPart]) -> None:
    end = node.pos[1] if getattr(node, "kind", "") == "word" else 0  # bashlex cuts ~$(a /) at the /
    for part in getattr(node, "parts", None) or []:
        kind = getattr(part, "kind", "")
        if kind in ("commandsubstitution", "processsubstitution"):
            _walk(part.command, source, parts)
        elif kind in ("parameter", "tilde"):
            _embedded(source[part.pos[0] : max(part.pos[1], end)], parts)
        else:
            _substitutions(part, source, parts)


def _redirect(node: Any, source: str, parts: list[CommandPart]) -> bool:
    """Walk a redirect's substitutions; True when it writes a file (not /dev/null, not an fd)."""
    target = getattr(node, "output", None)
    op = getattr(node, "type", "")
    if getattr(target, "kind", "") != "word":
        return False  # 2>&1, a heredoc: no file
    _substitutions(target, source, parts)
    if op not in _WRITES:
        return False
    value = _value(target, source)
    if op == ">&" and value is not None and (value.isdigit() or value == "-"):
        return False
    return value not in _HARMLESS_TARGETS


def _unwrap(words: list[str | None]) -> tuple[str | None, ...]:
    """The command wrappers run (``sudo -u x env A=1 nice -n 5 /bin/rm f`` -> ``rm f``)."""
    i = 0
    while i < len(words):
        word = words[i]
        if word is None:
            break
        name = os.path.basename(word)
        if name not in _WRAPPERS:
            break
        value_opts = _WRAPPERS[name]
        i += 1
        while (
            i < len(words)
            and (w := words[i]) is not None
            and (w.startswith("-") or (name == "env" and "=" in w))
        ):
            i += 2 if w in value_opts else 1
            if w == "--":
                break
        if name in _WRAPPER_SKIPS_OPERAND and i < len(words):
            i += 1
    rest = list(words[i:])
    if rest and rest[0] is not None:
        rest[0] = os.path.basename(rest[0])
    if rest and rest[0] == "git":  # git -C dir -c k=v --no-pager push: the subcommand is push
        j = 1
        while j < len(rest) and (w := rest[j]) is not None and w.startswith("-"):
            j += 2 if w in _GIT_VALUE_OPTS else 1
        rest = ["git", *rest[j:]]
    return tuple(rest)


def _command(node: Any, source: str, parts: list[CommandPart]) -> None:
    words: list[str | None] = []
    clean = True
    for part in node.parts:
        kind = getattr(part, "kind", "")
        if kind == "word":
            _substitutions(part, source, parts)
            words.append(_value(part, source))
        elif kind == "assignment":
            _substitutions(part, source, parts)
            clean = False
        elif kind == "redirect":
            heredoc = getattr(part, "heredoc", None)
            if heredoc is not None:
                if _heredoc_expands(part, source):  # bash runs the $(...) of an unquoted body
                    _embedded(heredoc.value, parts)
                continue
            if _redirect(part, source, parts):
                clean = False
    if words or not clean:
        # a bare ``> file`` or ``X=1`` runs no program but changes something: no rule allows it
        inner = _unwrap(words)
        parts.append(CommandPart(tuple(words), clean, inner if inner != words else ()))
    if len(parts) > MAX_PARTS:
        raise _Unanalysable("too many commands")
