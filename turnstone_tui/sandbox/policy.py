"""The sandbox settings and the decision, per command, of how it runs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .bwrap import confine, support
from .gitconfig import redacted_copies
from .seccomp import program_file
from .secrets import git_code_paths, hidden_paths

MODES = ("auto", "off")


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    mode: str = "auto"  # auto: confine when bubblewrap can run | off: never
    network: bool = False
    writable: tuple[str, ...] = ()  # extra read-write paths besides the workspace
    auto_approve: bool = False  # sandboxed bash/watch commands need no approval
    hidden: tuple[str, ...] = ()  # secret files besides secrets.SECRET_FILES (the config file, the database)


@dataclass(frozen=True, slots=True)
class RunPlan:
    argv: list[str]
    sandboxed: bool
    note: str  # one line for the approval modal / the tool result: where and how it runs
    extra_writable: list[Path] = field(default_factory=list)


def describe(policy: SandboxPolicy) -> str:
    """The status-bar word for the mode: "sandbox", "no sandbox" or "sandbox unavailable"."""
    if policy.mode == "off":
        return "no sandbox"
    return "sandbox" if support().available else "sandbox unavailable"


def plan(
    policy: SandboxPolicy,
    argv: Sequence[str],
    *,
    cwd: Path,
    writable: Sequence[Path] = (),
    network: bool | None = None,
    readable: Sequence[Path] = (),
) -> RunPlan:
    """How ``argv`` runs under ``policy``. Blocking on first use (the probe): call it off the event loop."""
    net = policy.network if network is None else network
    if policy.mode == "off":
        return RunPlan(
            list(argv), False, 'not sandboxed: the sandbox is off ([sandbox] mode = "off" or --no-sandbox)'
        )
    found = support()
    if not found.available:
        return RunPlan(list(argv), False, f"not sandboxed: {found.reason}")
    paths = [Path(cwd), *(Path(p) for p in writable), *(Path(p).expanduser() for p in policy.writable)]
    hidden_dirs, hidden_files, kept = hidden_paths(policy.hidden)
    opted_in = tuple(Path(p).expanduser().resolve() for p in policy.writable)
    for folder in paths:  # a writable repository's .git stays read-only (secrets.git_code_paths)
        kept += [p.resolve() for p in git_code_paths(folder.resolve(), opted_in)]
    hidden = (hidden_dirs, hidden_files, kept)
    wrapped = confine(
        argv,
        cwd=Path(cwd),
        writable=paths,
        network=net,
        bwrap=found.bwrap,
        readable=readable,
        hidden=hidden,
        seccomp=program_file(),
        replaced=redacted_copies(paths),
    )
    network_note = "network on" if net else "no network"
    return RunPlan(
        wrapped, True, f"sandboxed: read-only system, writable workspace, private /tmp, {network_note}"
    )
