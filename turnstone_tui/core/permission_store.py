"""Permission rules that last: the user's and the project's ``permissions.toml``, and this process's.

File format (both scopes)::

    allow = ["bash(git status)", "bash(npm run test:*)", "read_file(src/**)"]
    ask = ["web_fetch"]
    deny = ["bash(rm:*)", "read_file(~/.ssh/**)"]

- user scope: ``<config dir>/permissions.toml`` (``TURNSTONE_PERMISSIONS`` overrides the path);
- project scope: ``<workspace>/.turnstone/permissions.toml``.

Files are written whole (a temporary file renamed over the old one), mode 0600. A project file is
part of the repository a user may have cloned: its deny and ask rules always apply, its allow rules
only once the user trusts that exact content (turnstone records the file's SHA-256 when it writes the
file itself, or when the user trusts it in ``/permissions``). An edit from outside makes it
untrusted again: a cloned repository cannot allow itself commands.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .permissions import EFFECTS, Rule, RuleError, parse_rule

PROJECT_FILE = Path(".turnstone") / "permissions.toml"
TRUST_FILE = "trusted-projects.json"


def user_permissions_path(config_dir: Path) -> Path:
    env = os.environ.get("TURNSTONE_PERMISSIONS")
    return Path(env).expanduser() if env else config_dir / "permissions.toml"


def _toml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def render(rules: list[Rule]) -> str:
    lines = ["# turnstone permission rules: allow / ask / deny (deny wins over ask wins over allow)"]
    for effect in EFFECTS:
        texts = [r.text for r in rules if r.effect == effect]
        if not texts:
            lines.append(f"{effect} = []")
            continue
        lines.append(f"{effect} = [")
        lines.extend(f"    {_toml_string(t)}," for t in texts)
        lines.append("]")
    return "\n".join(lines) + "\n"


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, mode 0600 (its directory 0700 when created)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@dataclass
class RuleFile:
    scope: str
    path: Path
    rules: list[Rule] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    digest: str = ""  # SHA-256 of the content read ("" when there is no file)
    stamp: tuple[int, int] | None = None  # (mtime_ns, size) when read; None: no file

    def current_stamp(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def load(self) -> None:
        self.rules, self.errors, self.digest = [], [], ""
        self.stamp = self.current_stamp()
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        except OSError as exc:
            self.errors.append(f"{self.path}: cannot read: {exc.strerror or exc}")
            return
        self.digest = hashlib.sha256(data).hexdigest()
        try:
            table = tomllib.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            self.errors.append(f"{self.path}: not valid TOML ({exc}); none of its rules apply")
            return
        for key in table:
            if key not in EFFECTS:
                self.errors.append(f"{self.path}: unknown key {key!r} (allow, ask, deny)")
        for effect in EFFECTS:
            values = table.get(effect, [])
            if not isinstance(values, list):
                self.errors.append(f"{self.path}: {effect} must be a list of strings")
                continue
            for value in values:
                if not isinstance(value, str):
                    self.errors.append(f"{self.path}: {effect}: {value!r} is not a string")
                    continue
                try:
                    rule = parse_rule(value, effect, self.scope)
                except RuleError as exc:
                    self.errors.append(f"{self.path}: {effect}: {exc}")
                    continue
                if rule not in self.rules:
                    self.rules.append(rule)

    def save(self) -> str:
        text = render(self.rules)
        write_private(self.path, text)
        self.digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        return self.digest


class PermissionStore:
    """The rules of the user's and the project's files.

    Blocking file I/O: the app calls ``add`` / ``remove`` / ``replace`` / ``reload`` off the event loop.
    """

    def __init__(self, user_path: Path, workspace: Path) -> None:
        self.workspace = Path(workspace)
        self.user = RuleFile("user", Path(user_path))
        self.project = RuleFile("project", self.workspace / PROJECT_FILE)
        self.trust_path = Path(user_path).with_name(TRUST_FILE)
        self.reload()

    # --- reading --------------------------------------------------------------------------
    def reload(self) -> None:
        self.user.load()
        self.project.load()

    def refresh(self) -> None:
        """Read again a file that changed since it was read (an edit in another editor or process)."""
        for rule_file in (self.user, self.project):
            if rule_file.current_stamp() != rule_file.stamp:
                rule_file.load()

    @property
    def errors(self) -> list[str]:
        return [*self.user.errors, *self.project.errors]

    def project_trusted(self) -> bool:
        if not self.project.digest:
            return True
        return self._trusted().get(str(self.project.path)) == self.project.digest

    def rules(self) -> list[Rule]:
        """Every rule in force: a project file's allow rules only while it is trusted."""
        trusted = self.project_trusted()
        project = [r for r in self.project.rules if trusted or r.effect != "allow"]
        return [*self.user.rules, *project]

    def all_rules(self) -> list[Rule]:
        """Every rule, also the project's untrusted allow rules (for /permissions)."""
        return [*self.user.rules, *self.project.rules]

    def file_for(self, scope: str) -> RuleFile:
        if scope == "user":
            return self.user
        if scope == "project":
            return self.project
        raise RuleError(f"rules of the {scope} scope are not saved in a file")

    # --- writing --------------------------------------------------------------------------
    def add(self, rule: Rule) -> None:
        target = self.file_for(rule.scope)
        target.load()  # another process may have written it: keep its rules
        was_trusted = rule.scope != "project" or self.project_trusted()
        if rule not in target.rules:
            target.rules.append(rule)
        self._save(target, was_trusted)

    def remove(self, rule: Rule) -> None:
        target = self.file_for(rule.scope)
        target.load()
        was_trusted = rule.scope != "project" or self.project_trusted()
        target.rules = [r for r in target.rules if r != rule]
        self._save(target, was_trusted)

    def replace(self, old: Rule, new: Rule) -> None:
        """Edit a rule in place (its text, effect or scope)."""
        if old.scope == new.scope:
            target = self.file_for(old.scope)
            target.load()
            was_trusted = old.scope != "project" or self.project_trusted()
            target.rules = [new if r == old else r for r in target.rules]
            if new not in target.rules:
                target.rules.append(new)
            self._save(target, was_trusted)
            return
        self.remove(old)
        self.add(new)

    def trust_project(self) -> None:
        """The user trusts the project file as it is now: its allow rules apply."""
        self.project.load()
        if self.project.digest:
            self._record_trust(self.project.digest)

    def _save(self, target: RuleFile, was_trusted: bool) -> None:
        digest = target.save()
        target.stamp = target.current_stamp()
        # Writing through turnstone keeps the project file as trusted as it was: the user's own
        # change must not switch on allow rules someone else put there.
        if target is self.project and was_trusted:
            self._record_trust(digest)

    def _trusted(self) -> dict[str, str]:
        try:
            data = json.loads(self.trust_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def _record_trust(self, digest: str) -> None:
        trusted = self._trusted()
        trusted[str(self.project.path)] = digest
        write_private(self.trust_path, json.dumps(trusted, indent=2, sort_keys=True) + "\n")
