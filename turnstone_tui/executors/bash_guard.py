"""The bash blocklist: destructive commands refused at prepare time, with the reason why.

Commands are judged structurally: ``bashlex`` parses the command line and every simple command
(also inside functions, loops, pipelines, ``$(...)`` and ``bash -c '...'`` / ``eval`` strings) is
checked as a list of words, plus its redirections. bashlex does not understand everything bash
does (``case``, ``$((...))``, ``[[ ]]`` ...); when it fails, a careful tokenizer (``shlex`` with
punctuation splitting) cuts the line into simple commands and the same word checks run on them.

Refused:
- ``rm`` recursive on ``/``, ``/*``, ``~``, ``$HOME`` or a top-level system directory, and any
  ``rm``/``chmod``/``chown``/``chgrp`` with ``--no-preserve-root``;
- ``chmod``/``chown``/``chgrp -R`` on those same targets; ``find <such target> -delete``;
- fork bombs (a function that calls itself in a pipeline or in the background);
- ``mkfs*``, ``mkswap``, ``wipefs``, ``shred``, ``fdisk`` ... and ``dd of=`` on a block device;
  any output redirection (``>``, ``>>``, ``&>``) or ``tee`` onto a block device;
- ``kill -1`` style "every process" kills;
- ``shutdown``, ``reboot``, ``halt``, ``poweroff``, ``init 0/6``, ``systemctl poweroff|reboot|...``:
  this is the user's own workstation; the agent has no business turning it off (the user can).

This is a guard against accidents, not a sandbox: every bash call is also shown for approval.
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import bashlex  # type: ignore[import-untyped]

_DEVICE = re.compile(
    r"^/dev/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk|mapper/|md\d|md/|dm-\d|sr\d|loop\d|"
    r"mtdblock|root$|block/)"
)
_SYSTEM_DIRS = frozenset(
    {
        "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/opt",
        "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/usr", "/var", "/usr/bin", "/usr/lib",
        "/usr/local", "/usr/sbin", "/usr/share", "/var/lib", "/mnt", "/media", "$HOME",
    }
)  # fmt: skip
# Wrappers that run the rest of their arguments as a command.
_WRAPPERS = frozenset(
    {"sudo", "doas", "env", "nice", "nohup", "time", "command", "builtin", "exec", "timeout", "stdbuf",
     "ionice", "setsid", "busybox", "chroot", "unbuffer", "watch", "xargs", "strace", "caffeinate"}
)  # fmt: skip
# Options of wrappers that take a separate value.
_WRAPPER_VALUE_OPTS = {
    "sudo": {"-u", "-g", "-U", "-C", "-h", "-p", "-r", "-t", "-D", "-R"},
    "doas": {"-u", "-C"},
    "nice": {"-n"},
    "ionice": {"-c", "-n", "-p"},
    "timeout": {"-s", "-k", "--signal", "--kill-after"},
    "stdbuf": {"-i", "-o", "-e"},
    "env": {"-u", "-C", "-S", "--unset", "--chdir"},
    "watch": {"-n", "-d", "--interval"},
    "xargs": {"-I", "-n", "-P", "-d", "-E", "-L", "-s", "-a"},
    "strace": {"-o", "-e", "-p", "-s"},
}
_DISK_TOOLS = frozenset(
    {"mkswap", "wipefs", "shred", "fdisk", "sfdisk", "cfdisk", "gdisk", "sgdisk", "parted",
     "blkdiscard", "mke2fs", "mkdosfs", "mkntfs", "badblocks", "hdparm", "cryptsetup"}
)  # fmt: skip
_POWER = frozenset({"shutdown", "reboot", "halt", "poweroff"})
_SYSTEMCTL_POWER = frozenset(
    {"poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "rescue", "emergency"}
)
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_MAX_DEPTH = 4


def check_command(command: str) -> str | None:
    """None when the command may run, else a clear reason why it is refused."""
    return _check(command, 0)


# --- what a parsed command line looks like to the checks ----------------------------------------


@dataclass(slots=True)
class _Parsed:
    commands: list[list[str]] = field(default_factory=list)
    redirects: list[tuple[str, str]] = field(default_factory=list)  # (operator, target)
    functions: list[tuple[str, list[list[str]], str]] = field(default_factory=list)  # (name, calls, body)


def _check(command: str, depth: int) -> str | None:
    if depth > _MAX_DEPTH:
        return None
    parsed = _parse_bashlex(command)
    if parsed is None:
        parsed = _parse_fallback(command)
    for name, calls, body in parsed.functions:
        reason = _fork_bomb(name, calls, body)
        if reason:
            return reason
    bomb = _FORK_BOMB_TEXT.search(command)
    if bomb:
        return _fork_bomb_reason(bomb.group(1))
    for op, target in parsed.redirects:
        if op in (">", ">>", ">|", "&>", "&>>", "<>") and _DEVICE.match(target):
            return f"refused: writing output onto the block device {target} ({op} {target}) would destroy it"
    for words in parsed.commands:
        reason = _check_words(words, depth)
        if reason:
            return reason
    return None


# --- bashlex ------------------------------------------------------------------------------------


def _parse_bashlex(command: str) -> _Parsed | None:
    try:
        trees = bashlex.parse(command)
    except Exception:  # bashlex raises ParsingError, NotImplementedError, IndexError ...
        return None
    parsed = _Parsed()
    for tree in trees:
        _walk(tree, parsed, command)
    return parsed


def _walk(node: Any, parsed: _Parsed, source: str) -> None:
    kind = getattr(node, "kind", "")
    if kind == "command":
        words: list[str] = []
        for part in node.parts:
            if part.kind == "word":
                words.append(part.word)
            elif part.kind == "redirect":
                target = getattr(part, "output", None)
                if getattr(target, "kind", "") == "word":
                    parsed.redirects.append((part.type, target.word))
        if words:
            parsed.commands.append(words)
    elif kind == "function":
        name = node.name.word
        body = node.body
        inner = _Parsed()
        _walk(body, inner, source)
        start, end = body.pos
        parsed.functions.append((name, inner.commands, source[start:end]))
        parsed.commands.extend(inner.commands)
        parsed.redirects.extend(inner.redirects)
        parsed.functions.extend(inner.functions)
        return
    for child in _children(node):
        _walk(child, parsed, source)


def _children(node: Any) -> Iterator[Any]:
    for attr in ("parts", "list"):
        for child in getattr(node, attr, None) or []:
            yield child
    for attr in ("command", "output"):
        child = getattr(node, attr, None)
        if child is not None and hasattr(child, "kind"):
            yield child


# --- fallback tokenizer -------------------------------------------------------------------------

_SEPARATORS = frozenset({";", "|", "||", "&", "&&", "(", ")", ";;", "|&", "\n"})
_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", "2>", "1>", "2>>", "1>>"})
_KEYWORDS = frozenset(
    {"{", "}", "do", "done", "then", "else", "elif", "fi", "if", "while", "until", "!", "in"}
)


def _parse_fallback(command: str) -> _Parsed:
    text = command.replace("`", " ; ").replace("$(", " ( ").replace("\n", " ; ")
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        lexer.commenters = ""
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: plain split after cutting at separators
        tokens = re.sub(r"([;&|()<>])", r" \1 ", text).split()
    parsed = _Parsed()
    current: list[str] = []
    pending_redirect: str | None = None
    for tok in tokens:
        if pending_redirect is not None:
            parsed.redirects.append((pending_redirect, tok))
            pending_redirect = None
            continue
        if tok in _REDIRECTS or re.fullmatch(r"\d?>>?|&>>?", tok):
            pending_redirect = tok.lstrip("0123456789") or ">"
            continue
        if tok in _SEPARATORS or set(tok) <= set(";&|()"):
            if current:
                parsed.commands.append(current)
            current = []
            continue
        if not current and tok in _KEYWORDS:
            continue
        current.append(tok)
    if current:
        parsed.commands.append(current)
    return parsed


# --- the checks ---------------------------------------------------------------------------------

_FORK_BOMB_TEXT = re.compile(r"([\w:.\-]+)\s*\(\s*\)\s*\{[^}]*?(?:\1\s*\|\s*\1|\1\s*&)")


def _fork_bomb_reason(name: str) -> str:
    return f"refused: fork bomb (function {name!r} starts copies of itself until the machine runs out of processes)"


def _fork_bomb(name: str, calls: list[list[str]], body: str) -> str | None:
    calls_itself = any(words and os.path.basename(words[0]) == name for words in calls)
    if calls_itself and ("|" in body or "&" in body.replace("&&", "")):
        return _fork_bomb_reason(name)
    return None


def _normalize_target(word: str) -> str:
    """``~``, ``$HOME``, ``//``, ``/./``, ``..``, trailing ``/`` and ``/*`` resolved: "/", "$HOME" or a path."""
    home = os.path.expanduser("~")
    t = word.strip().replace("${HOME}", "$HOME")
    if t == "~" or t.startswith("~/"):
        t = home + t[1:]
    if t == "$HOME" or t.startswith("$HOME/"):
        t = home + t[5:]
    if not t.startswith("/"):
        return t
    while True:
        t = posixpath.normpath(t)
        if t.startswith("//"):
            t = "/" + t.lstrip("/")
        if t.endswith("/*"):
            t = t[:-2] or "/"
            continue
        break
    if home not in ("", "/") and t == home:
        return "$HOME"
    return t


def _dangerous_target(word: str) -> bool:
    return _normalize_target(word) in _SYSTEM_DIRS


def _strip_wrappers(words: list[str]) -> list[str]:
    """Drop leading VAR=value assignments and wrappers like sudo/env/nice/timeout with their options."""
    i = 0
    while i < len(words):
        w = words[i]
        if _ASSIGNMENT.match(w):
            i += 1
            continue
        name = os.path.basename(w)
        if name not in _WRAPPERS:
            break
        value_opts = _WRAPPER_VALUE_OPTS.get(name, set())
        i += 1
        while i < len(words) and (words[i].startswith("-") or _ASSIGNMENT.match(words[i])):
            takes_value = words[i] in value_opts
            i += 2 if takes_value else 1
        if name == "timeout" and i < len(words):
            i += 1  # the duration
        elif name == "chroot" and i < len(words):
            i += 1  # the new root
    return words[i:]


def _split_options(args: list[str]) -> tuple[list[str], list[str]]:
    options, operands, only_operands = [], [], False
    for a in args:
        if only_operands:
            operands.append(a)
        elif a == "--":
            only_operands = True
        elif a.startswith("-") and a != "-":
            options.append(a)
        else:
            operands.append(a)
    return options, operands


def _has_short_flag(options: list[str], letters: str) -> bool:
    return any(not o.startswith("--") and any(c in o[1:] for c in letters) for o in options)


def _check_words(raw_words: list[str], depth: int) -> str | None:
    words = _strip_wrappers(raw_words)
    if not words:
        return None
    name = os.path.basename(words[0])
    args = words[1:]
    options, operands = _split_options(args)
    shown = " ".join(raw_words)
    if len(shown) > 120:
        shown = shown[:117] + "..."

    if name in ("rm", "chmod", "chown", "chgrp") and "--no-preserve-root" in options:
        return f"refused: `{shown}` uses --no-preserve-root (would operate on the whole filesystem)"
    if name == "rm":
        recursive = _has_short_flag(options, "rR") or "--recursive" in options
        bad = [t for t in operands if _dangerous_target(t)]
        if recursive and bad:
            return f"refused: `{shown}` would recursively delete {bad[0]} (a root, home or system directory)"
    if name in ("chmod", "chown", "chgrp"):
        recursive = _has_short_flag(options, "R") or "--recursive" in options
        targets = operands[1:] if operands else []
        bad = [t for t in targets if _dangerous_target(t)]
        if recursive and bad:
            return f"refused: `{shown}` would recursively change {name[2:]} on {bad[0]} (a root, home or system directory)"
    if name == "find" and operands and _dangerous_target(operands[0]):
        if "-delete" in args or any(a in ("rm", "/bin/rm") for a in args):
            return f"refused: `{shown}` would delete files under {operands[0]}"
    if name == "dd":
        for a in args:
            if a.startswith("of=") and _DEVICE.match(a[3:]):
                return f"refused: `{shown}` writes raw data onto the block device {a[3:]}"
    if name.startswith("mkfs") or name in _DISK_TOOLS:
        devices = [a for a in args if _DEVICE.match(a)]
        if devices or name.startswith("mkfs") and not operands:
            target = devices[0] if devices else "a device"
            return f"refused: `{shown}` would format or wipe {target}"
    if name == "tee":
        devices = [a for a in operands if _DEVICE.match(a)]
        if devices:
            return f"refused: `{shown}` writes onto the block device {devices[0]}"
    if name in _POWER or (name in ("init", "telinit") and operands[:1] in (["0"], ["6"])):
        return f"refused: `{shown}` would shut down or restart this machine (do that yourself if you mean it)"
    if name == "systemctl" and any(a in _SYSTEMCTL_POWER for a in operands):
        return f"refused: `{shown}` would shut down, restart or suspend this machine"
    if name == "kill" and ("-1" in operands or (len(args) >= 2 and args[-1] == "-1")):
        return f"refused: `{shown}` would kill every process you own (pid -1)"
    if name in _SHELLS:
        script = _shell_script_arg(args)
        if script is not None:
            return _check(script, depth + 1)
    if name == "eval" and args:
        return _check(" ".join(args), depth + 1)
    return None


def _shell_script_arg(args: list[str]) -> str | None:
    """The script of ``bash -c SCRIPT`` / ``sh -ec SCRIPT``."""
    for i, a in enumerate(args):
        if a.startswith("-") and not a.startswith("--") and "c" in a[1:]:
            return args[i + 1] if i + 1 < len(args) else None
    return None
