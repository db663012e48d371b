"""The OS sandbox with real bubblewrap: what a sandboxed bash / math command can and cannot do.

Tests that need bubblewrap skip only when it genuinely cannot run on this machine (the probe says
why); everything else runs either way. Workspaces live under /tmp on purpose: the sandbox's private
/tmp must not hide them. SAFETY: escape attempts only write to scratch dirs under the test's tmp_path.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
import time
from pathlib import Path

import psutil
import pytest

from tests.executors.exec_helpers import execute, make_ctx, prepare, run
from turnstone_tui.config import Config, ConfigError, parse_config
from turnstone_tui.executors.bash import PREPARERS as BASH
from turnstone_tui.executors.math import PREPARERS as MATH
from turnstone_tui.sandbox import SandboxPolicy, plan, support

pytestmark = pytest.mark.timeout(120)
SUPPORT = support()
needs_bwrap = pytest.mark.skipif(not SUPPORT.available, reason=f"sandbox unavailable: {SUPPORT.reason}")


def sandboxed_config(network: str = "off") -> Config:
    config = Config()
    config.sandbox.mode = "auto"
    config.sandbox.network = network
    return config


def dirs(tmp_path: Path) -> tuple[Path, Path]:
    workspace, outside = tmp_path / "workspace", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    return workspace, outside


class Listener:
    """A TCP server on the host's loopback that counts the connections it gets."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


# --- settings, either way -------------------------------------------------------------------------


def test_sandbox_settings_are_validated() -> None:
    cfg = parse_config(
        {"sandbox": {"mode": "off", "network": "on", "auto_approve": True}, "env": {"pass": ["X"]}}
    )
    assert (cfg.sandbox.mode, cfg.sandbox.network, cfg.sandbox.auto_approve) == ("off", "on", True)
    assert cfg.env.passthrough == ["X"]
    with pytest.raises(ConfigError, match="sandbox.mode"):
        parse_config({"sandbox": {"mode": "strict"}})
    with pytest.raises(ConfigError, match="allowlists are not supported"):
        parse_config({"sandbox": {"network": "github.com"}})


def test_mode_off_runs_unconfined_and_says_so(tmp_path: Path) -> None:
    run_plan = plan(SandboxPolicy(mode="off"), ["bash", "-c", "true"], cwd=tmp_path)
    assert run_plan.argv == ["bash", "-c", "true"] and not run_plan.sandboxed
    assert "not sandboxed" in run_plan.note


def test_auto_mode_uses_bwrap_exactly_when_it_can_run(tmp_path: Path) -> None:
    run_plan = plan(SandboxPolicy(), ["bash", "-c", "true"], cwd=tmp_path)
    assert run_plan.sandboxed == SUPPORT.available
    if not SUPPORT.available:
        assert SUPPORT.reason in run_plan.note  # the fallback message says why
    else:
        argv = run_plan.argv
        # the workspace is bound after the private /tmp, so a workspace under /tmp stays visible
        assert argv.index("--bind") > argv.index("--tmpfs")
        assert "--unshare-net" in argv and "--die-with-parent" in argv and "--unshare-pid" in argv


SECRETS = {
    "DATABASE_URL": "postgres://u:pw@db/x", "PGPASSWORD": "pw1", "MYSQL_PWD": "pw2", "FOO_APIKEY": "k1",
    "SECRET_KEY_BASE": "k2", "SENTRY_DSN": "https://k@sentry.invalid/1", "SLACK_WEBHOOK_URL": "https://hooks.invalid/x",
    "NPM_CONFIG__AUTH": "k3", "OPENAI_API_KEY": "sk-k4", "ANTHROPIC_API_KEY": "sk-ant-k5", "GITHUB_TOKEN": "ghp_k6",
    "AWS_SECRET_ACCESS_KEY": "k7", "AWS_ACCESS_KEY_ID": "k8", "REDIS_URL": "redis://:pw@r/0", "DOCKER_AUTH_CONFIG": "k9",
    "TWINE_PASSWORD": "k10", "HF_TOKEN": "hf_k11", "CI_JOB_JWT": "k12", "VAULT_ADDR_AND_TOKEN": "k13", "MY_PASS": "k14",
}  # fmt: skip


async def test_bash_sees_none_of_twenty_secret_looking_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    result = await run(BASH, make_ctx(tmp_path), "bash", command="env")
    assert "PATH=" in result.text
    for name, value in SECRETS.items():
        assert name not in result.text and value not in result.text


async def test_env_pass_lets_a_named_variable_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgres://dev")
    monkeypatch.setenv("PGPASSWORD", "still-hidden")
    ctx = make_ctx(tmp_path)
    ctx.config.env.passthrough = ["DATABASE_URL"]
    result = await run(BASH, ctx, "bash", command="env")
    assert "DATABASE_URL=postgres://dev" in result.text and "still-hidden" not in result.text


# --- bash in the sandbox ---------------------------------------------------------------------------


@needs_bwrap
async def test_workspace_under_tmp_is_visible_and_writable(tmp_path: Path) -> None:
    workspace, _ = dirs(tmp_path)
    (workspace / "input.txt").write_text("from the host\n")
    ctx = make_ctx(workspace, config=sandboxed_config())
    result = await run(BASH, ctx, "bash", command="cat input.txt && echo made > output.txt && pwd")
    assert "from the host" in result.text and str(workspace) in result.text
    assert (workspace / "output.txt").read_text() == "made\n"


@needs_bwrap
async def test_a_write_outside_the_workspace_does_not_reach_the_host(tmp_path: Path) -> None:
    workspace, outside = dirs(tmp_path)
    ctx = make_ctx(workspace, config=sandboxed_config())
    target = outside / "escaped.txt"
    command = f"echo x > {target}; echo LISTING; ls {workspace.parent}; echo END"
    result = await run(BASH, ctx, "bash", command=command)
    assert not target.exists()
    # the private /tmp holds only the workspace: the host's other files under /tmp are not there
    listing = result.text.split("LISTING\n", 1)[1].split("END", 1)[0].split()
    assert listing == ["workspace"]


@needs_bwrap
async def test_the_system_is_mounted_read_only(tmp_path: Path) -> None:
    """Read from the mount table (no write attempt): / is read-only, the workspace read-write."""
    workspace, _ = dirs(tmp_path)
    ctx = make_ctx(workspace, config=sandboxed_config())
    command = "awk '{print $5, $6}' /proc/self/mountinfo"
    result = await run(BASH, ctx, "bash", command=command)
    mounts = dict(line.split(" ", 1) for line in result.text.splitlines() if line.startswith("/"))
    assert mounts["/"].startswith("ro")
    assert mounts[str(workspace)].startswith("rw")
    assert mounts["/tmp"].startswith("rw")  # the private tmpfs


@needs_bwrap
@pytest.mark.parametrize("network", ["off", "on"])
async def test_network_off_means_unreachable(tmp_path: Path, network: str) -> None:
    workspace, _ = dirs(tmp_path)
    listener = Listener()
    try:
        ctx = make_ctx(workspace, config=sandboxed_config(network))
        command = f"echo hi > /dev/tcp/127.0.0.1/{listener.port} && echo CONNECTED || echo REFUSED"
        result = await run(BASH, ctx, "bash", command=command)
        deadline = time.monotonic() + 5
        while network == "on" and listener.connections == 0 and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    finally:
        listener.close()
    if network == "off":
        assert "REFUSED" in result.text and listener.connections == 0
    else:
        assert "CONNECTED" in result.text and listener.connections == 1


@needs_bwrap
async def test_a_child_cannot_read_the_agents_environ_or_cmdline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_ONLY_SECRET", "sk-agent-only")
    workspace, _ = dirs(tmp_path)
    ctx = make_ctx(workspace, config=sandboxed_config())
    me = os.getpid()
    command = (
        f"cat /proc/{me}/environ; cat /proc/{me}/cmdline; for p in /proc/[0-9]*; do cat $p/environ $p/cmdline; done; "
        "echo; ls /proc | grep -c '^[0-9]'"
    )
    result = await run(BASH, ctx, "bash", command=command)
    assert f"/proc/{me}/environ: No such file" in result.text
    assert "sk-agent-only" not in result.text
    own_args = await asyncio.to_thread(lambda: Path(f"/proc/{me}/cmdline").read_bytes().decode().split("\0"))
    assert max(own_args, key=len) not in result.text  # the agent's command line is not readable either
    counts = [line for line in result.text.splitlines() if line.strip().isdigit()]
    assert counts and int(counts[-1]) < 10  # only the sandbox's own few processes


@needs_bwrap
async def test_timeout_kills_everything_in_the_sandbox(tmp_path: Path) -> None:
    workspace, _ = dirs(tmp_path)
    ctx = make_ctx(workspace, config=sandboxed_config())
    marker = "9753"  # a unique sleep length, to find leftovers on the host
    item = await prepare(BASH, ctx, "bash", command=f"(setsid sleep {marker} &) ; sleep {marker}", timeout=2)
    result = await execute(item)
    assert "timed out" in result.text

    def leftovers() -> list[int]:
        found = []
        for proc in psutil.process_iter(["cmdline", "status"]):
            cmd = proc.info["cmdline"] or []
            if cmd[:2] == ["sleep", marker] and proc.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(proc.pid)
        return found

    deadline = time.monotonic() + 15
    while leftovers() and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.1)
    assert leftovers() == []


async def test_auto_approve_only_skips_approval_when_sandboxed(tmp_path: Path) -> None:
    config = sandboxed_config()
    config.sandbox.auto_approve = True
    item = await prepare(BASH, make_ctx(tmp_path, config=config), "bash", command="ls")
    assert item.needs_approval is (not SUPPORT.available)
    config.sandbox.mode = "off"
    item = await prepare(BASH, make_ctx(tmp_path, config=config), "bash", command="ls")
    assert item.needs_approval is True


# --- math in the sandbox -----------------------------------------------------------------------------

# The audit hook's re-entrancy flag is a one-element list in a closure: a gc walk can flip it and
# switch the in-process hook off. In the OS sandbox that changes nothing.
HOOK_OFF = (
    "import gc\nfor o in gc.get_objects():\n    if type(o) is list and o == [False]:\n        o[0] = True\n"
)


@needs_bwrap
@pytest.mark.parametrize(
    "escape",
    [
        "open({target!r}, 'w').write('x')",
        "import sqlite3\nsqlite3.connect({target!r}).execute('create table t(x)')",
        "import os\nos.mkfifo({target!r})",
    ],
)
async def test_math_escapes_fail_in_the_sandbox(tmp_path: Path, escape: str) -> None:
    workspace, outside = dirs(tmp_path)
    target = str(outside / "escaped")
    code = HOOK_OFF + escape.format(target=target) + "\nprint('after')"
    await run(MATH, make_ctx(workspace, config=sandboxed_config()), "math", code=code)
    assert await asyncio.to_thread(lambda: list(outside.iterdir())) == []


@needs_bwrap
async def test_math_has_no_network_even_with_the_hook_off(tmp_path: Path) -> None:
    workspace, _ = dirs(tmp_path)
    listener = Listener()
    try:
        code = (
            HOOK_OFF
            + f"import socket\ns = socket.create_connection(('127.0.0.1', {listener.port}), timeout=3)"
        )
        result = await run(
            MATH, make_ctx(workspace, config=sandboxed_config(network="on")), "math", code=code
        )
        await asyncio.sleep(0.3)
    finally:
        listener.close()
    assert result.is_error and listener.connections == 0


@needs_bwrap
async def test_math_still_computes_in_the_sandbox(tmp_path: Path) -> None:
    workspace, _ = dirs(tmp_path)
    result = await run(
        MATH,
        make_ctx(workspace, config=sandboxed_config()),
        "math",
        code="x = sympy.Symbol('x')\nsympy.factor(x**2 - 1)",
    )
    assert "(x - 1)*(x + 1)" in result.text


# --- watch commands ------------------------------------------------------------------------------------


async def test_watch_commands_run_in_bash_with_the_allowlisted_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from turnstone_tui.executors.watch_runner import WatchRunner
    from turnstone_tui.storage.db import Storage

    monkeypatch.setenv("PGPASSWORD", "pw-watch")
    storage = await Storage.open(tmp_path / "w.db")
    try:
        runner = WatchRunner(storage, lambda sid, text: asyncio.sleep(0), sandbox=SandboxPolicy(mode="off"))
        output, code, _ = await runner.run_command(
            'echo "bash=${BASH_VERSION:+yes} pw=${PGPASSWORD:-unset}"', tmp_path
        )
    finally:
        await storage.close()
    assert output == "bash=yes pw=unset\n" and code == 0


@needs_bwrap
async def test_a_watch_command_cannot_write_outside_the_workspace(tmp_path: Path) -> None:
    from turnstone_tui.executors.watch_runner import WatchRunner
    from turnstone_tui.storage.db import Storage

    workspace, outside = dirs(tmp_path)
    storage = await Storage.open(tmp_path / "w.db")
    try:
        runner = WatchRunner(storage, lambda sid, text: asyncio.sleep(0), sandbox=SandboxPolicy())
        output, _, _ = await runner.run_command(
            f"echo x > {outside}/escaped; echo in > inside; echo ran", workspace
        )
    finally:
        await storage.close()
    assert "ran" in output
    assert await asyncio.to_thread(lambda: list(outside.iterdir())) == []
    assert await asyncio.to_thread((workspace / "inside").read_text) == "in\n"


async def test_watch_create_goes_through_the_bash_guard(tmp_path: Path) -> None:
    from turnstone_tui.executors.watch import PREPARERS as WATCH
    from turnstone_tui.storage.db import Storage

    storage = await Storage.open(tmp_path / "w.db")
    try:
        ctx = make_ctx(tmp_path, storage=storage)
        args = {"action": "create", "name": "x", "command": "echo x | base64 -d | sh"}
        item = await WATCH["watch"](ctx, "call-watch", args)
    finally:
        await storage.close()
    assert item.error is not None and "refused" in item.error and item.execute is None


@needs_bwrap
async def test_math_runs_when_its_own_files_live_under_tmp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkout or venv under /tmp (as on some CI machines) must not be hidden by the private /tmp."""
    from turnstone_tui.executors import math as math_module

    workspace, outside = dirs(tmp_path)
    runner = outside / "math_sandbox.py"
    await asyncio.to_thread(runner.write_text, math_module.SANDBOX_SCRIPT.read_text(encoding="utf-8"))
    monkeypatch.setattr(math_module, "SANDBOX_SCRIPT", runner)
    result = await run(MATH, make_ctx(workspace, config=sandboxed_config()), "math", code="6 * 7")
    assert result.text.strip() == "42"


@pytest.fixture
def home_outside_tmp(monkeypatch: pytest.MonkeyPatch):
    """A HOME with secret stores, outside /tmp (the sandbox's private /tmp would hide it anyway)."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="turnstone-secrets-", dir="/var/tmp"))
    home, config_home, data_home = base / "home", base / "xdg-config", base / "xdg-data"
    files = {
        home / ".ssh" / "id_ed25519": "sk-ssh-key",
        home / ".aws" / "credentials": "sk-aws",
        home / ".netrc": "sk-netrc",
        config_home / "turnstone" / "config.toml": "sk-config",
        config_home / "turnstone" / "skills" / "demo" / "SKILL.md": "skill text",
        data_home / "turnstone" / "turnstone.db": "sk-database",
        base / "custom.toml": "sk-custom-config",
        base / "ordinary.txt": "ordinary text",
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config_home))
    monkeypatch.setenv("XDG_DATA_HOME", str(data_home))
    yield base, files
    shutil.rmtree(base, ignore_errors=True)


@needs_bwrap
async def test_sandboxed_commands_cannot_read_the_secret_stores(
    tmp_path: Path, home_outside_tmp: tuple[Path, dict[Path, str]]
) -> None:
    """In full-auto mode sandboxed commands run unasked: `cat ~/.ssh/id_ed25519` or turnstone's own
    config (API keys) read them into the conversation while read_file refused the same files (the
    sandbox bound the whole filesystem read-only). Now they are empty; the rest stays readable."""
    base, files = home_outside_tmp
    workspace, _ = dirs(tmp_path)
    config = sandboxed_config()
    config.path = base / "custom.toml"
    ctx = make_ctx(workspace, config=config)
    command = (
        " ; ".join(f"cat {path}" for path in files) + f" ; echo LS; ls -A {base / 'home' / '.ssh'}; echo END"
    )
    result = await run(BASH, ctx, "bash", command=command)
    assert "sk-" not in result.text, result.text
    assert result.text.split("LS\n", 1)[1].split("END", 1)[0].strip() == ""  # the folder looks empty
    assert "skill text" in result.text and "ordinary text" in result.text
    for path, text in files.items():  # the host's files are untouched
        assert path.read_text() == text + "\n"


async def test_read_file_refuses_turnstones_dirs_where_xdg_puts_them(
    tmp_path: Path, home_outside_tmp: tuple[Path, dict[Path, str]]
) -> None:
    """path_policy named ~/.config/turnstone only: with $XDG_CONFIG_HOME set, the real config
    (API keys) was an ordinary file outside the workspace."""
    from turnstone_tui.executors.files import PREPARERS as FILES

    _, files = home_outside_tmp
    ctx = make_ctx(tmp_path)
    for path in files:
        if "/turnstone/" in str(path):
            item = await prepare(FILES, ctx, "read_file", path=str(path))
            assert item.error is not None and "secret store" in item.error, path


class UnixListener:
    """A unix-socket server on the host that counts the connections it gets."""

    def __init__(self, path: Path | str) -> None:  # a str starting with NUL: an abstract address
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()


UNIX_PROBE = (
    "import socket,sys\n"
    "for a in sys.argv[1:]:\n"
    "    try:\n"
    "        s = socket.socket(socket.AF_UNIX); s.connect(a.replace('@', chr(0), 1)); print('CONNECTED', a)\n"
    "    except OSError as e: print('REFUSED', a, e.strerror)\n"
)


async def _wait_for(listener: UnixListener, count: int) -> None:
    deadline = time.monotonic() + 5
    while listener.connections < count and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.05)


@needs_bwrap
async def test_sandboxed_commands_cannot_reach_the_session_bus_or_other_user_services(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only bind does not stop connect() on a unix socket: through the D-Bus session bus in
    $XDG_RUNTIME_DIR (systemd-run --user ...) a sandboxed command could start a process outside the
    sandbox. The runtime dir is hidden; so is any other socket (test below). Without the sandbox
    the same probe reaches both (it works)."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="turnstone-run-", dir="/var/tmp"))
    try:
        runtime = base / "run-user"
        runtime.mkdir(mode=0o700)
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
        bus, other = UnixListener(runtime / "bus"), UnixListener(base / "other.sock")
        try:
            workspace, _ = dirs(tmp_path)
            (workspace / "probe.py").write_text(UNIX_PROBE)
            command = f"python3 probe.py {runtime / 'bus'} {base / 'other.sock'}"
            result = await run(BASH, make_ctx(workspace, config=sandboxed_config()), "bash", command=command)
            unconfined = Config()
            unconfined.sandbox.mode = "off"
            control = await run(BASH, make_ctx(workspace, config=unconfined), "bash", command=command)
            await _wait_for(other, 1)
        finally:
            bus.close()
            other.close()
        assert "CONNECTED" not in result.text, result.text
        assert control.text.count("CONNECTED") == 2 and bus.connections == other.connections == 1, (
            control.text
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)


@needs_bwrap
@pytest.mark.parametrize("network", ["off", "on"])
async def test_no_unix_socket_of_the_host_is_reachable_from_the_sandbox(tmp_path: Path, network: str) -> None:
    """Hiding sockets by list left every other host service reachable from a sandboxed command
    (/run/postgresql, /var/run/*.sock, a socket in the workspace itself and, with the network on,
    abstract sockets such as X11's). The sandbox now denies unix sockets themselves (seccomp):
    a listener the test creates in the workspace, and an abstract one, get no connection; a
    datagram socketpair (sendto any path) and io_uring (sockets past seccomp) are refused too,
    while stream socketpairs (asyncio) and TCP on the loopback still work."""
    import uuid

    workspace, _ = dirs(tmp_path)
    abstract = f"@turnstone-test-{uuid.uuid4().hex}"
    in_workspace, hidden = UnixListener(workspace / "host.sock"), UnixListener(abstract.replace("@", "\0", 1))
    probe = UNIX_PROBE + (
        "import asyncio, ctypes, socket\n"
        "try: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); print('DGRAM-PAIR')\n"
        "except OSError as e: print('NO-DGRAM-PAIR', e.strerror)\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print('IO_URING', libc.syscall(425, 1, None), ctypes.get_errno())\n"
        "a, b = socket.socketpair(); a.send(b'x'); print('STREAM-PAIR', b.recv(1))\n"
        "asyncio.run(asyncio.sleep(0)); print('ASYNCIO')\n"
        "t = socket.create_server(('127.0.0.1', 0)); socket.create_connection(t.getsockname()); print('TCP')\n"
    )
    try:
        (workspace / "probe.py").write_text(probe)
        ctx = make_ctx(workspace, config=sandboxed_config(network))
        result = await run(
            BASH, ctx, "bash", command=f"python3 probe.py {workspace / 'host.sock'} {abstract}"
        )
        await asyncio.sleep(0.3)
    finally:
        in_workspace.close()
        hidden.close()
    assert "CONNECTED" not in result.text and in_workspace.connections == hidden.connections == 0, result.text
    assert result.text.count("REFUSED") == 2 and "Permission denied" in result.text, result.text
    assert "NO-DGRAM-PAIR" in result.text and "IO_URING -1 13" in result.text, result.text
    assert "STREAM-PAIR b'x'" in result.text and "ASYNCIO" in result.text and "TCP" in result.text


@needs_bwrap
async def test_four_sandboxed_commands_start_bwrap_directly_each_with_the_filter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command's argv opens the seccomp filter through a /bin/sh launcher in front of bwrap (an
    MCP client library starts it as it is); the agent's own runner starts bwrap itself and passes it
    the filter on a descriptor of its own, one per command (four commands starting together each
    read the whole filter), closed in the agent once the command started. Each of the four is
    still denied a unix socket; nothing of the filter's descriptors is left open in the agent."""
    import turnstone_tui.executors.proc_group as proc_group

    started: list[tuple[tuple[str, ...], tuple[int, ...]]] = []
    spawn = asyncio.create_subprocess_exec

    async def recording(*argv: str, **kwargs: object) -> asyncio.subprocess.Process:
        started.append((argv, tuple(kwargs.get("pass_fds", ()))))  # type: ignore[arg-type]
        return await spawn(*argv, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(proc_group.asyncio, "create_subprocess_exec", recording)
    workspace, _ = dirs(tmp_path)
    ctx = make_ctx(workspace, config=sandboxed_config())
    probe = "python3 -c 'import socket; socket.socket(socket.AF_UNIX)' 2>&1 | tail -n 1; echo done-{i}"
    results = await asyncio.gather(*(run(BASH, ctx, "bash", command=probe.format(i=i)) for i in range(4)))
    for i, result in enumerate(results):
        assert "PermissionError" in result.text and f"done-{i}" in result.text, result.text
    assert len(started) == 4
    for argv, fds in started:
        assert Path(argv[0]).name == "bwrap", argv
        assert len(fds) == 1 and argv[argv.index("--seccomp") + 1] == str(fds[0]), argv
        with contextlib.suppress(FileNotFoundError):  # closed, or its number reused since
            assert "turnstone-seccomp" not in os.readlink(f"/proc/self/fd/{fds[0]}")


def test_only_a_confined_argv_with_the_filter_loses_its_launcher(tmp_path: Path) -> None:
    from turnstone_tui.sandbox.seccomp import FD, launcher, without_launcher

    filter_file = tmp_path / "filter.bpf"
    filter_file.write_bytes(b"x" * 8)
    assert without_launcher(["bash", "-c", "echo --seccomp 9"]) is None
    assert without_launcher(["bwrap", "--seccomp", str(FD), "--", "true"]) is None
    # the command's own "--seccomp" (after bwrap's "--") is never taken for bwrap's
    assert without_launcher([*launcher(filter_file), "bwrap", "--", "x", "--seccomp", str(FD)]) is None
    argv, fd = without_launcher(
        [*launcher(filter_file), "bwrap", "--seccomp", str(FD), "--", "x", "--seccomp", "9"]
    )
    try:
        assert argv == ["bwrap", "--seccomp", str(fd), "--", "x", "--seccomp", "9"]
        assert os.read(fd, 100) == b"x" * 8
    finally:
        os.close(fd)


def test_the_seccomp_filter_is_a_valid_program_for_both_architectures() -> None:
    """Every jump lands inside the program and it ends in a return (the kernel refuses it otherwise:
    aarch64 is not run here, so its program is checked by shape)."""
    import struct

    from turnstone_tui.sandbox.seccomp import RET_K, program

    for machine in ("x86_64", "aarch64"):
        code = program(machine)
        assert code is not None and len(code) % 8 == 0
        ops = [struct.unpack("=HBBI", code[i : i + 8]) for i in range(0, len(code), 8)]
        assert ops[-1][0] == RET_K
        for pc, (op, jt, jf, _) in enumerate(ops):
            if op & 0x07 == 0x05:  # a jump
                assert pc + 1 + max(jt, jf) < len(ops)
    assert program("riscv64") is None


def test_a_killed_app_leaves_no_seccomp_file_behind(tmp_path: Path) -> None:
    """The filter bwrap reads was a file in a temp dir removed at exit: every killed app left a
    turnstone-seccomp-* folder in /tmp. It is a memory file now, gone with the process; the path
    still reads back the program while the process lives."""
    import signal
    import subprocess
    import sys

    code = (
        "import os, signal\n"
        "from turnstone_tui.sandbox.seccomp import program, program_file\n"
        "path = program_file()\n"
        "assert path is not None and path.read_bytes() == program(), path\n"
        "print(path, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert done.stdout.strip(), done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_hidden_folder_holding_the_workspace_is_not_hidden() -> None:
    """$XDG_RUNTIME_DIR (or a secret dir) that contains the working directory is left alone."""
    from turnstone_tui.sandbox import confine

    argv = confine(
        ["true"],
        cwd=Path("/var/tmp/run/ws"),
        writable=[],
        network=False,
        hidden=([Path("/var/tmp/run"), Path("/var/tmp/other")], [], []),
    )
    assert "/var/tmp/other" in argv and "/var/tmp/run" not in argv


@needs_bwrap
async def test_a_sandboxed_command_cannot_plant_git_hooks_or_config(tmp_path: Path) -> None:
    """What a sandboxed command (unasked in full-auto) leaves in .git runs outside the sandbox the
    next time the user runs git. Read-only .git/config and .git/hooks were not enough: .git/commondir
    (git then reads core.fsmonitor from a folder the command made), a renamed .git replaced by a
    '.git' file naming such a folder, or a gitlink added to the index for a nested repository whose
    own config holds core.fsmonitor. The whole .git (and each submodule's) is now read-only and
    cannot be renamed; git status / log / diff still work in the sandbox."""
    import subprocess

    workspace, _ = dirs(tmp_path)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(workspace)]
    await asyncio.to_thread(subprocess.run, [*git, "init", "-q"], check=True)
    (workspace / "a.txt").write_text("one\n")
    await asyncio.to_thread(subprocess.run, [*git, "add", "."], check=True)
    await asyncio.to_thread(subprocess.run, [*git, "commit", "-qm", "first"], check=True)
    (workspace / "a.txt").write_text("two\n")
    before = {p: p.read_bytes() for p in (workspace / ".git").rglob("*") if p.is_file()}
    ctx = make_ctx(workspace, config=sandboxed_config())
    attempts = [
        "echo '[core] fsmonitor = planted' >> .git/config",
        "echo planted > .git/hooks/pre-commit",
        "echo ../evil > .git/commondir",
        "mv .git .old",
        "git update-index --add --cacheinfo 160000,0123456789012345678901234567890123456789,nested",
    ]
    command = "; ".join(f"{a} && echo DONE-{i}" for i, a in enumerate(attempts))
    command += "; echo STATUS; git status --short; git log --oneline; git diff --stat"
    result = await run(BASH, ctx, "bash", command=command)
    assert "DONE-" not in result.text, result.text
    after = {p: p.read_bytes() for p in (workspace / ".git").rglob("*") if p.is_file()}
    assert after == before and not (workspace / ".old").exists()
    assert "M a.txt" in result.text and "first" in result.text and "1 file changed" in result.text


@needs_bwrap
async def test_sandbox_writable_naming_dot_git_lets_git_commit_in_the_sandbox(tmp_path: Path) -> None:
    """The opt-in: [sandbox] writable = ["<repo>/.git"] leaves that .git writable (git add / commit)."""
    import subprocess

    workspace, _ = dirs(tmp_path)
    await asyncio.to_thread(subprocess.run, ["git", "-C", str(workspace), "init", "-q"], check=True)
    config = sandboxed_config()
    config.sandbox.writable = [str(workspace / ".git")]
    command = "echo x > a.txt && git add a.txt && git -c user.name=t -c user.email=t@x commit -qm c && echo COMMITTED"
    result = await run(BASH, make_ctx(workspace, config=config), "bash", command=command)
    assert "COMMITTED" in result.text, result.text


def _repo_with_a_token(repo: Path, sub: Path) -> None:
    """A repository with one commit, a changed file in sub/, a remote with a token, an extraHeader."""
    import subprocess

    sub.mkdir(parents=True)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True)
    (sub / "a.txt").write_text("one\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "first commit"], check=True)
    (sub / "a.txt").write_text("two\n")
    origin = "https://alice:ghp_TOKEN1abc@github.com/a/b.git"
    subprocess.run([*git, "remote", "add", "origin", origin], check=True)
    subprocess.run([*git, "config", "http.extraHeader", "Authorization: Bearer TOKEN2abc"], check=True)


@needs_bwrap
async def test_sandboxed_git_sees_the_repository_config_with_its_credentials_redacted(
    tmp_path: Path, home_outside_tmp: tuple[Path, dict[Path, str]]
) -> None:
    """cat .git/config (or git remote -v, git config --get http.extraheader) printed a remote's
    token to the model, unasked in full-auto. The sandbox now sees a redacted copy of the working
    repository's config (found from a subfolder too) and of ~/.gitconfig; git status, log and diff
    still work there, and the host's files are untouched."""
    base, _ = home_outside_tmp
    repo = base / "repo"
    sub = repo / "sub"
    _repo_with_a_token(repo, sub)
    config = (repo / ".git" / "config").read_text()
    home_config = base / "home" / ".gitconfig"
    home_config.write_text('[url "https://TOKEN3abc@github.com/"]\n\tinsteadOf = https://github.com/\n')
    command = (
        "cat ../.git/config ~/.gitconfig; git remote -v; git config --get http.extraheader; "
        "echo STATUS; git status --short; git log --oneline; git diff --stat"
    )
    result = await run(BASH, make_ctx(sub, config=sandboxed_config()), "bash", command=command)
    assert "TOKEN" not in result.text, result.text
    assert (
        "https://alice:REDACTED@github.com/a/b.git" in result.text
        and "Authorization: REDACTED" in result.text
    )
    assert "M sub/a.txt" in result.text or "M a.txt" in result.text, result.text
    assert "first commit" in result.text and "1 file changed" in result.text, result.text
    assert (repo / ".git" / "config").read_text() == config  # the host's config is untouched


def test_a_worktree_or_subfolder_finds_the_config_git_reads(tmp_path: Path) -> None:
    """git reads the common dir's config from a worktree (.git is a file) and walks up from a
    subfolder: the sandbox's redacted copy must cover that file, not only <cwd>/.git/config."""
    import subprocess

    from turnstone_tui.sandbox.gitconfig import config_files, redacted_copies

    repo, sub = tmp_path / "main", tmp_path / "main" / "sub"
    _repo_with_a_token(repo, sub)
    worktree = tmp_path / "wt"
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", str(worktree)], check=True)
    main_config = (repo / ".git" / "config").resolve()
    assert main_config in config_files([worktree]) and main_config in config_files([sub])
    copies = dict((target, copy) for copy, target in redacted_copies([worktree]))
    assert "TOKEN" not in copies[main_config].read_text()
    assert "alice:REDACTED@github.com" in copies[main_config].read_text()


def test_a_file_a_git_config_includes_is_redacted_too(tmp_path: Path) -> None:
    """[include] path = ... (or [includeIf]) pulls another file into the config, tokens and all:
    the sandbox's redacted copies cover the included file as well."""
    from turnstone_tui.sandbox.gitconfig import redacted_copies

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text('[includeIf "gitdir:~/"]\n\tpath = ../../tokens.inc\n')
    (tmp_path / "tokens.inc").write_text('[remote "origin"]\n\turl = https://ghp_TOKEN9@github.com/a/b\n')
    copies = {target: copy for copy, target in redacted_copies([repo])}
    included = (tmp_path / "tokens.inc").resolve()
    assert included in copies and "TOKEN" not in copies[included].read_text()
