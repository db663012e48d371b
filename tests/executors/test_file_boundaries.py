"""File tools at the workspace boundary: symlinks resolved, reads outside asked, secret stores refused,
a file changed after the preview not clobbered. Scratch files only under tmp_path."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.executors.exec_helpers import execute, make_ctx, prepare
from turnstone_tui.executors.files import PREPARERS
from turnstone_tui.executors.search import PREPARERS as SEARCH


def layout(tmp_path: Path) -> tuple[Path, Path]:
    workspace, outside = tmp_path / "workspace", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "private.txt").write_text("outside text\n")
    (workspace / "inside.txt").write_text("inside text\n")
    return workspace, outside


async def test_reads_inside_the_workspace_are_auto_approved(tmp_path: Path) -> None:
    workspace, _ = layout(tmp_path)
    item = await prepare(PREPARERS, make_ctx(workspace), "read_file", path="inside.txt")
    assert item.error is None and item.needs_approval is False


@pytest.mark.parametrize("how", ["dotdot", "absolute", "symlink"])
async def test_reads_outside_the_workspace_need_approval_and_show_the_real_path(
    tmp_path: Path, how: str
) -> None:
    workspace, outside = layout(tmp_path)
    if how == "symlink":
        (workspace / "link.txt").symlink_to(outside / "private.txt")
        path = "link.txt"
    else:
        path = "../outside/private.txt" if how == "dotdot" else str(outside / "private.txt")
    item = await prepare(PREPARERS, make_ctx(workspace), "read_file", path=path)
    assert item.needs_approval is True
    assert "outside the workspace" in item.header and str(outside / "private.txt") in item.header
    assert "outside text" in (await execute(item)).text  # once approved, it reads


@pytest.mark.parametrize(
    "relative",
    [".env", "app/.env.production", "home/.ssh/id_ed25519", "home/.aws/credentials", "home/.netrc",
     "home/.config/turnstone/config.toml", "project/.git-credentials", "project/.netrc", "project/.pgpass",
     "project/.pypirc"],
)  # fmt: skip
async def test_secret_stores_are_refused(
    tmp_path: Path, relative: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    target = tmp_path / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("SECRET=sk-do-not-leak\n")
    ctx = make_ctx(tmp_path)
    item = await prepare(PREPARERS, ctx, "read_file", path=str(target))
    assert item.error is not None and "secret store" in item.error and item.execute is None
    write = await prepare(PREPARERS, ctx, "write_file", path=str(target), content="x")
    assert write.error is not None and "secret store" in write.error
    search = await prepare(SEARCH, ctx, "search", query="SECRET", path=str(target))
    assert search.error is not None and "secret store" in search.error


async def test_a_symlink_to_a_secret_store_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    key = tmp_path / "home" / ".ssh" / "id_rsa"
    key.parent.mkdir(parents=True)
    key.write_text("-----BEGIN KEY-----\n")
    (tmp_path / "innocent.txt").symlink_to(key)
    item = await prepare(PREPARERS, make_ctx(tmp_path), "read_file", path="innocent.txt")
    assert item.error is not None and "~/.ssh" in item.error


async def test_env_example_files_are_ordinary(tmp_path: Path) -> None:
    (tmp_path / ".env.example").write_text("API_KEY=\n")
    item = await prepare(PREPARERS, make_ctx(tmp_path), "read_file", path=".env.example")
    assert item.error is None


async def test_write_through_a_dangling_symlink_names_the_real_target(tmp_path: Path) -> None:
    workspace, outside = layout(tmp_path)
    (workspace / "notes.txt").symlink_to(outside / "not-yet-there.txt")
    item = await prepare(PREPARERS, make_ctx(workspace), "write_file", path="notes.txt", content="hi\n")
    assert item.needs_approval is True
    assert f"outside the workspace: {outside / 'not-yet-there.txt'}" in item.header


async def test_a_file_changed_after_the_preview_is_not_overwritten(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    await asyncio.to_thread(target.write_text, "v1\n")
    ctx = make_ctx(tmp_path)
    ctx.read_tracker.record(target)  # the model read it
    item = await prepare(PREPARERS, ctx, "write_file", path="f.txt", content="model's version\n")
    await asyncio.to_thread(target.write_text, "the user's edit\n")  # while the modal was open
    result = await execute(item)
    assert result.is_error and "changed on disk after the preview" in result.text
    assert await asyncio.to_thread(target.read_text) == "the user's edit\n"


@pytest.mark.parametrize("tool", ["write_file", "edit_file"])
async def test_a_folder_swapped_for_a_symlink_after_the_preview_is_not_written_through(
    tmp_path: Path, tool: str
) -> None:
    """Full-auto runs workspace edits and sandboxed commands unasked: a write prepared (and judged
    inside the workspace) for sub/new.txt, then `mv sub x; ln -s ~/.local/bin sub` by a command of
    the same batch, wrote the new file outside the workspace (the path was resolved only at prepare)."""
    workspace, outside = layout(tmp_path)
    sub = workspace / "sub"
    sub.mkdir()
    (sub / "known.txt").write_text("same text\n")
    (outside / "known.txt").write_text("same text\n")
    ctx = make_ctx(workspace)
    if tool == "write_file":
        item = await prepare(PREPARERS, ctx, "write_file", path="sub/new.txt", content="planted\n")
    else:
        ctx.read_tracker.record(sub / "known.txt")
        item = await prepare(
            PREPARERS, ctx, "edit_file", path="sub/known.txt", old_string="same", new_string="planted"
        )
    assert item.error is None and item.subject is not None and item.subject.workspace_edit
    sub.rename(workspace / "moved")
    sub.symlink_to(outside, target_is_directory=True)
    result = await execute(item)
    assert result.is_error and "now points" in result.text, result.text
    assert not (outside / "new.txt").exists()
    assert (outside / "known.txt").read_text() == "same text\n"


async def test_read_file_reads_the_sessions_own_plan_and_nothing_else_of_the_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """plan_agent's result names the plan file (``<data dir>/plans/<session>.md``): read_file reads
    that one file without asking, while the rest of the data dir (the database, other sessions'
    plans, a link planted at the plan's path) stays a refused secret store."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    ctx = make_ctx(workspace)
    plan = ctx.plan_path()
    assert "/home/.local/share/turnstone/" in str(plan)
    plan.parent.mkdir(parents=True)
    plan.write_text("# Plan v1\n\n1. Add the flag.\n")
    (plan.parent / "other-session.md").write_text("# someone else's plan\n")
    database = plan.parent.parent / "turnstone.db"
    database.write_text("SECRET=sk-do-not-leak\n")

    item = await prepare(PREPARERS, ctx, "read_file", path=str(plan))
    assert item.error is None and item.needs_approval is False
    assert "1. Add the flag." in (await execute(item)).text
    (workspace / "plan-link.md").symlink_to(plan)  # the same file by another name is still it
    linked = await prepare(PREPARERS, ctx, "read_file", path="plan-link.md")
    assert linked.error is None and "Add the flag" in (await execute(linked)).text

    for other in (plan.parent / "other-session.md", database):
        refused = await prepare(PREPARERS, ctx, "read_file", path=str(other))
        assert refused.error is not None and "secret store" in refused.error
    other_session = make_ctx(workspace, session_id="another")
    refused = await prepare(PREPARERS, other_session, "read_file", path=str(plan))
    assert refused.error is not None and "secret store" in refused.error
    write = await prepare(PREPARERS, ctx, "write_file", path=str(plan), content="x")
    assert write.error is not None and "secret store" in write.error  # read, not write

    plan.unlink()
    plan.symlink_to(database)  # a link planted at the plan's path does not open the database
    planted = await prepare(PREPARERS, ctx, "read_file", path=str(plan))
    assert planted.error is not None and "secret store" in planted.error


@pytest.mark.parametrize("tool", ["rg", "grep"])
async def test_a_directory_search_skips_the_secret_stores_inside_it(
    tmp_path: Path, tool: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """search is auto-approved and searches hidden files: searching the workspace (or the home
    directory) must not print a .env file or an ssh key found on the way (it printed them)."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    if tool == "grep":
        import turnstone_tui.executors.search as search_module

        real_which = search_module.shutil.which
        monkeypatch.setattr(search_module.shutil, "which", lambda n: None if n == "rg" else real_which(n))
    for relative in (".env", "app/.env.production", ".ssh/id_ed25519", ".aws/credentials", ".netrc",
                     ".config/gcloud/creds.json", ".config/turnstone/config.toml"):  # fmt: skip
        target = home / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("SECRET=sk-do-not-leak\n")
    (home / "app" / ".env.example").write_text("SECRET=placeholder\n")
    (home / "notes.txt").write_text("SECRET=ordinary text\n")
    for path in (".", str(home)):
        item = await prepare(SEARCH, make_ctx(home), "search", query="SECRET", path=path)
        result = await execute(item)
        assert "sk-do-not-leak" not in result.text, result.text
        assert "ordinary text" in result.text and "placeholder" in result.text


async def test_a_search_outside_the_workspace_needs_approval(tmp_path: Path) -> None:
    """read_file outside the workspace asks; search of another folder (~, /) read it all unasked."""
    workspace, outside = layout(tmp_path)
    item = await prepare(SEARCH, make_ctx(workspace), "search", query="text", path=str(outside))
    assert item.needs_approval is True and "outside the workspace" in item.header
    inside = await prepare(SEARCH, make_ctx(workspace), "search", query="text")
    assert inside.needs_approval is False


@pytest.mark.parametrize("name", ["environ", "mem"])
async def test_the_apps_own_process_files_are_secret_stores(tmp_path: Path, name: str) -> None:
    """/proc/self/environ holds the app's API keys; read_file asked for it like any outside file."""
    ctx = make_ctx(tmp_path)
    for path in (
        f"/proc/self/{name}",
        f"/proc/{os.getpid()}/{name}",
        f"/proc/self/task/{os.getpid()}/{name}",
    ):
        item = await prepare(PREPARERS, ctx, "read_file", path=path)
        assert item.error is not None and "secret store" in item.error, path
        search = await prepare(SEARCH, ctx, "search", query="KEY", path=path)
        assert search.error is not None and "secret store" in search.error, path
    search = await prepare(SEARCH, ctx, "search", query="KEY", path="/proc")
    assert search.error is not None and "secret store" in search.error


@pytest.mark.parametrize(
    "relative",
    [".git/config", ".git/hooks/pre-commit", ".git/commondir", "sub/.git/config", ".gitmodules", "sub/.git"],
)
async def test_edits_to_what_git_runs_are_not_plain_workspace_edits(tmp_path: Path, relative: str) -> None:
    """accept-edits and full-auto run workspace edits unasked: a hook or core.fsmonitor written there
    runs outside the sandbox the next time the user runs git, so those edits ask; so does anything
    in a .git (a commondir naming another config, a nested repository) and .gitmodules (before:
    only .git/config and .git/hooks, and .git/commondir ran core.fsmonitor from elsewhere)."""
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / ".git" / "config").write_text("[core]\n")
    ctx = make_ctx(tmp_path)
    write = await prepare(PREPARERS, ctx, "write_file", path=relative, content="planted\n")
    if relative == ".git/config":
        ctx.read_tracker.record(tmp_path / relative)
        write = await prepare(PREPARERS, ctx, "write_file", path=relative, content="planted\n")
    assert write.error is None and write.subject is not None and not write.subject.workspace_edit
    ordinary = await prepare(PREPARERS, ctx, "write_file", path="src/git.txt", content="x\n")
    assert ordinary.subject is not None and ordinary.subject.workspace_edit


GIT_CONFIG = """[core]
\trepositoryformatversion = 0
[remote "origin"]
\turl = https://alice:ghp_TOKEN1abc@github.com/a/b.git
\tfetch = +refs/heads/*:refs/remotes/origin/*
[http]
\textraHeader = Authorization: Bearer TOKEN2abc
[url "https://oauth2:TOKEN3abc@gitlab.com/"]
\tinsteadOf = https://gitlab.com/
[github]
\ttoken = TOKEN4abc
"""


def repo_with_credentials(tmp_path: Path) -> Path:
    workspace = tmp_path / "repo"
    (workspace / ".git").mkdir(parents=True)
    (workspace / ".git" / "config").write_text(GIT_CONFIG)
    return workspace


async def test_git_config_credentials_are_redacted_for_read_file_and_diff_file(tmp_path: Path) -> None:
    """A remote https://user:TOKEN@host, an http.extraHeader or a github.token in .git/config
    reached the model through read_file (the file is an ordinary workspace file). read_file now
    shows the config with each credential REDACTED and says so; diff_file against a guess of the
    real content no longer answers the guess (it compares with the redacted text)."""
    workspace = repo_with_credentials(tmp_path)
    ctx = make_ctx(workspace)
    result = await execute(await prepare(PREPARERS, ctx, "read_file", path=".git/config"))
    assert "TOKEN" not in result.text, result.text
    assert "url = https://alice:REDACTED@github.com/a/b.git" in result.text
    assert "extraHeader = Authorization: REDACTED" in result.text and "token = REDACTED" in result.text
    assert "fetch = +refs/heads/*:refs/remotes/origin/*" in result.text  # the rest as it is
    assert "4 line(s) with a credential" in result.text
    guess = await prepare(PREPARERS, ctx, "diff_file", path_a=".git/config", content_b=GIT_CONFIG)
    answer = (await execute(guess)).text
    assert "No differences" not in answer and "-\turl = https://alice:REDACTED@" in answer
    (workspace / "plain.cfg").write_text("url = https://alice:notagitconfig@example.com\n")
    plain = await execute(await prepare(PREPARERS, ctx, "read_file", path="plain.cfg"))
    assert "notagitconfig" in plain.text  # only git config files are redacted


async def test_git_config_credentials_cannot_be_probed_through_search_or_edits(tmp_path: Path) -> None:
    """search (a regex, the model's) and edit_file (old_string found or not) answered guesses about
    the token one character at a time. A git config's lines holding a credential are dropped from
    search results with nothing telling they matched; edit_file and write_file refuse such a file
    (a config without credentials is edited as before)."""
    workspace = repo_with_credentials(tmp_path)
    ctx = make_ctx(workspace)
    right = await execute(await prepare(SEARCH, ctx, "search", query="ghp_TOKEN1", path=".git"))
    wrong = await execute(await prepare(SEARCH, ctx, "search", query="ghp_WRONGX", path=".git"))
    assert right.text.replace("ghp_TOKEN1", "Q") == wrong.text.replace("ghp_WRONGX", "Q"), right.text
    found = await execute(await prepare(SEARCH, ctx, "search", query="fetch|url|Bearer", path=".git/config"))
    assert "fetch = +refs/heads" in found.text and "TOKEN" not in found.text and "url =" not in found.text
    await execute(await prepare(PREPARERS, ctx, "read_file", path=".git/config"))
    edit = await prepare(PREPARERS, ctx, "edit_file", path=".git/config", old_string="ghp_T", new_string="x")
    write = await prepare(PREPARERS, ctx, "write_file", path=".git/config", content="[core]\n")
    for item in (edit, write):
        assert item.error is not None and "holds a credential" in item.error, item.error
    (workspace / ".git" / "config").write_text("[core]\n\tbare = false\n")
    await execute(await prepare(PREPARERS, ctx, "read_file", path=".git/config"))
    plain = await prepare(
        PREPARERS, ctx, "edit_file", path=".git/config", old_string="false", new_string="false"
    )
    assert plain.error is None or "holds a credential" not in plain.error


async def test_a_directory_search_does_not_tell_that_a_secret_line_matched(tmp_path: Path) -> None:
    """The note '[N matching lines in secret stores not shown]' (and the count past the shown lines)
    told whether the model's regex matched a line of .env: a guess at a time, the key came out."""
    from turnstone_tui.executors.search import MatchSink

    workspace, _ = layout(tmp_path)
    (workspace / ".env").write_text("API_KEY=sk-live-abc\n")
    ctx = make_ctx(workspace)
    right = await execute(await prepare(SEARCH, ctx, "search", query="API_KEY=sk-live", path="."))
    wrong = await execute(await prepare(SEARCH, ctx, "search", query="API_KEY=sk-test", path="."))
    assert right.text.replace("live", "test") == wrong.text, right.text

    def quick(name: str) -> str:
        return "secret" if name.endswith(".env") else ""

    sink = MatchSink(max_lines=2, is_secret=lambda n: n.endswith(".env"), quick=quick)
    sink.feed("a.txt\x001:x\nb.txt\x001:x\nc.txt\x001:x\nd/.env\x001:API_KEY=sk\n")
    assert sink.total == 3  # the .env line past the shown ones is not counted either
