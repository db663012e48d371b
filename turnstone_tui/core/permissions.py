"""Permission rules and modes: which tool calls run, which ask, which are refused. Pure, no I/O.

A rule is ``tool`` or ``tool(specifier)`` with an effect (allow / ask / deny) and a scope
(session / project / user / config):

- ``bash(git status)``: exactly that command; ``bash(npm run test:*)``: a command whose first
  words are ``npm run test``. Matched per simple command of the PARSED command line (the bash
  preparer cuts it with bashlex, ``Subject.commands``): ``git status; rm -rf x`` is two commands and
  an allow rule must match each of them, also the commands the line runs from strings
  (``sh -c 'git push'``, ``eval``, ``find -exec``: ``bash_guard.nested_commands``). A command that could not be parsed, that has a variable
  program name, an environment prefix (``PAGER=x git log``) or writes a file through a redirect
  (other than ``/dev/null``) is never allowed by a specifier rule.
- ``read_file(src/**)``, ``write_file(docs/**)``: a glob (``**`` any depth, ``*`` and ``?`` within one
  path component) on the call's real path (symlinks and ``..`` resolved by the preparer); relative
  patterns are relative to the workspace, ``~/`` is the home directory.
- ``web_fetch(domain:docs.python.org)``: the URL's host; ``domain:*.python.org`` also its subdomains.
- ``mcp__github__*``: a glob on the tool name (any tool name may be a glob).

Deny wins over ask wins over allow, whatever the scope. A deny or ask rule with a specifier that
cannot be judged for a call (a command that could not be parsed) makes that call ask.

Modes (``shift+tab`` in the app): default; accept-edits (file edits inside the workspace run
without asking); plan (only read-only tools run, others are refused with a message to the model);
full-auto (sandboxed commands and workspace edits run without asking; nothing that runs outside the
sandbox does).
"""

from __future__ import annotations

import enum
import fnmatch
import os
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .types import CommandPart, PreparedItem, Subject

Effect = Literal["allow", "ask", "deny"]
EFFECTS: tuple[Effect, ...] = ("allow", "ask", "deny")
SCOPES = ("session", "project", "user", "config")
"""Where a rule lives: this session only, ``.turnstone/permissions.toml``, the user's file, or
``tools.allow`` / ``--allow`` (read-only here)."""
SAVED_SCOPES = ("project", "user")

_TOOL_PATTERN = re.compile(r"^[A-Za-z0-9_*?\-]+$")
_SUBCOMMAND = re.compile(r"^[A-Za-z][A-Za-z0-9_:\-]*$")  # not a file name (no . or /)
# Programs whose second word picks another program ("npm run test", "docker compose up").
_RUNNERS = {
    "npm": "run",
    "pnpm": "run",
    "yarn": "run",
    "bun": "run",
    "docker": "compose",
    "podman": "compose",
}
COMMAND_TOOLS = frozenset({"bash", "watch"})
PATH_TOOLS = frozenset({"read_file", "write_file", "edit_file", "diff_file", "search"})
DOMAIN_TOOLS = frozenset({"web_fetch"})


class RuleError(ValueError):
    """A rule that cannot be parsed; the message says what is wrong."""


class Mode(enum.StrEnum):
    DEFAULT = "default"
    ACCEPT_EDITS = "accept-edits"
    PLAN = "plan"
    FULL_AUTO = "full-auto"

    def next(self) -> Mode:
        modes = list(Mode)
        return modes[(modes.index(self) + 1) % len(modes)]


MODE_HELP = {
    Mode.DEFAULT: "every call that changes something asks",
    Mode.ACCEPT_EDITS: "file edits inside the workspace run without asking",
    Mode.PLAN: "read-only tools only; the model is told to plan, not change",
    Mode.FULL_AUTO: "sandboxed commands and workspace edits run without asking",
}


MODE_NOTE_KIND = "permission_mode"
_MODE_NOTES = {
    Mode.DEFAULT: "Tool calls that change something ask the user before they run.",
    Mode.ACCEPT_EDITS: "File edits inside the workspace run without asking; other calls that change "
    "something ask the user first.",
    Mode.PLAN: "Only read-only tools run; calls that would change something are refused. Investigate "
    "and present a plan (plan_agent writes one for the user to review); change nothing until the user "
    "leaves plan mode.",
    Mode.FULL_AUTO: "Sandboxed commands and file edits inside the workspace run without asking; "
    "anything that would run outside the sandbox still asks the user.",
}


def mode_note(mode: Mode) -> dict[str, str]:
    """The user-role note that tells the model the permission mode (sent when it changes: the
    system prompt, and so the provider's prompt cache, stays the same whatever the mode)."""
    return {
        "role": "user",
        "content": f"[permission mode: {mode.value}] {_MODE_NOTES[mode]}",
        "kind": MODE_NOTE_KIND,
        "mode": mode.value,
    }


def told_mode(messages: Sequence[dict[str, object]]) -> Mode:
    """The mode the last note in ``messages`` told the model (default when none did)."""
    for message in reversed(messages):
        if message.get("kind") == MODE_NOTE_KIND:
            try:
                return Mode(str(message.get("mode")))
            except ValueError:
                break
    return Mode.DEFAULT


@dataclass(frozen=True, slots=True)
class Rule:
    tool: str  # a tool name or a glob on it (mcp__github__*)
    specifier: str | None
    effect: Effect = "allow"
    scope: str = "session"

    @property
    def text(self) -> str:
        return self.tool if self.specifier is None else f"{self.tool}({self.specifier})"

    def __str__(self) -> str:
        return self.text


def parse_rule(text: str, effect: str = "allow", scope: str = "session") -> Rule:
    """``tool`` or ``tool(specifier)``; RuleError says what is wrong."""
    if effect not in EFFECTS:
        raise RuleError(f"unknown effect {effect!r} (allow, ask or deny)")
    if scope not in SCOPES:
        raise RuleError(f"unknown scope {scope!r} ({', '.join(SCOPES)})")
    raw = text.strip()
    if not raw:
        raise RuleError("empty rule")
    specifier: str | None = None
    tool = raw
    if "(" in raw:
        tool, _, rest = raw.partition("(")
        if not rest.endswith(")"):
            raise RuleError(f"{raw!r}: a specifier ends with ')': tool(specifier)")
        specifier = rest[:-1].strip()
        if not specifier:
            raise RuleError(f"{raw!r}: empty specifier (write just {tool.strip()!r} for every call)")
    tool = tool.strip()
    if not _TOOL_PATTERN.match(tool):
        raise RuleError(f"{raw!r}: {tool!r} is not a tool name (letters, digits, _ and - ; * ? as globs)")
    if specifier is not None:
        _check_specifier(tool, specifier, raw)
    return Rule(tool, specifier, effect, scope)  # type: ignore[arg-type]


def _check_specifier(tool: str, specifier: str, raw: str) -> None:
    if tool in COMMAND_TOOLS:
        try:
            words = shlex.split(_command_text(specifier)[0])
        except ValueError as exc:
            raise RuleError(f"{raw!r}: cannot split the command into words: {exc}") from None
        if not words:
            raise RuleError(f"{raw!r}: no command before ':*'")
    elif tool in DOMAIN_TOOLS:
        if not specifier.startswith("domain:") or not specifier[7:].strip():
            raise RuleError(
                f"{raw!r}: web_fetch takes domain:HOST (domain:docs.python.org, domain:*.python.org)"
            )
    elif tool not in PATH_TOOLS:
        raise RuleError(
            f"{raw!r}: {tool} takes no specifier (commands: bash, watch; paths: {', '.join(sorted(PATH_TOOLS))}; "
            "domains: web_fetch)"
        )


def _command_text(specifier: str) -> tuple[str, bool]:
    """(the command, is_prefix): ``npm run test:*`` -> ("npm run test", True)."""
    spec = specifier.strip()
    if spec.endswith(":*"):
        return spec[:-2].rstrip(), True
    return spec, False


# --- matching ---------------------------------------------------------------------------------------


Match = Literal["yes", "no", "unknown"]


def _tool_matches(rule: Rule, name: str) -> bool:
    return rule.tool == name or fnmatch.fnmatchcase(name, rule.tool)


def _part_matches_strict(words: Sequence[str], prefix: bool, part: CommandPart) -> bool:
    """For allow rules: the part is clean and its literal words are the rule's (or start with them)."""
    if not part.clean:
        return False
    got = part.words
    if prefix:
        if len(got) < len(words):
            return False
    elif len(got) != len(words):
        return False
    return all(g is not None and g == w for g, w in zip(got, words, strict=False))


def _deny_candidates(part: CommandPart) -> list[tuple[str | None, ...]]:
    """The part as written and the command its wrappers run (``sudo rm x`` -> ``rm x``)."""
    return [part.words, part.unwrapped] if part.unwrapped else [part.words]


def _part_matches_loose(words: Sequence[str], prefix: bool, part: CommandPart) -> Match:
    """For deny/ask rules: does any reading of the part match? "unknown" when a word that decides it
    is only known at run time."""
    unknown = False
    for cand in _deny_candidates(part):
        if not cand:
            continue
        if cand[0] is not None:
            cand = (os.path.basename(cand[0]), *cand[1:])
        if (len(cand) < len(words)) if prefix else (len(cand) != len(words)):
            continue
        verdict: Match = "yes"
        for got, want in zip(cand, words, strict=False):
            if got is None:
                verdict = "unknown"
            elif got != want:
                verdict = "no"
                break
        if verdict == "yes":
            return "yes"
        unknown = unknown or verdict == "unknown"
    return "unknown" if unknown else "no"


def _glob_regex(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            if i < len(pattern) and pattern[i] == "/":
                out[-1] = "(?:.*/)?"
                i += 1
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z")


def _path_pattern(specifier: str, workspace: Path) -> str:
    spec = specifier.strip()
    if spec.startswith("~"):
        spec = os.path.expanduser(spec)
    if not os.path.isabs(spec):
        spec = os.path.join(str(workspace), spec)
    # collapse ./ and ../ in the pattern the way the paths were resolved
    return os.path.normpath(spec) + ("/" if spec.endswith("/") else "")


def path_matches(specifier: str, path: str, workspace: Path) -> bool:
    pattern = _path_pattern(specifier, workspace)
    if pattern.endswith("/"):
        pattern += "**"
    return bool(_glob_regex(pattern).match(path))


def domain_matches(specifier: str, host: str) -> bool:
    want = specifier.strip()[len("domain:") :].strip().lower().rstrip(".")
    host = host.lower().rstrip(".")
    if not host:
        return False
    if want.startswith("*."):
        base = want[2:]
        return host == base or host.endswith("." + base)
    return host == want


def rule_matches(rule: Rule, item: PreparedItem, workspace: Path) -> Match:
    """Does ``rule`` cover ``item``? For a command, "yes" means: for an allow rule, EVERY part of the
    command is this rule's; for deny/ask, ANY part is ("unknown" when that cannot be told)."""
    if not _tool_matches(rule, item.func_name):
        return "no"
    if rule.specifier is None:
        return "yes"
    subject = item.subject or Subject()
    if rule.tool in COMMAND_TOOLS or item.func_name in COMMAND_TOOLS:
        if subject.commands is None:
            return "unknown"
        text, prefix = _command_text(rule.specifier)
        try:
            words = shlex.split(text)
        except ValueError:
            return "no"
        if rule.effect == "allow":
            ok = bool(subject.commands) and all(
                _part_matches_strict(words, prefix, p) for p in subject.commands
            )
            return "yes" if ok else "no"
        found: Match = "no"
        for part in subject.commands:
            got = _part_matches_loose(words, prefix, part)
            if got == "yes":
                return "yes"
            if got == "unknown":
                found = "unknown"
        return found
    if rule.specifier.startswith("domain:"):
        if not subject.domain:
            return "unknown"
        return "yes" if domain_matches(rule.specifier, subject.domain) else "no"
    if not subject.paths:
        return "unknown"
    hits = [path_matches(rule.specifier, p, workspace) for p in subject.paths]
    if rule.effect == "allow":
        return "yes" if all(hits) else "no"
    return "yes" if any(hits) else "no"


# --- the decision -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Verdict:
    effect: Literal["allow", "ask", "deny", "refuse"]  # refuse: not run in this mode (plan)
    reason: str
    rule: Rule | None = None

    @property
    def runs_without_asking(self) -> bool:
        return self.effect == "allow"


def _first(
    rules: Iterable[Rule], item: PreparedItem, workspace: Path, effect: str
) -> tuple[Rule | None, bool]:
    """The first rule of ``effect`` that matches, and whether one might match ("unknown")."""
    maybe = False
    for rule in rules:
        if rule.effect != effect:
            continue
        got = rule_matches(rule, item, workspace)
        if got == "yes":
            return rule, False
        maybe = maybe or got == "unknown"
    return None, maybe


def _allowed_by(rules: Sequence[Rule], item: PreparedItem, workspace: Path) -> list[Rule]:
    """The allow rules that together cover the call, or []: a tool-wide rule, or for a command one
    rule per part (every part of ``git add . && git commit`` needs a rule), for a file tool one per path."""
    mine = [r for r in rules if r.effect == "allow" and _tool_matches(r, item.func_name)]
    for rule in mine:
        if rule.specifier is None:
            return [rule]
    subject = item.subject or Subject()
    if item.func_name in COMMAND_TOOLS:
        units: list[PreparedItem] = [
            _with_subject(item, Subject(commands=(part,))) for part in subject.commands or ()
        ]
    elif subject.paths:
        units = [_with_subject(item, Subject(paths=(path,))) for path in subject.paths]
    else:
        units = [item]
    used: list[Rule] = []
    for unit in units:
        rule = next((r for r in mine if rule_matches(r, unit, workspace) == "yes"), None)
        if rule is None:
            return []
        if rule not in used:
            used.append(rule)
    return used


def _with_subject(item: PreparedItem, subject: Subject) -> PreparedItem:
    return PreparedItem(item.call_id, item.func_name, item.args, item.header, subject=subject)


def judge(
    item: PreparedItem,
    rules: Sequence[Rule],
    *,
    workspace: Path,
    mode: Mode = Mode.DEFAULT,
    skip_permissions: bool = False,
) -> Verdict:
    """Allow, ask, deny or refuse one prepared call. Deny > plan mode > ask > allow."""
    deny, deny_maybe = _first(rules, item, workspace, "deny")
    if deny is not None:
        return Verdict("deny", f"denied by the rule {deny.text} ({deny.scope} scope)", deny)
    if mode is Mode.PLAN and not item.read_only:
        return Verdict(
            "refuse",
            f"{item.func_name} was not run: plan mode allows read-only tools only. Investigate with "
            "read-only tools and present a plan; the user switches modes (shift+tab) to let changes run.",
        )
    if skip_permissions and not deny_maybe:
        return Verdict("allow", "--skip-permissions")
    ask, ask_maybe = _first(rules, item, workspace, "ask")
    if ask is not None:
        return Verdict("ask", f"the rule {ask.text} ({ask.scope} scope) asks", ask)
    if deny_maybe or ask_maybe:
        return Verdict("ask", "a deny or ask rule may apply and the call cannot be judged against it")
    if not item.needs_approval:
        return Verdict("allow", "runs without approval")
    allowing = _allowed_by(rules, item, workspace)
    if allowing:
        names = ", ".join(r.text for r in allowing)
        scopes = ", ".join(dict.fromkeys(r.scope for r in allowing))
        plural = "s" if len(allowing) > 1 else ""
        return Verdict("allow", f"allowed by the rule{plural} {names} ({scopes} scope)", allowing[0])
    subject = item.subject or Subject()
    if mode in (Mode.ACCEPT_EDITS, Mode.FULL_AUTO) and subject.workspace_edit:
        return Verdict("allow", f"{mode.value} mode: a file edit inside the workspace")
    if mode is Mode.FULL_AUTO and item.sandboxed:
        return Verdict("allow", "full-auto mode: runs in the sandbox")
    return Verdict("ask", "needs approval")


# --- the narrowest useful rule for an approved call ------------------------------------------------------


# Programs that run whatever code or command their arguments give them: an "always" rule for one of
# these never covers other arguments (``bash(python3:*)`` would allow ``python3 -c ANYTHING``). An
# interpreter or shell given a script file gets ``PROGRAM SCRIPT:*`` (``-m MODULE`` for Python);
# anything else (``-c``/``-e`` code, options first, a wrapper, make's ``--eval`` / ``-f`` / ``SHELL=``)
# gets the exact command. Includes every wrapper of ``executors/bash_guard._WRAPPERS`` (a test checks).
_INTERPRETER = re.compile(
    r"^(?:python[0-9.]*|pypy[0-9.]*|node(?:js)?|ruby|irb|perl[0-9.]*|php[0-9.]*|lua(?:jit|[0-9.]*)|"
    r"Rscript|R|julia|tclsh|wish|expect|java|jshell|groovy|scala|kotlinc?|elixir|iex|erl|escript|guile|racket|"
    r"sbcl|clisp|ghci|runghc|runhaskell|ocaml|swift|pwsh|powershell|osascript|"
    r"bash|sh|dash|zsh|ksh|mksh|pdksh|fish|csh|tcsh|ash|yash|rc)$"
)
_EXACT_ONLY = frozenset(
    {"env", "xargs", "nice", "nohup", "time", "timeout", "stdbuf", "ionice", "chrt", "taskset", "setsid",
     "sudo", "doas", "pkexec", "su", "runuser", "exec", "command", "builtin", "eval", "source", ".", "busybox",
     "chroot", "unbuffer", "strace", "ltrace", "gdb", "lldb", "valgrind", "caffeinate", "firejail", "torsocks",
     "proxychains", "proxychains4", "flock", "script", "watch", "coproc", "unshare", "nsenter", "setpriv",
     "systemd-run", "parallel", "npx", "uvx", "bunx", "pnpx", "pipx", "make", "gmake", "bmake", "cmake", "awk",
     "gawk", "mawk", "nawk", "sed", "gsed", "ssh", "tmux", "screen", "at", "batch", "crontab", "dbus-run-session",
     "fakeroot", "catchsegv", "perf", "entr", "nodemon", "socat", "nc", "ncat"}
)  # fmt: skip
# Programs whose subcommand runs another program given on the command line (``uv run X``).
_EXEC_SUBCOMMANDS = {
    "uv": {"run", "tool"}, "poetry": {"run"}, "pipenv": {"run"}, "pdm": {"run"}, "hatch": {"run"},
    "conda": {"run"}, "mamba": {"run"}, "micromamba": {"run"}, "rye": {"run"}, "npm": {"exec", "x"},
    "pnpm": {"exec", "dlx"}, "yarn": {"exec", "dlx"}, "bun": {"x", "exec"}, "deno": {"run", "eval", "repl"},
    "docker": {"run", "exec"}, "podman": {"run", "exec"}, "kubectl": {"exec", "run"}, "go": {"run"},
    "cargo": {"run"}, "dotnet": {"run", "exec"}, "git": {"submodule", "bisect", "rebase", "filter-branch"},
}  # fmt: skip
# Programs that are only safe to prefix by their subcommand: ``git -c core.pager=CMD log`` runs CMD.
_NEEDS_SUBCOMMAND = frozenset(
    {
        "git",
        "docker",
        "podman",
        "kubectl",
        "npm",
        "pnpm",
        "yarn",
        "cargo",
        "go",
        "uv",
        "bun",
        "deno",
        "dotnet",
    }
)
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")


def _exact(words: Sequence[str | None]) -> str | None:
    if any(w is None for w in words):
        return None
    return " ".join(shlex.quote(w) for w in words if w is not None)


_STDIN_PATHS = re.compile(r"^(?:-|/dev/stdin|/dev/fd/\d+|/proc/(?:self|\d+|thread-self)/fd/\d+)$")
_SHELLS = re.compile(r"^(?:bash|sh|dash|zsh|ksh|mksh|pdksh|ash|yash|fish|csh|tcsh|rc)$")
_FAMILY = re.compile(r"^(python|pypy|node|ruby|perl|php)")
# Per interpreter family: options whose next word is a value, options whose next word is the code.
_VALUE_OPTS = {
    "python": {"-W", "-X", "--check-hash-based-pycs"}, "pypy": {"-W", "-X"},
    "node": {"-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions",
             "--env-file", "--input-type", "--title"},
    "ruby": {"-r", "-I", "-C", "-E", "-F", "-K"}, "perl": {"-I", "-M", "-m", "-x"}, "php": {"-d", "-c", "-z"},
    "sh": {"-o", "+o", "-O", "+O", "--rcfile", "--init-file"},
}  # fmt: skip
_CODE_OPTS = {
    "python": {"-c", "-m"}, "pypy": {"-c", "-m"}, "node": {"-e", "--eval", "-p", "--print"}, "ruby": {"-e"},
    "perl": {"-e", "-E"}, "php": {"-r", "-B", "-R", "-E", "-F"}, "sh": {"-c"},
}  # fmt: skip


def _family(name: str) -> str:
    if _SHELLS.match(name):
        return "sh"
    found = _FAMILY.match(name)
    return found.group(1) if found else ""


def _script_word(name: str, words: Sequence[str | None]) -> int | None:
    """The index of the word that gives an interpreter its program (a script file, ``-c``'s code,
    ``-m``'s module), or None when the program is its standard input (``python3``, ``python3 -``,
    ``python3 -W ignore``, ``bash -s``, ``node /dev/stdin``): ``cat x | python3`` or ``python3 < x``
    would match a rule for it whatever x holds."""
    family = _family(name)
    value_opts = _VALUE_OPTS.get(family, set())
    code_opts = _CODE_OPTS.get(family, {"-c", "-e"})
    i = 1
    while i < len(words):
        word = words[i]
        if word is None or _STDIN_PATHS.match(word):
            return None
        if word == "--":
            i += 1
            break
        if not word.startswith(("-", "+")):
            return i
        if word in code_opts or (family == "sh" and word[:1] == "-" and word[1:2] != "-" and "c" in word):
            return i + 1 if i + 1 < len(words) and words[i + 1] is not None else None
        if family == "sh" and word[:1] == "-" and word[1:2] != "-" and "s" in word:
            return None  # bash -s: the script is standard input
        i += 2 if word in value_opts else 1
    if i < len(words) and words[i] is not None and not _STDIN_PATHS.match(words[i] or ""):
        return i
    return None


def _command_prefix(part: CommandPart) -> str | None:
    words = part.words
    if not part.clean or not words or words[0] is None:
        return None
    program = words[0]
    name = os.path.basename(program)
    second = words[1] if len(words) > 1 else None
    if name in _EXACT_ONLY or (second is not None and second in _EXEC_SUBCOMMANDS.get(name, ())):
        return _exact(words)
    if _INTERPRETER.match(name):
        at = _script_word(name, words)
        if at is None:
            return None  # no rule: whatever is piped or redirected in would run under it
        if at == 1 and second is not None:
            return " ".join(shlex.quote(w) for w in (program, second)) + ":*"  # a script file
        module = words[2] if len(words) > 2 else None
        if (
            second == "-m"
            and module is not None
            and _MODULE.match(module)
            and _family(name) in ("python", "pypy")
        ):
            return " ".join(shlex.quote(w) for w in (program, "-m", module)) + ":*"
        return _exact(words)
    keep = [program]
    limit = 3 if _RUNNERS.get(program) == second else 2
    for word in words[1:limit]:
        if word is None or not _SUBCOMMAND.match(word):
            break
        keep.append(word)
    if len(keep) == 1 and name in _NEEDS_SUBCOMMAND and len(words) > 1:
        return _exact(words)
    return " ".join(shlex.quote(w) for w in keep) + ":*"


def no_rule_reason(item: PreparedItem) -> str:
    """Why ``suggest_rules`` offers nothing for a command: it cannot be parsed, or one of its
    programs runs whatever code reaches its input."""
    for part in (item.subject or Subject()).commands or ():
        words = part.words
        if part.clean and words and words[0] is not None:
            name = os.path.basename(words[0])
            if _INTERPRETER.match(name) and _script_word(name, words) is None:
                return f"{name} would run whatever code reaches its input"
    return "it cannot be parsed into commands"


def rule_reach(rule: Rule) -> str:
    """What an "always" rule for a command lets run, in words, where its text may mislead: an exact
    command, or a script with any arguments (not other code of that interpreter). "" otherwise."""
    if rule.tool not in COMMAND_TOOLS or rule.specifier is None:
        return ""
    text, prefix = _command_text(rule.specifier)
    try:
        words = shlex.split(text)
    except ValueError:
        return ""
    if not prefix:
        return "this exact command only"
    name = os.path.basename(words[0]) if words else ""
    if _INTERPRETER.match(name) and len(words) > 1:
        return f"{' '.join(words)} with any arguments; no other {name} code"
    return ""


def suggest_rules(item: PreparedItem, workspace: Path) -> list[Rule]:
    """The narrowest rule(s) that would let a call like this run without asking: a command prefix
    per part (``bash(npm run test:*)``), the file's directory (``write_file(docs/**)``), the domain,
    or the tool. A part that runs any code it is given (an interpreter, a shell, a wrapper: see
    ``_EXACT_ONLY``) gets its exact command, or ``PROGRAM SCRIPT:*``. Empty when no rule can match
    it safely (a command that could not be parsed, an interpreter reading code from its input)."""
    name = item.func_name
    subject = item.subject or Subject()
    if name in COMMAND_TOOLS:
        if not subject.commands:
            return []
        seen: dict[str, None] = {}
        for part in subject.commands:
            prefix = _command_prefix(part)
            if prefix is None:
                return []
            seen.setdefault(prefix, None)
        return [Rule(name, spec) for spec in seen]
    if name in DOMAIN_TOOLS and subject.domain:
        return [Rule(name, f"domain:{subject.domain}")]
    if name in PATH_TOOLS and subject.paths:
        specs: dict[str, None] = {}
        for raw in subject.paths:
            specs.setdefault(_path_suggestion(Path(raw), workspace), None)
        return [Rule(name, spec) for spec in specs]
    return [Rule(name, None)]


def _path_suggestion(path: Path, workspace: Path) -> str:
    try:
        rel = path.relative_to(workspace)
    except ValueError:
        return f"{path.parent}/**"
    if len(rel.parts) <= 1:
        return str(rel)
    return f"{rel.parent}/**"
