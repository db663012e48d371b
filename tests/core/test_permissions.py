"""Permission rules: parsing, matching (command prefixes on the parsed command, path globs, domains,
tool globs), the decision (deny > ask > allow, modes), the suggested "always" rule, and the files
(user and project scope, 0600, the project's allow rules only once trusted)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from turnstone_tui.core.permission_store import PermissionStore
from turnstone_tui.core.permissions import Mode, Rule, RuleError, judge, parse_rule, suggest_rules
from turnstone_tui.core.types import PreparedItem, Subject
from turnstone_tui.executors.bash_parts import command_parts

WS = Path("/home/user/project")


def bash(command: str, *, sandboxed: bool = False, needs_approval: bool = True) -> PreparedItem:
    return PreparedItem(
        "c1",
        "bash",
        {"command": command},
        f"bash: {command}",
        needs_approval=needs_approval,
        subject=Subject(commands=command_parts(command)),
        sandboxed=sandboxed,
    )


def file_call(name: str, path: str, *, needs_approval: bool = True) -> PreparedItem:
    real = os.path.normpath(path if path.startswith("/") else f"{WS}/{path}")
    inside = real == str(WS) or real.startswith(f"{WS}/")
    return PreparedItem(
        "c1",
        name,
        {"path": path},
        name,
        needs_approval=needs_approval,
        subject=Subject(paths=(real,), workspace_edit=inside and name in ("write_file", "edit_file")),
        read_only=name == "read_file",
    )


def fetch(url_host: str) -> PreparedItem:
    return PreparedItem("c1", "web_fetch", {}, "web_fetch", subject=Subject(domain=url_host), read_only=True)


def effect(item: PreparedItem, *rules: str, mode: Mode = Mode.DEFAULT, skip: bool = False) -> str:
    parsed = []
    for text in rules:
        kind, _, rule = text.partition(" ")
        parsed.append(parse_rule(rule, kind))
    return judge(item, parsed, workspace=WS, mode=mode, skip_permissions=skip).effect


# --- parsing ----------------------------------------------------------------------------------------


def test_rules_parse_and_print_back() -> None:
    rule = parse_rule("bash(npm run test:*)", "allow", "project")
    assert (rule.tool, rule.specifier, rule.effect, rule.scope) == (
        "bash",
        "npm run test:*",
        "allow",
        "project",
    )
    assert rule.text == "bash(npm run test:*)"
    assert parse_rule("mcp__github__*").specifier is None
    assert parse_rule("web_fetch(domain:docs.python.org)").text == "web_fetch(domain:docs.python.org)"


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "bash(",
        "bash()",
        "bash(git status",
        "ba sh",
        "bash(echo 'x)",
        "web_fetch(docs.python.org)",
        "math(x)",
    ],
)
def test_malformed_rules_are_refused_with_a_reason(bad: str) -> None:
    with pytest.raises(RuleError):
        parse_rule(bad)


# --- commands: matched on the parsed command ----------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "git status",
        "'git' \"status\"",
        "git status 2>&1",
        "git status >/dev/null",
        "(git status)",
        "{ git status; }",
    ],
)
def test_an_exact_rule_allows_the_command_however_it_is_quoted_or_grouped(command: str) -> None:
    assert effect(bash(command), "allow bash(git status)") == "allow"


@pytest.mark.parametrize(
    "command",
    [
        "git status; rm -rf x",
        "git status && curl x",
        "git status || curl x",
        "git status | sh",
        "git status\ncurl x",
        "git status & curl x",
        "git status $(curl x)",
        "git status `curl x`",
        "git status <(curl x)",
        "git status --short",  # an exact rule: no extra words
        "git statusx",
        "git\\ status",  # one word: a program named "git status"
        "PAGER='curl x' git status",  # environment prefix
        "GIT_SSH_COMMAND=x git status",
        "git status > ~/.bashrc",  # writes a file
        "git status &> log",
        "> important.txt; git status",  # a bare redirect truncates a file
        "$G status",  # the program is only known at run time
        "g''it status; curl x",
        "sudo git status",
        "env git status",
        "[[ -n x ]] && git status",  # bashlex cannot parse it: never allowed by a rule
        "f() { curl x; }; git status; f",
        "if git status; then curl x; fi",
        # substitutions bashlex leaves unparsed (allowed before the second red-team pass)
        "git status ${x:-$(curl x)}",
        'git status "${x:-`curl x`}"',
        "git status ${x[$(curl x)]}",
        "git status ~$(curl x)",
        "git status <<EOF\n$(curl x)\nEOF\n",
        "git status <<EOF\n${x:-`curl x`}\nEOF\n",
    ],
)
def test_an_allow_rule_does_not_cover_a_command_that_does_more(command: str) -> None:
    assert effect(bash(command), "allow bash(git status)") == "ask"


def test_a_prefix_rule_allows_any_arguments_after_the_prefix() -> None:
    rule = "allow bash(npm run test:*)"
    assert effect(bash("npm run test"), rule) == "allow"
    assert effect(bash("npm run test -- --watch=false src/*.ts"), rule) == "allow"
    assert effect(bash("npm run test-e2e"), rule) == "ask"  # words, not characters
    assert effect(bash("npm run build"), rule) == "ask"
    assert effect(bash("npm run test && npm publish"), rule) == "ask"


def test_substitutions_hidden_in_parameters_and_heredocs_need_their_own_rule() -> None:
    rules = ("allow bash(git status:*)", "allow bash(date)")
    assert effect(bash("git status ${x:-$(date)}"), *rules) == "allow"
    assert effect(bash("git status <<EOF\n$(date)\nEOF\n"), *rules) == "allow"
    assert effect(bash("git status <<'EOF'\n$(curl x)\nEOF\n"), *rules) == "allow"  # not expanded
    assert effect(bash("git status ${x:-$(curl x)}"), *rules) == "ask"
    assert effect(bash("git status ${x:-$([[ -n x ]])}"), *rules) == "ask"  # cannot be cut: asks
    assert effect(bash("git status ${x:-$(curl x)}"), "deny bash(curl:*)") == "deny"


def test_a_compound_command_runs_only_if_every_part_is_allowed() -> None:
    rules = ("allow bash(git add:*)", "allow bash(git commit:*)")
    assert effect(bash("git add . && git commit -m 'msg; rm -rf /'"), *rules) == "allow"
    assert effect(bash("git add . && git push"), *rules) == "ask"
    assert effect(bash("git log | head -5"), "allow bash(git log:*)", "allow bash(head:*)") == "allow"


def test_deny_wins_over_allow_and_looks_through_wrappers_and_paths() -> None:
    deny = "deny bash(rm:*)"
    for command in ("rm -rf build", "sudo rm -rf build", "/bin/rm x", "env FOO=1 rm x", "timeout 5 rm x",
                    "echo hi; rm x", "ls $(rm x)", "nice -n 5 rm x"):  # fmt: skip
        assert effect(bash(command), "allow bash", deny) == "deny", command
    assert effect(bash("echo 'rm -rf /'"), "allow bash", deny) == "allow"  # quoted text runs nothing
    assert effect(bash("rmdir x"), "allow bash", deny) == "allow"


@pytest.mark.parametrize(
    "command",
    [
        "sh -c 'git push'",
        "bash -lc 'git push origin'",
        "timeout 5 bash -c 'git push'",
        "sudo -u me sh -c 'git push'",
        "eval git push",
        "eval 'git push'",
        "find . -maxdepth 0 -exec git push \\;",
        "env -S 'git push'",
        "watch 'git push'",
        "su me -c 'git push'",
        "bash <<< 'git push'",
        "bash <<EOF\ngit push\nEOF\n",
        "alias p='git push'",
        "git -C . push",
        "git --no-pager -c user.name=x push",
    ],
)
def test_a_deny_rule_sees_commands_run_from_strings_also_in_full_auto(command: str) -> None:
    """Full-auto runs sandboxed commands unasked and --skip-permissions everything: only the deny rule
    stood between the model and `git push`, and sh -c / eval / find -exec / git's global options
    walked past it (they were allowed before the second red-team pass)."""
    deny = "deny bash(git push:*)"
    assert effect(bash(command, sandboxed=True), deny, mode=Mode.FULL_AUTO) == "deny"
    assert effect(bash(command), deny, skip=True) == "deny"


def test_an_allow_rule_must_cover_the_commands_run_from_strings() -> None:
    assert effect(bash("bash -c 'git status'"), "allow bash(bash:*)") == "ask"
    assert effect(bash("bash -c 'git status'"), "allow bash(bash:*)", "allow bash(git status)") == "allow"
    assert effect(bash("find . -name x -exec rm {} +"), "allow bash(find:*)") == "ask"
    assert effect(bash("sh -c 'git pull'"), "deny bash(git push:*)", mode=Mode.DEFAULT) == "ask"


def test_a_deny_rule_that_cannot_be_judged_makes_the_call_ask() -> None:
    # "$X" could be rm; an unparseable line could hold anything: ask, even with a tool-wide allow
    assert effect(bash("$X -rf build"), "allow bash", "deny bash(rm:*)") == "ask"
    assert effect(bash("[[ -f x ]] && rm x"), "allow bash", "deny bash(rm:*)") == "ask"
    assert effect(bash("[[ -f x ]] && ls"), "allow bash") == "allow"  # no deny rule to judge


def test_ask_wins_over_allow_and_over_auto_approval() -> None:
    assert effect(bash("git push origin"), "allow bash", "ask bash(git push:*)") == "ask"
    auto = bash("git push", needs_approval=False)  # e.g. sandbox.auto_approve
    assert effect(auto, "ask bash(git push:*)") == "ask"
    assert effect(auto) == "allow"


def test_skip_permissions_still_obeys_deny_rules() -> None:
    assert effect(bash("rm x"), skip=True) == "allow"
    assert effect(bash("rm x"), "deny bash(rm:*)", skip=True) == "deny"


# --- paths, domains, tool globs ---------------------------------------------------------------------


def test_path_globs_match_the_real_path_relative_to_the_workspace() -> None:
    rule = "allow write_file(docs/**)"
    assert effect(file_call("write_file", "docs/a.md"), rule) == "allow"
    assert effect(file_call("write_file", "docs/deep/er/a.md"), rule) == "allow"
    assert effect(file_call("write_file", "docs/../src/a.py"), rule) == "ask"  # resolved: src/a.py
    assert effect(file_call("write_file", "/etc/docs/a.md"), rule) == "ask"
    assert effect(file_call("write_file", "docsx/a.md"), rule) == "ask"
    one_level = "allow write_file(docs/*.md)"
    assert effect(file_call("write_file", "docs/a.md"), one_level) == "allow"
    assert effect(file_call("write_file", "docs/x/a.md"), one_level) == "ask"


def test_deny_on_a_read_only_tool_refuses_what_would_run_unasked() -> None:
    inside = file_call("read_file", "secrets/key.pem", needs_approval=False)
    assert effect(inside) == "allow"
    assert effect(inside, "deny read_file(secrets/**)") == "deny"
    outside = file_call("read_file", "/opt/data/x.csv")
    assert effect(outside, "allow read_file(/opt/data/**)") == "allow"
    assert effect(outside, "allow read_file(/opt/other/**)") == "ask"


def test_home_relative_patterns() -> None:
    home = os.path.expanduser("~")
    item = file_call("read_file", f"{home}/notes/todo.txt")
    assert effect(item, "allow read_file(~/notes/**)") == "allow"


def test_domain_rules_match_the_host_exactly_or_its_subdomains() -> None:
    rule = "allow web_fetch(domain:docs.python.org)"
    assert effect(fetch("docs.python.org"), rule) == "allow"
    assert effect(fetch("evil-docs.python.org"), rule) == "ask"
    assert effect(fetch("docs.python.org.evil.com"), rule) == "ask"
    wildcard = "allow web_fetch(domain:*.python.org)"
    assert effect(fetch("docs.python.org"), wildcard) == "allow"
    assert effect(fetch("python.org"), wildcard) == "allow"
    assert effect(fetch("notpython.org"), wildcard) == "ask"


def test_web_fetch_judges_the_host_the_url_really_asks() -> None:
    from turnstone_tui.executors.web import _host

    assert _host("https://docs.python.org@evil.com/x") == "evil.com"
    assert _host("https://DOCS.python.org./x") == "docs.python.org"


def test_mcp_tool_globs() -> None:
    item = PreparedItem("c1", "mcp__github__create_issue", {}, "mcp")
    assert effect(item, "allow mcp__github__*") == "allow"
    assert effect(item, "allow mcp__gitlab__*") == "ask"
    assert effect(item, "allow mcp__github__*", "deny mcp__github__create_*") == "deny"


# --- modes ------------------------------------------------------------------------------------------


def test_modes() -> None:
    edit_inside = file_call("write_file", "src/a.py")
    edit_outside = file_call("write_file", "/tmp/a.py")
    sandboxed = bash("make test", sandboxed=True)
    unconfined = bash("make test", sandboxed=False)
    read = file_call("read_file", "src/a.py", needs_approval=False)
    assert [effect(i) for i in (edit_inside, edit_outside, sandboxed, unconfined, read)] == [
        "ask", "ask", "ask", "ask", "allow"
    ]  # fmt: skip
    accept = Mode.ACCEPT_EDITS
    assert [effect(i, mode=accept) for i in (edit_inside, edit_outside, sandboxed, unconfined, read)] == [
        "allow", "ask", "ask", "ask", "allow"
    ]  # fmt: skip
    full = Mode.FULL_AUTO
    assert [effect(i, mode=full) for i in (edit_inside, edit_outside, sandboxed, unconfined, read)] == [
        "allow", "ask", "allow", "ask", "allow"
    ]  # fmt: skip
    plan = Mode.PLAN
    assert [effect(i, mode=plan) for i in (edit_inside, edit_outside, sandboxed, unconfined, read)] == [
        "refuse", "refuse", "refuse", "refuse", "allow"
    ]  # fmt: skip
    # plan mode refuses even what a rule allows; deny rules and ask rules still apply in every mode
    assert effect(sandboxed, "allow bash", mode=plan) == "refuse"
    assert effect(edit_inside, "deny write_file(src/**)", mode=accept) == "deny"
    assert effect(sandboxed, "ask bash(make:*)", mode=full) == "ask"


def test_modes_cycle_in_order() -> None:
    seen = [Mode.DEFAULT]
    for _ in range(4):
        seen.append(seen[-1].next())
    assert [m.value for m in seen] == ["default", "accept-edits", "plan", "full-auto", "default"]


# --- the narrowest useful rule -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "rules"),
    [
        ("npm run test -- --watch", ["bash(npm run test:*)"]),
        ("git status", ["bash(git status:*)"]),
        ("ls -la src", ["bash(ls:*)"]),
        ("git add . && git commit -m x", ["bash(git add:*)", "bash(git commit:*)"]),
        ("pytest tests/core -x", ["bash(pytest:*)"]),
        ("$X status", []),
        ("PAGER=x git log", []),
        ("[[ -f x ]] && ls", []),
    ],
)
def test_the_suggested_rule_is_the_narrowest_useful_one(command: str, rules: list[str]) -> None:
    suggested = suggest_rules(bash(command), WS)
    assert [r.text for r in suggested] == rules
    if suggested:  # a suggested rule lets that very command run next time
        assert effect(bash(command), *(f"allow {r.text}" for r in suggested)) == "allow"


@pytest.mark.parametrize(
    ("approved", "rules", "still_ask"),
    [
        ("python3 x.py --fast", ["bash(python3 x.py:*)"],
         ["python3 -c 'import os'", "python3 y.py", "python3 - x.py", "python3 -u x.py", "python3 x.py; id"]),
        ("python3 -m pytest -x", ["bash(python3 -m pytest:*)"], ["python3 -m pip install x", "python3 -c 1"]),
        ("/usr/bin/python3.12 tool.py", ["bash(/usr/bin/python3.12 tool.py:*)"], ["/usr/bin/python3.12 -c 1"]),
        ("node index.js", ["bash(node index.js:*)"], ["node -e 1", "node -p 1", "node other.js"]),
        ("bash run.sh", ["bash(bash run.sh:*)"], ["bash -c id", "bash evil.sh", "bash -s run.sh"]),
        ("perl -e 'print 1'", ["bash(perl -e 'print 1')"], ["perl -e 'print 2'", "perl -e 'print 1' x"]),
        ("python3 -c 'print(1)'", ["bash(python3 -c 'print(1)')"], ["python3 -c 'print(2)'"]),
        ("env FOO=1 ls", ["bash(env FOO=1 ls)"], ["env python3 -c 1", "env FOO=1 ls; env id"]),
        ("xargs ls", ["bash(xargs ls)"], ["xargs sh -c id", "xargs python3 -c 1"]),
        ("timeout 5 ls", ["bash(timeout 5 ls)"], ["timeout 5 python3 -c 1"]),
        ("sudo apt list", ["bash(sudo apt list)"], ["sudo id"]),
        ("make test", ["bash(make test)"], ["make test --eval=x", "make -f other.mk test", "make test SHELL=x"]),
        ("npx prettier --check .", ["bash(npx prettier --check .)"], ["npx evil", "npx prettier --plugin=x"]),
        ("uv run pytest", ["bash(uv run pytest)"], ["uv run python -c 1"]),
        ("npm exec tsc", ["bash(npm exec tsc)"], ["npm exec evil"]),
        ("git -c color.ui=always log", ["bash(git -c color.ui=always log)"], ["git -c core.pager=id log"]),
        ("awk '{print $1}' f", ["bash(awk '{print $1}' f)"], ["awk 'BEGIN{system(\"id\")}'"]),
    ],
)  # fmt: skip
def test_an_always_rule_for_a_program_that_runs_any_code_stays_narrow(
    approved: str, rules: list[str], still_ask: list[str]
) -> None:
    """Approving `python3 x.py` with "always" suggested bash(python3:*), which then allowed any
    `python3 -c '...'` unasked (and env:*, xargs:*, make:*, npx:*, uv run:*, git:* the same). An
    interpreter or shell given a script file now gets PROGRAM SCRIPT:* (python -m MODULE:*);
    code on the command line, options first, wrappers, runners and make get the exact command."""
    suggested = suggest_rules(bash(approved), WS)
    assert [r.text for r in suggested] == rules
    allow = [f"allow {r.text}" for r in suggested]
    assert effect(bash(approved), *allow) == "allow"
    for other in still_ask:
        assert effect(bash(other), *allow) == "ask", other
    from turnstone_tui.core.permissions import rule_reach

    assert all(rule_reach(r) for r in suggested)  # the dialog says what the rule lets run


@pytest.mark.parametrize(
    "command",
    ["python3", "python3 -", "python3 -W ignore", "cat x | python3", "python3 < x.py", "bash -s",
     "sh", "node /dev/stdin", "ruby -r x", "bash -o errexit", "python3 /proc/self/fd/0"],
)  # fmt: skip
def test_an_interpreter_reading_code_from_its_input_gets_no_rule(command: str) -> None:
    """bash(python3) would allow `python3 -W ignore < anything` or `bash -s` fed the same way: no
    rule is offered, and the dialog says why (pipes and redirects into a bare interpreter are
    refused by the guard already: no parts)."""
    from turnstone_tui.core.permissions import no_rule_reason

    item = bash(command)
    assert suggest_rules(item, WS) == []
    if item.subject is not None and item.subject.commands is not None:  # else the guard refuses it
        assert "would run whatever code reaches its input" in no_rule_reason(item)


def test_every_wrapper_the_guard_knows_gets_an_exact_rule() -> None:
    from turnstone_tui.core.permissions import _EXACT_ONLY
    from turnstone_tui.executors.bash_guard import _WRAPPERS

    assert set(_WRAPPERS) <= _EXACT_ONLY


def test_suggestions_for_files_domains_and_other_tools() -> None:
    assert [r.text for r in suggest_rules(file_call("write_file", "docs/guide/a.md"), WS)] == [
        "write_file(docs/guide/**)"
    ]
    assert [r.text for r in suggest_rules(file_call("write_file", "notes.txt"), WS)] == [
        "write_file(notes.txt)"
    ]
    assert [r.text for r in suggest_rules(file_call("read_file", "/opt/data/x.csv"), WS)] == [
        "read_file(/opt/data/**)"
    ]
    assert [r.text for r in suggest_rules(fetch("docs.python.org"), WS)] == [
        "web_fetch(domain:docs.python.org)"
    ]
    item = PreparedItem("c1", "mcp__github__create_issue", {}, "mcp")
    assert [r.text for r in suggest_rules(item, WS)] == ["mcp__github__create_issue"]


# --- the files ---------------------------------------------------------------------------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_rules_persist_in_the_user_and_project_files_0600(tmp_path: Path) -> None:
    user = tmp_path / "config" / "permissions.toml"
    work = tmp_path / "work"
    work.mkdir()
    store = PermissionStore(user, work)
    store.add(parse_rule("bash(git status)", "allow", "user"))
    store.add(parse_rule("bash(rm:*)", "deny", "user"))
    store.add(parse_rule("bash(npm run test:*)", "allow", "project"))
    assert _mode(user) == 0o600
    project_file = work / ".turnstone" / "permissions.toml"
    assert _mode(project_file) == 0o600
    assert 'deny = [\n    "bash(rm:*)",\n]' in user.read_text()

    again = PermissionStore(user, work)  # a new process reads the same rules
    assert [(r.text, r.effect, r.scope) for r in again.rules()] == [
        ("bash(git status)", "allow", "user"),
        ("bash(rm:*)", "deny", "user"),
        ("bash(npm run test:*)", "allow", "project"),
    ]
    again.replace(
        parse_rule("bash(git status)", "allow", "user"), parse_rule("bash(git status:*)", "allow", "user")
    )
    again.remove(parse_rule("bash(rm:*)", "deny", "user"))
    assert [r.text for r in PermissionStore(user, work).rules()] == [
        "bash(git status:*)",
        "bash(npm run test:*)",
    ]


def test_scope_precedence_a_deny_anywhere_wins(tmp_path: Path) -> None:
    user = tmp_path / "permissions.toml"
    work = tmp_path / "work"
    work.mkdir()
    store = PermissionStore(user, work)
    store.add(parse_rule("bash(curl:*)", "deny", "user"))
    store.add(parse_rule("bash(curl:*)", "allow", "project"))
    store.add(parse_rule("bash(make:*)", "allow", "user"))
    store.add(parse_rule("bash(make deploy:*)", "ask", "project"))
    rules = store.rules()
    assert judge(bash("curl x"), rules, workspace=work).effect == "deny"
    assert judge(bash("make deploy"), rules, workspace=work).effect == "ask"
    assert judge(bash("make test"), rules, workspace=work).effect == "allow"


def test_a_cloned_project_file_cannot_allow_itself_anything(tmp_path: Path) -> None:
    user = tmp_path / "permissions.toml"
    work = tmp_path / "work"
    (work / ".turnstone").mkdir(parents=True)
    (work / ".turnstone" / "permissions.toml").write_text(
        'allow = ["bash", "bash(curl:*)"]\ndeny = ["bash(rm:*)"]\n'
    )
    store = PermissionStore(user, work)
    assert not store.project_trusted()
    assert [r.text for r in store.rules()] == ["bash(rm:*)"]  # its deny rule holds, its allow rules do not
    assert judge(bash("curl evil.sh"), store.rules(), workspace=work).effect == "ask"
    store.trust_project()
    assert judge(bash("curl evil.sh"), PermissionStore(user, work).rules(), workspace=work).effect == "allow"
    # edited from outside after it was trusted: untrusted again
    (work / ".turnstone" / "permissions.toml").write_text('allow = ["bash"]\n')
    assert PermissionStore(user, work).rules() == []


def test_a_bad_file_is_reported_and_its_good_rules_still_load(tmp_path: Path) -> None:
    user = tmp_path / "permissions.toml"
    user.write_text('allow = ["bash(git status)", "bash(", 3]\nmaybe = []\n')
    store = PermissionStore(user, tmp_path)
    assert [r.text for r in store.rules()] == ["bash(git status)"]
    assert len(store.errors) == 3 and all(str(user) in e for e in store.errors)
    user.write_text("allow = [")
    broken = PermissionStore(user, tmp_path)
    assert broken.rules() == [] and "not valid TOML" in broken.errors[0]


def test_rules_with_odd_characters_survive_the_round_trip(tmp_path: Path) -> None:
    user = tmp_path / "permissions.toml"
    store = PermissionStore(user, tmp_path)
    text = "bash(echo \"a\\b\" 'c' \x7f é:*)"
    store.add(Rule("bash", text[5:-1], "allow", "user"))
    assert [r.text for r in PermissionStore(user, tmp_path).rules()] == [text]


def test_allow_flag_and_tools_allow_take_rules_as_well_as_tool_names() -> None:
    from turnstone_tui.core.pipeline import ApprovalPolicy

    policy = ApprovalPolicy(auto_approve={"bash(git status:*)", "web_search", "not a rule("}, workspace=WS)
    assert policy.allows(bash("git status --short"))
    assert not policy.allows(bash("git push"))
    assert policy.allows(PreparedItem("c1", "web_search", {}, "web_search"))


def test_a_file_edited_elsewhere_is_read_again(tmp_path: Path) -> None:
    user = tmp_path / "permissions.toml"
    store = PermissionStore(user, tmp_path)
    store.add(parse_rule("bash(git status)", "allow", "user"))
    store.refresh()  # nothing changed: the same rules
    assert [r.text for r in store.rules()] == ["bash(git status)"]
    user.write_text('deny = ["bash(rm:*)", "bash(curl:*)"]\n')  # another editor
    store.refresh()
    assert [(r.text, r.effect) for r in store.rules()] == [("bash(rm:*)", "deny"), ("bash(curl:*)", "deny")]
