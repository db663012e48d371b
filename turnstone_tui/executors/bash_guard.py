"""The bash guard: commands refused at prepare time, with the reason why. It fails closed.

This is a guard against accidents and obvious abuse, not a security boundary: the OS sandbox
(``turnstone_tui.sandbox``) is the boundary, and every bash call is still shown for approval.

How a command is judged: ``bashlex`` parses it; every simple command (also inside functions, loops,
pipelines, ``$(...)``, ``<(...)`` (also inside ``${...}`` and unquoted heredoc bodies, which bashlex
leaves unparsed), and the strings given to ``bash -c``, ``eval``, ``alias``,
``trap``, ``env -S``, ``watch``, ``su -c``, heredocs and here-strings fed to a shell) is checked as a
list of words whose text is known only as far as quoting allows (``shell_words.read_word``).
What cannot be analysed is refused:

- a program name computed at run time (``$X``, ``$'\\x72m'``, ``rm${IFS}-rf``) or given as a pattern
  (``/bin/[r]m``, ``{rm,-rf,/}``);
- a script fed to a shell or an interpreter through a pipe or a file (``base64 -d | sh``,
  ``curl ... | python3``), ``eval`` / ``bash -c`` of a string computed at run time;
- wrappers seen through also when their options come first or clustered (``bash -o errexit -c``,
  ``su USER -c``, ``script -qc``, ``find -L``), and ``coproc``, ``unshare``, ``nsenter``, ``setpriv``,
  ``systemd-run``, ``parallel``, ``at`` / ``batch`` (which read a script from stdin);
- nesting deeper than ``MAX_DEPTH`` levels of ``bash -c`` / ``eval`` (deeper is refused, not allowed);
- a command line longer than ``MAX_COMMAND_CHARS``;
- a line bashlex cannot parse (``[[ ]]``, ``$(( ))``, ``case`` ...) that runs one of the programs
  the checks below are about (it is then cut into commands by a tokenizer and checked as well).

Refused families: recursive ``rm`` / ``chmod`` / ``chown`` / ``chgrp`` on ``/``, ``~`` or a system
directory (also via globs, ``$X/*`` whose ``$X`` may be empty, ``cd / && rm -rf *``, ``xargs`` with
operands from stdin, ``find -exec`` / ``-delete``), ``--no-preserve-root``; fork bombs; ``mkfs``,
``dd of=``, redirects, ``tee``, ``truncate``, ``cp`` / ``mv`` / ``install`` / ``rsync`` / ``ln`` destinations
or ``find -fprint`` onto block devices; ``mv`` of ``~`` or a system directory and ``rsync --delete`` into one; ``/dev/mem``, ``/proc/sysrq-trigger``; kills of
every process (``kill -1``, ``killall5``); shutdown / reboot / suspend; inline interpreter code
(``python3 -c``, ``perl -e``, ``node -e``, ``awk``) that runs commands, deletes files or kills.
Text that only mentions such commands (``echo 'rm -rf /'``, heredoc data given to ``cat``) passes.

The work is linear in the command length (bashlex plus one pass over each word, each nested string
parsed once per level, at most ``MAX_DEPTH`` levels). Callers run it off the event loop.
"""

from __future__ import annotations

import contextvars
import fnmatch
import os
import posixpath
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from .shell_words import Word, embedded_scripts, expand_braces, has_substitution, literal, read_word

MAX_COMMAND_CHARS = 100_000
MAX_DEPTH = 4

_DEVICE = re.compile(
    r"^/dev/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk|mapper/|md\d|md/|dm-\d|sr\d|loop\d|"
    r"mtdblock|root$|block/|mem$|kmem$|port$)|^/proc/sysrq-trigger$"
)
_SYSTEM_DIRS = frozenset(
    {
        "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/opt",
        "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/usr", "/var", "/usr/bin", "/usr/lib",
        "/usr/local", "/usr/sbin", "/usr/share", "/var/lib", "/mnt", "/media", "$HOME",
    }
)  # fmt: skip
# Wrappers that run the rest of their arguments as a command; their options that take a value.
_WRAPPERS: dict[str, frozenset[str]] = {
    name: frozenset(opts)
    for name, opts in {
        "sudo": {"-u", "-g", "-U", "-C", "-h", "-p", "-r", "-t", "-D", "-R"},
        "doas": {"-u", "-C"},
        "pkexec": {"--user"},
        "env": {"-u", "-C", "--unset", "--chdir"},
        "nice": {"-n"},
        "nohup": set(),
        "time": {"-f", "-o"},
        "command": set(),
        "builtin": set(),
        "exec": {"-a"},
        "timeout": {"-s", "-k", "--signal", "--kill-after"},
        "stdbuf": {"-i", "-o", "-e"},
        "ionice": {"-c", "-n", "-p"},
        "chrt": set(),
        "taskset": set(),
        "setsid": set(),
        "busybox": set(),
        "chroot": {"--userspec", "--groups"},
        "unbuffer": set(),
        "strace": {"-o", "-e", "-p", "-s", "-u", "-P"},
        "ltrace": {"-o", "-e", "-p", "-s", "-u"},
        "caffeinate": {"-t", "-w"},
        "xargs": {"-I", "-n", "-P", "-d", "-E", "-L", "-s", "-a", "--max-args", "--max-procs", "--delimiter"},
        "firejail": set(),
        "torsocks": set(),
        "proxychains": {"-f"},
        "flock": {"-w", "-E", "--timeout", "--conflict-exit-code"},
        "su": {"-s", "-g", "-G", "--shell", "--group"},
        "runuser": {"-u", "-g", "-G", "-s", "--user", "--group", "--shell"},
        "script": {"-t", "-T", "-B", "-O", "-I", "-E"},
        "watch": {"-n", "-d", "--interval", "-x"},
        "coproc": set(),
        "unshare": {"-S", "-G", "--setuid", "--setgid", "-R", "-w", "--root", "--wd"},
        "nsenter": {"-t", "--target", "-S", "-G", "--setuid", "--setgid", "-r", "-w"},
        "setpriv": set(),
        "systemd-run": {
            "-p",
            "--property",
            "-u",
            "--unit",
            "-E",
            "--setenv",
            "-M",
            "--machine",
            "--uid",
            "--gid",
            "--nice",
            "--working-directory",
            "--description",
            "--slice",
        },
        "parallel": {"-j", "--jobs", "-S", "--sshlogin", "--delay", "--timeout", "-d", "--delimiter"},
    }.items()
}
# Wrappers whose first operand is not part of the command (a duration, a new root, a lock file ...).
_WRAPPER_SKIPS_OPERAND = frozenset({"timeout", "chroot", "flock", "taskset", "chrt"})
# Wrappers that take the command as a string (``-c STRING``); watch always joins its arguments into one.
_STRING_COMMAND_OPTS = {"su": ("-c", "--command"), "runuser": ("-c", "--command"), "script": ("-c", "--command"),
                        "flock": ("-c", "--command"), "env": ("-S", "--split-string")}  # fmt: skip
_DISK_TOOLS = frozenset(
    {"mkswap", "wipefs", "shred", "fdisk", "sfdisk", "cfdisk", "gdisk", "sgdisk", "parted",
     "blkdiscard", "mke2fs", "mkdosfs", "mkntfs", "badblocks", "hdparm", "cryptsetup"}
)  # fmt: skip
_POWER = frozenset({"shutdown", "reboot", "halt", "poweroff", "kexec", "pm-suspend", "pm-hibernate"})
_CTL_POWER = frozenset(
    {"poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "hybrid-sleep", "rescue", "emergency",
     "soft-reboot"}
)  # fmt: skip
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "fish", "ash", "csh", "tcsh", "rbash"})
_INTERPRETER = re.compile(
    r"^(python[\d.]*|pypy[\d.]*|perl[\d.]*|ruby[\d.]*|node|nodejs|php[\d.]*|lua[\d.]*|luajit|tclsh[\d.]*|"
    r"Rscript|osascript|jshell|irb|awk|gawk|mawk|nawk|busybox-awk)$"
)
_AWK = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk"})
# Options that take inline program text, per interpreter family.
_INLINE_OPTS = {
    "python": ("-c",), "pypy": ("-c",), "perl": ("-e", "-E"), "ruby": ("-e",), "node": ("-e", "--eval", "-p", "--print"),
    "nodejs": ("-e", "--eval", "-p", "--print"), "php": ("-r",), "lua": ("-e",), "luajit": ("-e",),
    "Rscript": ("-e",), "osascript": ("-e",), "tclsh": (),
}  # fmt: skip
# Inline code that runs commands, deletes files or signals processes (any of these languages).
_RISKY_CODE = re.compile(
    r"\b(os\s*\.\s*(system|popen|exec\w*|spawn\w*|remove\w*|unlink|rmdir|kill\w*|fork\w*|posix_spawn\w*)|"
    r"subprocess|rmtree|shutil|pty|ctypes|__import__|importlib|eval|exec|execSync|spawnSync|system|popen|"
    r"spawn|child_process|unlink\w*|rmdir\w*|rm_r|rm_rf|rm_f|remove_dir\w*|rimraf|FileUtils|kill|qx|"
    r"getline|fork|Runtime|ProcessBuilder|do\s+shell\s+script)\b|`|\|\s*\""
)
# Programs a line bashlex cannot parse must not run: the tokenizer fallback refuses them.
_FALLBACK_RISKY = (
    frozenset({"rm", "chmod", "chown", "chgrp", "dd", "eval", "xargs", "kill", "pkill", "killall", "killall5",
               "init", "telinit", "systemctl", "loginctl", "alias", "source", ".", "trap", "find", "tee"})
    | _DISK_TOOLS | _POWER | _SHELLS
)  # fmt: skip
# Bash evaluates a variable's value as arithmetic in let / declare -i / (( )) / ${a[x]} ..., and
# an array subscript in it runs its $(...): x=a[\$\(cmd\)]; let y=x runs cmd. The literal values
# of assignments and of these builtins' arguments are checked for such commands.
_ARITHMETIC = frozenset({"let", "declare", "typeset", "local", "export", "readonly"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
_UNKNOWN = "<unknown>"


_COLLECT: contextvars.ContextVar[list[tuple[str | None, ...]] | None] = contextvars.ContextVar(
    "bash_guard_collect", default=None
)


def nested_commands(command: str) -> tuple[tuple[str | None, ...], ...] | None:
    """The commands ``command`` runs from strings (``bash -c``, ``eval``, ``su -c``, ``env -S``,
    ``watch``, ``find -exec``, a heredoc or here-string fed to a shell, ``alias``, ``trap``): each as
    its words after its wrappers (None: known only at run time). None when the guard refuses the line."""
    if len(command) > MAX_COMMAND_CHARS:
        return None
    sink: list[tuple[str | None, ...]] = []
    token = _COLLECT.set(sink)
    try:
        _check_script(command, 0)
    except (_Refused, RecursionError):
        return None
    finally:
        _COLLECT.reset(token)
    return tuple(sink)


class _Refused(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def check_command(command: str) -> str | None:
    """None when the command may run, else a clear reason why it is refused (starts with "refused")."""
    if len(command) > MAX_COMMAND_CHARS:
        return (
            f"refused: the command is {len(command):,} characters long (the limit is {MAX_COMMAND_CHARS:,}); "
            "write the script to a file with write_file and run that file"
        )
    try:
        _check_script(command, 0)
    except _Refused as refused:
        return refused.reason
    except RecursionError:
        return "refused: the command is nested too deeply to be checked"
    return None


# --- a parsed simple command and what surrounds it -----------------------------------------------


@dataclass(slots=True)
class _Simple:
    words: list[Word]
    redirects: list[tuple[str, Word]] = field(default_factory=list)
    stdin_script: Word | None = None  # heredoc body or here-string fed to the command
    stdin_from_file: bool = False  # `< file` or `< <(...)`
    piped: bool = False  # stdin comes from a pipe


@dataclass(slots=True)
class _State:
    depth: int
    cwd: str | None = None  # None: the session's directory; "<unknown>": decided at run time
    fallback: bool = False
    original: str = ""  # the text as written (heredoc delimiters still quoted), same offsets as the source


def _shown(words: list[Word]) -> str:
    text = " ".join(w.raw for w in words)
    return text if len(text) <= 120 else text[:117] + "..."


def _check_script(text: str, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise _Refused(
            f"refused: commands nested more than {MAX_DEPTH} levels deep (bash -c, eval, ...) cannot be checked; "
            "run them directly"
        )
    # Imported here: bashlex builds its parser tables on import (~0.3 s of CPU), which start-up
    # should not pay; the app's runtime warms it in a thread once the session is ready.
    import bashlex  # type: ignore[import-untyped]

    source = _unquote_heredoc_delimiters(text)
    state = _State(depth, original=text)
    try:
        trees = bashlex.parse(source)
    except RecursionError:
        raise
    except Exception as exc:  # bashlex raises ParsingError, NotImplementedError, IndexError ...
        _check_fallback(text, state, exc)
        return
    for tree in trees:
        _walk(tree, source, state, piped=False)


_QUOTED_HEREDOC = re.compile(r"(?<!<)<<(?!<)(-?)[ \t]*(?:'([^'\n]+)'|\"([^\"\n]+)\"|\\(\w+))")


def _unquote_heredoc_delimiters(text: str) -> str:
    """``<<'EOF'`` -> ``<<EOF`` padded to the same length (bashlex cannot parse quoted delimiters)."""

    def plain(m: re.Match[str]) -> str:
        delimiter = m.group(2) or m.group(3) or m.group(4)
        return f"<<{m.group(1)}{delimiter}".ljust(len(m.group(0)))

    return _QUOTED_HEREDOC.sub(plain, text) if "<<" in text else text


# --- walking bashlex's tree ----------------------------------------------------------------------


def _word(node: Any, source: str) -> Word:
    start, end = node.pos
    return read_word(source[start:end])


def _walk(node: Any, source: str, state: _State, piped: bool) -> None:
    kind = getattr(node, "kind", "")
    if kind == "command":
        _command(node, source, state, piped)
        return
    if kind == "pipeline":
        index = 0
        for part in node.parts:
            if getattr(part, "kind", "") == "pipe":
                continue
            _walk(part, source, state, piped or index > 0)
            index += 1
        return
    if kind == "function":
        _check_fork_bomb(node, source)
        _walk(node.body, source, state, piped)
        return
    if kind == "compound":
        for part in node.list:
            _walk(part, source, state, piped)
        for redirect in getattr(node, "redirects", None) or []:
            _redirect_target(redirect, source, state)
        return
    if kind in ("word", "assignment"):
        _substitutions(node, source, state)
        return
    for child in getattr(node, "parts", None) or []:
        _walk(child, source, state, piped)


def _substitutions(node: Any, source: str, state: _State) -> None:
    """Commands inside ``$(...)``, backquotes and ``<(...)`` of a word are checked like any other,
    also those bashlex leaves unparsed inside ``${...}`` and ``~...`` (``${x:-$(cmd)}``)."""
    end = node.pos[1] if getattr(node, "kind", "") == "word" else 0  # bashlex cuts ~$(a /) at the /
    for part in getattr(node, "parts", None) or []:
        kind = getattr(part, "kind", "")
        if kind in ("commandsubstitution", "processsubstitution"):
            _walk(part.command, source, state, piped=False)
        elif kind in ("parameter", "tilde"):
            _check_embedded(source[part.pos[0] : max(part.pos[1], end)], state)
        else:
            _substitutions(part, source, state)


def _check_embedded(text: str, state: _State) -> None:
    """Check the commands of substitutions bashlex did not parse (see ``embedded_scripts``)."""
    if has_substitution(text):
        for script in embedded_scripts(text):
            _check_script(script, state.depth + 1)


def _quoted_heredoc(redirect: Any, state: _State) -> bool:
    """Was the heredoc's delimiter quoted (``<<'EOF'``: the body is not expanded)? Unknown: no."""
    output = getattr(redirect, "output", None)
    if output is None or not state.original:
        return False
    region = state.original[redirect.pos[0] : output.pos[1]]
    return any(q in region for q in "'\"\\")


def _redirect_target(node: Any, source: str, state: _State) -> tuple[str, Word] | None:
    target = getattr(node, "output", None)
    if getattr(target, "kind", "") != "word":
        return None
    _substitutions(target, source, state)
    word = _word(target, source)
    _check_redirect(node.type, word)
    return node.type, word


def _command(node: Any, source: str, state: _State, piped: bool) -> None:
    simple = _Simple(words=[], piped=piped)
    for part in node.parts:
        kind = getattr(part, "kind", "")
        if kind == "word":
            _substitutions(part, source, state)
            simple.words.append(_word(part, source))
        elif kind == "assignment":
            _substitutions(part, source, state)
            _check_embedded(_word(part, source).value.partition("=")[2], state)  # see _ARITHMETIC
        elif kind == "redirect":
            heredoc = getattr(part, "heredoc", None)
            if heredoc is not None:
                body = heredoc.value.rsplit("\n", 1)[0] if "\n" in heredoc.value else ""
                simple.stdin_script = literal(body)
                if not _quoted_heredoc(part, state):  # bash runs the $(...) of an unquoted body
                    _check_embedded(body, state)
                continue
            found = _redirect_target(part, source, state)
            if found is None:
                continue
            op, word = found
            if op == "<<<":
                simple.stdin_script = word
            elif op == "<":
                simple.stdin_from_file = True
            simple.redirects.append(found)
    if simple.words:
        _check_simple(simple, state)


def _check_fork_bomb(node: Any, source: str) -> None:
    name = node.name.word
    calls_itself = spreads = False
    stack = [node.body]
    while stack:
        current = stack.pop()
        kind = getattr(current, "kind", "")
        if kind == "pipe" or (kind == "operator" and current.op == "&"):
            spreads = True
        if kind == "command":
            words = [p for p in current.parts if getattr(p, "kind", "") == "word"]
            if words and posixpath.basename(_word(words[0], source).value) == name:
                calls_itself = True
        stack.extend(getattr(current, "parts", None) or [])
        stack.extend(getattr(current, "list", None) or [])
    if calls_itself and spreads:
        raise _Refused(_fork_bomb_reason(name))


def _fork_bomb_reason(name: str) -> str:
    return f"refused: fork bomb (function {name!r} starts copies of itself until the machine runs out of processes)"


# --- the fallback when bashlex cannot parse the line ---------------------------------------------

_SEPARATORS = frozenset({";", "|", "||", "&", "&&", "(", ")", ";;", "|&", ";&", ";;&"})
_KEYWORDS = frozenset(
    {
        "{",
        "}",
        "do",
        "done",
        "then",
        "else",
        "elif",
        "fi",
        "if",
        "while",
        "until",
        "!",
        "in",
        "[[",
        "]]",
        "esac",
        "coproc",
    }
)
_HEREDOC_START = re.compile(r"(?<!<)<<(?!<)-?[ \t]*(['\"\\]?)(\w+)['\"]?")
_FUNCTION_DEF = re.compile(r"([\w:.\-]+)[ \t]*\([ \t]*\)[ \t]*\{")


def _drop_heredoc_bodies(text: str) -> tuple[str, list[str]]:
    """The text without heredoc bodies, and the lines of the unquoted bodies (bash expands those)."""
    lines = text.split("\n")
    out: list[str] = []
    expanded: list[str] = []
    pending: list[tuple[str, bool]] = []
    for line in lines:
        if pending:
            if line.strip() == pending[0][0]:
                pending.pop(0)
            elif not pending[0][1]:
                expanded.append(line)
            continue
        out.append(line)
        pending.extend((m.group(2), bool(m.group(1))) for m in _HEREDOC_START.finditer(line))
    return "\n".join(out), expanded


def _check_fallback(text: str, state: _State, error: Exception) -> None:
    state.fallback = True
    text, expanded = _drop_heredoc_bodies(text)
    _check_embedded("\n".join(expanded), state)
    for m in _FUNCTION_DEF.finditer(text):
        name = m.group(1)
        end = text.find("}", m.end())
        body = text[m.end() : end if end >= 0 else len(text)]
        if re.search(rf"(^|[^\w]){re.escape(name)}[ \t]*(\||&(?!&))", body):
            raise _Refused(_fork_bomb_reason(name))
    flat = text.replace("`", " ; ").replace("$(", " ( ").replace("<(", " ( ").replace("\n", " ; ")
    try:
        lexer = shlex.shlex(flat, posix=False, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        lexer.commenters = ""
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: a plain split after cutting at separators
        tokens = re.sub(r"([;&|()<>])", r" \1 ", flat).split()
    simple = _Simple(words=[])
    pending_redirect: str | None = None
    piped = False
    for tok in tokens:
        if pending_redirect is not None:
            word = read_word(tok)
            _check_redirect(pending_redirect, word)
            simple.redirects.append((pending_redirect, word))
            pending_redirect = None
            continue
        if re.fullmatch(r"\d?(>>?|>\||<>|<<<?|<)|&>>?", tok):
            pending_redirect = tok.lstrip("0123456789")
            continue
        if tok in _SEPARATORS or set(tok) <= set(";&|()") or tok in ("{", "}"):
            if simple.words:
                _check_simple(simple, state, parse_error=error)
            piped = tok in ("|", "|&")
            simple = _Simple(words=[], piped=piped)
            continue
        if not simple.words and (tok in _KEYWORDS or _ASSIGNMENT.match(tok)):
            continue
        simple.words.append(read_word(tok))
    if simple.words:
        _check_simple(simple, state, parse_error=error)


# --- the checks on one simple command ------------------------------------------------------------


def _check_redirect(op: str, word: Word) -> None:
    if op not in _WRITE_REDIRECTS:
        return
    targets = expand_braces(word.value) if word.pattern else [word.value]
    for target in targets:
        if _DEVICE.match(target) or (word.pattern and target.startswith("/dev/")):
            raise _Refused(
                f"refused: writing output onto {target} ({op} {word.raw}) would destroy a disk or crash the machine"
            )


def _is_option(word: Word) -> bool:
    return word.value.startswith("-") and word.value != "-"


def _strip_wrappers(words: list[Word], state: _State) -> tuple[list[Word], bool]:
    """Drop assignments and wrappers (sudo, env, timeout, xargs ...). Returns (command, operands unknown)."""
    unknown_operands = False
    i = 0
    while i < len(words):
        word = words[i]
        if word.literal and _ASSIGNMENT.match(word.value):
            i += 1
            continue
        if not word.literal:
            break
        name = posixpath.basename(word.value)
        if name not in _WRAPPERS:
            break
        value_opts = _WRAPPERS[name]
        string_opts = _STRING_COMMAND_OPTS.get(name, ())
        i += 1
        while i < len(words) and (
            _is_option(words[i]) or (name == "env" and _ASSIGNMENT.match(words[i].value))
        ):
            opt = words[i].value
            if opt == "--":
                i += 1
                break
            for string_opt in string_opts:
                inline = _string_option(opt, string_opt)
                if inline is not None:
                    script = inline if inline else (words[i + 1].value if i + 1 < len(words) else "")
                    dynamic = False if inline else (i + 1 < len(words) and words[i + 1].dynamic)
                    rest = " ".join(w.raw for w in words[i + (1 if inline else 2) :])
                    _check_string(f"{script} {rest}".strip(), dynamic, state, f"{name} {string_opt}")
                    return [], False
            i += 2 if opt in value_opts else 1
        if name in ("su", "runuser"):
            # su [-] USER -c CMD: su takes its options after the user too
            for k in range(i, len(words)):
                for string_opt in string_opts:
                    inline = _string_option(words[k].value, string_opt)
                    if inline is not None:
                        nxt = words[k + 1] if k + 1 < len(words) else literal("")
                        dynamic = not inline and nxt.dynamic
                        _check_string(inline or nxt.value, dynamic, state, f"{name} {string_opt}")
                        return [], False
            return [], False
            return [], False
        if name in _WRAPPER_SKIPS_OPERAND and i < len(words):
            i += 1
            if name == "flock" and i + 1 < len(words) and words[i].value in ("-c", "--command"):
                _check_string(words[i + 1].value, words[i + 1].dynamic, state, "flock -c")
                return [], False
        if name == "watch":  # watch joins its arguments (their values) and gives them to sh -c
            _check_string(" ".join(w.raw if w.dynamic else w.value for w in words[i:]), False, state, "watch")
            return [], False
        if name == "busybox" and i < len(words) and words[i].value in ("sh", "ash"):
            break
        if name in ("xargs", "parallel"):
            unknown_operands = True
    return words[i:], unknown_operands


def _string_option(opt: str, string_opt: str) -> str | None:
    """The inline command of ``opt`` if it is ``string_opt`` ("" when the command is the next word):
    ``-c``, ``-cCMD``, ``-qc`` (a cluster ending in it), ``--command=CMD``; else None."""
    if opt == string_opt:
        return ""
    if string_opt.startswith("--"):
        return opt[len(string_opt) + 1 :] if opt.startswith(string_opt + "=") else None
    if opt.startswith("-") and not opt.startswith("--") and string_opt[1] in opt[1:]:
        return opt[opt.index(string_opt[1], 1) + 1 :]
    return None


def _check_string(script: str, dynamic: bool, state: _State, what: str) -> None:
    if dynamic:
        raise _Refused(
            f"refused: `{what}` runs a command string that is only known at run time, so it cannot be checked; "
            "write the command out"
        )
    _check_script(script, state.depth + 1)


def _target_danger(word: Word, state: _State) -> str | None:
    """Why deleting/changing ``word`` recursively is dangerous, or None."""
    if word.dynamic and not word.value.strip("/ "):
        return f"{word.raw} (only known at run time; it may be empty or /)"
    home = os.path.expanduser("~")
    for candidate in expand_braces(word.value) if word.pattern else [word.value]:
        target = candidate
        if target.startswith("~"):
            target = home + target[1:] if target == "~" or target.startswith("~/") else "/home"
        if not target.startswith("/"):
            if state.cwd == _UNKNOWN:
                if target.strip("./*") == "" or target.startswith(".."):
                    return f"{word.raw} (in a directory chosen at run time)"
                continue
            if state.cwd is None:
                continue
            target = posixpath.join(state.cwd, target)
        normal = _normalize(target, home)
        if normal in _SYSTEM_DIRS:
            return word.raw if normal == candidate else f"{word.raw} ({normal})"
        if word.pattern and any(fnmatch.fnmatchcase(d, normal) for d in _SYSTEM_DIRS if d.startswith("/")):
            return f"{word.raw} (the pattern matches a system directory)"
        if word.pattern and home not in ("", "/") and fnmatch.fnmatchcase(home, normal):
            return f"{word.raw} (the pattern matches your home directory)"
    return None


def _normalize(path: str, home: str) -> str:
    t = path
    while True:
        t = posixpath.normpath(t)
        if t.startswith("//"):
            t = "/" + t.lstrip("/")
        if t.endswith("/*"):
            t = t[:-2] or "/"
            continue
        break
    if home not in ("", "/") and t == posixpath.normpath(home):
        return "$HOME"
    return t


def _split_options(args: list[Word]) -> tuple[list[str], list[Word]]:
    options: list[str] = []
    operands: list[Word] = []
    only_operands = False
    for a in args:
        if only_operands:
            operands.append(a)
        elif a.value == "--":
            only_operands = True
        elif _is_option(a):
            options.append(a.value)
        else:
            operands.append(a)
    return options, operands


def _has_short_flag(options: list[str], letters: str) -> bool:
    return any(not o.startswith("--") and any(c in o[1:] for c in letters) for o in options)


def _check_simple(simple: _Simple, state: _State, parse_error: Exception | None = None) -> None:
    words, unknown_operands = _strip_wrappers(simple.words, state)
    if not words:
        return
    sink = _COLLECT.get()
    if sink is not None and state.depth > 0:
        sink.append(tuple(w.value if w.literal else None for w in words))
    first = words[0]
    shown = _shown(simple.words)
    if first.dynamic:
        raise _Refused(
            f"refused: in `{shown}` the program to run ({first.raw}) is only known at run time, so the command "
            "cannot be checked; write the program name out"
        )
    if first.pattern:
        raise _Refused(
            f"refused: in `{shown}` the program name {first.raw} is a pattern (glob or braces), so the command "
            "cannot be checked; write the program name out"
        )
    name = posixpath.basename(first.value)
    args = words[1:]
    if parse_error is not None and (name in _FALLBACK_RISKY or name.startswith("mkfs")):
        detail = str(parse_error).split("\n")[0][:80] or type(parse_error).__name__
        raise _Refused(
            f"refused: `{shown}` runs {name}, but the command line could not be parsed fully ({detail}), so it "
            "cannot be checked; split it into simpler commands (without [[ ]], $(( )), case ...)"
        )
    if name in ("cd", "pushd"):
        _track_cd(args, state)
        return
    _check_program(name, args, simple, state, shown, unknown_operands)


def _track_cd(args: list[Word], state: _State) -> None:
    operands = [a for a in args if not _is_option(a)]
    target = operands[0] if operands else literal("~")
    if not target.literal:
        state.cwd = _UNKNOWN
        return
    value = target.value
    if value == "~" or value.startswith("~/"):
        value = os.path.expanduser("~") + value[1:]
    if value.startswith("/"):
        state.cwd = posixpath.normpath(value)
    elif state.cwd not in (None, _UNKNOWN):
        state.cwd = posixpath.normpath(posixpath.join(state.cwd, value))
    elif value == "-" or value.startswith(".."):
        state.cwd = _UNKNOWN


def _check_program(
    name: str, args: list[Word], simple: _Simple, state: _State, shown: str, unknown_operands: bool
) -> None:
    options, operands = _split_options(args)
    if name in ("rm", "chmod", "chown", "chgrp") and "--no-preserve-root" in options:
        raise _Refused(f"refused: `{shown}` uses --no-preserve-root (would operate on the whole filesystem)")
    if name in ("rm", "chmod", "chown", "chgrp"):
        letters = "rR" if name == "rm" else "R"
        recursive = _has_short_flag(options, letters) or "--recursive" in options
        targets = operands if name == "rm" else operands[1:]
        verb = "delete" if name == "rm" else f"change {name[2:]} on"
        if recursive and unknown_operands:
            raise _Refused(
                f"refused: `{shown}` would recursively {verb} paths read from input (xargs), which cannot be checked"
            )
        for target in targets if recursive else []:
            danger = _target_danger(target, state)
            if danger:
                raise _Refused(
                    f"refused: `{shown}` would recursively {verb} {danger}: a root, home or system directory"
                )
    elif name == "find":
        _check_find(args, state, shown)
    elif name == "dd":
        for a in args:
            if a.value.startswith("of=") and _DEVICE.match(a.value[3:]):
                raise _Refused(f"refused: `{shown}` writes raw data onto the block device {a.value[3:]}")
    elif name.startswith("mkfs") or name in _DISK_TOOLS:
        devices = [a.value for a in operands if _DEVICE.match(a.value) or a.dynamic]
        if devices or (name.startswith("mkfs") and not operands):
            target = devices[0] if devices and devices[0] else "a device"
            raise _Refused(f"refused: `{shown}` would format or wipe {target}")
    elif name == "tee" or name == "truncate":
        for a in operands:
            _check_redirect(">", a)
    elif name in ("cp", "mv", "install", "rsync", "ln") and len(operands) >= 2:
        _check_redirect(">", operands[-1])  # the destination (cp /dev/zero /dev/sda)
        if name == "mv":
            for source in operands[:-1]:
                danger = _target_danger(source, state)
                if danger:
                    raise _Refused(
                        f"refused: `{shown}` would move away {danger}: a root, home or system directory"
                    )
        if name == "rsync" and any(o.startswith("--delete") or o == "--remove-source-files" for o in options):
            danger = _target_danger(operands[-1], state)
            if danger:
                raise _Refused(f"refused: `{shown}` would delete what is not in the source from {danger}")
    elif name in _POWER or (
        name in ("init", "telinit") and [o.value for o in operands[:1]] in (["0"], ["6"])
    ):
        raise _Refused(
            f"refused: `{shown}` would shut down or restart this machine (do that yourself if you mean it)"
        )
    elif name in ("systemctl", "loginctl") and any(a.value in _CTL_POWER for a in operands):
        raise _Refused(f"refused: `{shown}` would shut down, restart or suspend this machine")
    elif name == "kill":
        _check_kill(args, shown)
    elif name == "killall5" or (name in ("pkill", "killall") and _kills_everything(args)):
        raise _Refused(f"refused: `{shown}` would kill every process")
    elif name in _SHELLS:
        _check_shell(name, args, simple, state, shown)
    elif name in ("at", "batch") and not any(a.value.startswith(("-f", "-l", "-r", "-c")) for a in args):
        _check_stdin_program(name, simple, shown, lambda script: _check_script(script, state.depth + 1))
    elif name in ("source", ".") and operands:
        _check_script_operand(operands[0], name, shown)
    elif name == "eval" and args:
        _check_string(" ".join(a.value for a in args), any(a.dynamic for a in args), state, "eval")
    elif name == "alias":
        for a in operands:
            if "=" in a.value:
                _check_string(a.value.split("=", 1)[1], a.dynamic, state, "alias")
    elif name in _ARITHMETIC:
        for a in args:
            _check_embedded(a.value, state)
    elif name == "trap" and operands:
        _check_script(operands[0].value, state.depth + 1)
    elif _INTERPRETER.match(name):
        _check_interpreter(name, args, simple, shown)


def _check_find(args: list[Word], state: _State, shown: str) -> None:
    roots: list[Word] = []
    i = 0
    while i < len(args) and (args[i].value in ("-H", "-L", "-P", "-D") or args[i].value[:2] == "-O"):
        i += 2 if args[i].value == "-D" else 1  # options before the starting points
    while i < len(args) and not (args[i].value.startswith(("-", "(", "!")) and args[i].value != "-"):
        roots.append(args[i])
        i += 1
    roots = roots or [literal(".")]
    expression = args[i:]
    dangerous = [d for d in (_target_danger(r, state) for r in roots) if d]
    if dangerous and any(a.value == "-delete" for a in expression):
        raise _Refused(f"refused: `{shown}` would delete files under {dangerous[0]}")
    for k, a in enumerate(expression[:-1]):
        if a.value in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            _check_redirect(">", expression[k + 1])
    j = 0
    while j < len(expression):
        if expression[j].value in ("-exec", "-execdir", "-ok", "-okdir"):
            end = j + 1
            while end < len(expression) and expression[end].value not in (";", "+"):
                end += 1
            sub = expression[j + 1 : end]
            if (
                dangerous
                and sub
                and posixpath.basename(sub[0].value) in ("rm", "unlink", "shred", "rmdir", "truncate")
            ):
                raise _Refused(f"refused: `{shown}` would delete files under {dangerous[0]}")
            for root in roots:
                replaced = [
                    Word(w.raw.replace("{}", root.raw), w.value.replace("{}", root.value), w.dynamic or root.dynamic,
                         w.pattern or root.pattern) if "{}" in w.value else w
                    for w in sub
                ]  # fmt: skip
                if replaced:
                    _check_simple(_Simple(words=replaced), _State(state.depth + 1, state.cwd))
            j = end
        j += 1


def _check_kill(args: list[Word], shown: str) -> None:
    rest = list(args)
    if rest and rest[0].value in ("-s", "-n") and len(rest) > 1:
        rest = rest[2:]
    elif rest and _is_option(rest[0]) and rest[0].value != "--":
        rest = rest[1:]  # the signal (-9, -KILL, -1 = SIGHUP)
    targets = [a.value for a in rest if a.value != "--"]
    if "-1" in targets:
        raise _Refused(f"refused: `{shown}` would kill every process you own (pid -1)")
    if "1" in targets:
        raise _Refused(f"refused: `{shown}` would signal init (pid 1)")


_PKILL_VALUE_OPTS = frozenset({"-u", "-U", "-g", "-G", "-t", "-P", "-s", "-F", "--signal", "--user", "--uid"})


def _kills_everything(args: list[Word]) -> bool:
    """pkill / killall with a pattern matching every process, or only a user / group selection."""
    patterns: list[str] = []
    selects_owner = False
    i = 0
    while i < len(args):
        value = args[i].value
        if _is_option(args[i]):
            selects_owner = selects_owner or value in ("-u", "-U", "-g", "-G", "--user", "--uid")
            i += 2 if value in _PKILL_VALUE_OPTS else 1
            continue
        patterns.append(value)
        i += 1
    if any(p in ("", ".", ".*", "^", "$", "^.*$") for p in patterns):
        return True
    return not patterns and selects_owner


_SHELL_VALUE_OPTS = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})


def _script_option(args: list[Word], letter: str) -> int | None:
    """Index of the short option cluster holding ``letter`` (``-c``, ``-ec``) before the first operand
    (``-o errexit``, ``-O extglob``, ``--rcfile F`` and their values are skipped)."""
    i = 0
    while i < len(args):
        a = args[i]
        if not (_is_option(a) or a.value.startswith("+")) or a.value == "--":
            return None
        if a.value in _SHELL_VALUE_OPTS:
            i += 2
            continue
        if not a.value.startswith("--") and letter in a.value[1:]:
            return i
        i += 1
    return None


def _check_script_operand(operand: Word, name: str, shown: str) -> None:
    value = operand.value
    if (
        operand.raw.startswith("<(")
        or value in ("-", "/dev/stdin")
        or value.startswith(("/dev/fd/", "/proc/"))
    ):
        raise _Refused(
            f"refused: `{shown}` has {name} run a script read from a pipe or another command's output, which "
            "cannot be checked; run the commands directly"
        )


def _check_shell(name: str, args: list[Word], simple: _Simple, state: _State, shown: str) -> None:
    at = _script_option(args, "c")
    if at is not None:
        operands = [a for a in args[at + 1 :] if not _is_option(a)]
        if operands:
            _check_string(operands[0].value, operands[0].dynamic, state, f"{name} -c")
        return
    options, operands = _split_options(args)
    if operands and not _has_short_flag(options, "s"):
        _check_script_operand(operands[0], name, shown)
        return
    _check_stdin_program(name, simple, shown, lambda script: _check_script(script, state.depth + 1))


def _check_stdin_program(name: str, simple: _Simple, shown: str, check: Any) -> None:
    """A shell or interpreter that reads its program from stdin: a heredoc / here-string is checked."""
    if simple.stdin_script is not None:
        if simple.stdin_script.dynamic and name not in _SHELLS:
            raise _Refused(
                f"refused: `{shown}` feeds {name} a program built at run time, which cannot be checked"
            )
        check(simple.stdin_script.value)
        return
    if simple.piped or simple.stdin_from_file:
        raise _Refused(
            f"refused: `{shown}` feeds {name} its program through a pipe or a file, which cannot be checked; "
            "run the commands directly (or write them to a file and run that file)"
        )


def _check_interpreter(name: str, args: list[Word], simple: _Simple, shown: str) -> None:
    family = re.sub(r"[\d.]+$", "", name)

    def check_code(code: str) -> None:
        m = _RISKY_CODE.search(code)
        if m:
            raise _Refused(
                f"refused: the inline {family} code in `{shown}` can run commands, delete files or kill processes "
                f"({m.group(0).strip()!r}), which the guard cannot check; write the program to a file and run that"
            )

    if family in _AWK:
        options, operands = _split_options(args)
        if any(o.startswith("-f") or o == "--file" for o in options):
            return
        if operands:
            check_code(operands[0].value)
        return
    inline = _INLINE_OPTS.get(family, ())
    for i, a in enumerate(args):
        opt = a.value
        if opt in inline:
            if i + 1 < len(args):
                check_code(args[i + 1].value)
            return
        joined = [o for o in inline if len(o) == 2 and opt.startswith(o) and len(opt) > 2]
        if joined:
            check_code(opt[2:])
            return
        if opt == "-":
            break
        if not _is_option(a):
            _check_script_operand(a, name, shown)
            return
        if opt == "-m":
            return
    _check_stdin_program(name, simple, shown, check_code)
