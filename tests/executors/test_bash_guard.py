"""The bash blocklist: every variant tries to get past it and is refused at prepare; ordinary commands pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.executors.exec_helpers import make_ctx, prepare, run
from turnstone_tui.executors.bash import PREPARERS
from turnstone_tui.executors.bash_guard import check_command

REFUSED = [
    "rm -rf /", "rm -fr /*", "sudo rm -rf /", "sudo -u root rm -rf /", "rm -r -f /", "rm --recursive --force /",
    "/bin/rm -Rf /", "\\rm -rf '/'", 'rm -rf "/"', "rm -rf //", "rm -rf /.", "rm -rf /home/../",
    "rm -rf ~", "rm -rf ~/", "rm -rf $HOME", "rm -rf ${HOME}/", 'rm -rf "$HOME"', "rm -rf -- /",
    "rm -rf --no-preserve-root /", "rm -r --no-preserve-root /tmp", "rm -rf /usr", "rm -rf /etc/*",
    "echo hi; rm -rf / ; echo", "true && rm -rf /", "false || rm -rf /*", "(rm -rf /)", "{ rm -rf /; }",
    "env FOO=1 rm -rf /", "timeout 5 rm -rf /", "nice -n 5 rm -rf /", "X=1 rm -rf /",
    "for i in 1; do rm -rf $HOME; done", "if true; then rm -rf /; fi",
    "x=$((1+2)); rm -rf /", "case a in a) rm -rf /;; esac", "[[ -f x ]] && rm -rf /",  # bashlex cannot parse these
    "rm -rf / 'unbalanced quote",
    "echo $(rm -rf /)", "echo `rm -rf /`", "bash -c 'rm -rf /'", "sh -c \"rm -rf /*\"", "eval 'rm -rf /'",
    ":(){ :|:& };:", ":(){ :|: & };:", "bomb(){ bomb|bomb& }; bomb", "f() { f & f; }; f",
    "mkfs.ext4 /dev/sda1", "mkfs -t ext4 /dev/nvme0n1p1", "sudo mkfs.xfs /dev/vdb", "wipefs -a /dev/sdb",
    "dd if=/dev/zero of=/dev/sda bs=1M", "dd if=img of=/dev/mmcblk0",
    "echo x > /dev/sda", "cat img >> /dev/nvme0n1", "cat img &> /dev/sdb", "echo y | tee /dev/sda",
    "chmod -R 777 /", "chmod -R 000 /etc", "chown -R me /", "chgrp -R staff ~",
    "find / -delete", "find ~ -exec rm {} +",
    "shutdown -h now", "sudo reboot", "poweroff", "halt", "systemctl poweroff", "init 0", "kill -9 -1",
]  # fmt: skip

ALLOWED = [
    "rm -rf /tmp/foo", "rm -rf build/", "rm -rf ./node_modules", "rm -r ~/project/build", "rm /tmp/x", "ls /",
    "echo 'rm -rf /'", "grep -r 'rm -rf /' .", "git commit -m 'reboot later'", "echo shutdown",
    "dd if=/dev/zero of=disk.img bs=1M count=1", "mkfs.ext4 disk.img", "echo x > /dev/null", "cat /dev/sda | head -c 1",
    "kill -1 1234", "chmod -R 755 ./src", "chmod 777 /tmp/x", "find . -name '*.pyc' -delete",
    "x=$((1+2)); echo $x", "case a in a) echo;; esac", "f(){ echo hi; }; f", "fib(){ fib $1 && echo; }",
    "systemctl status", "sleep 100 & sleep 100", "seq 1 10 | while read x; do echo $x; done",
]  # fmt: skip


@pytest.mark.parametrize("command", REFUSED)
async def test_destructive_command_is_refused_at_prepare(tmp_path: Path, command: str) -> None:
    item = await prepare(PREPARERS, make_ctx(tmp_path), "bash", command=command)
    assert item.error is not None, f"not refused: {command}"
    assert item.error.startswith("bash: refused")
    assert item.execute is None


@pytest.mark.parametrize("command", ALLOWED)
def test_ordinary_command_is_allowed(command: str) -> None:
    assert check_command(command) is None


def test_reasons_say_what_and_why() -> None:
    assert "recursively delete /" in (check_command("sudo rm -rf /") or "")
    assert "fork bomb" in (check_command(":(){ :|:& };:") or "")
    assert "/dev/sda" in (check_command("dd if=/dev/zero of=/dev/sda") or "")
    assert "shut down" in (check_command("reboot") or "")


async def test_refused_command_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    item = await prepare(PREPARERS, make_ctx(tmp_path), "bash", command=f"touch {marker}; rm -rf /")
    assert item.error and item.execute is None
    assert not marker.exists()


async def test_allowed_rm_really_runs(tmp_path: Path) -> None:
    (tmp_path / "build" / "sub").mkdir(parents=True)
    result = await run(PREPARERS, make_ctx(tmp_path), "bash", command="rm -rf build && echo ok")
    assert "ok" in result.text and not (tmp_path / "build").exists()
