"""Every path problem is one sentence, in every command: each path memsync uses (the config file,
the .env file, the AgentDB file, the data dir, the hub) is broken in each way a path can be broken,
and a command is run against it in a child process, as root without its capabilities (so that
file modes hold, as for any user). Only a person can fix these: exit 78, exactly one line on
stderr naming the path, the user and what to do; never a traceback. A missing AgentDB file, data
dir or hub is no problem (the agent has not written yet; memsync creates its own)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from sync.errors import EX_CONFIG

DOWN = 2  # status: the site is down
REPO = Path(__file__).resolve().parents[2]
NAME_MAX = os.pathconf("/", "PC_NAME_MAX")
ROOT = os.geteuid() == 0
# Root keeps its uid (the files are its own) but loses CAP_DAC_OVERRIDE and the rest: modes hold.
# Any other user is held to them anyway.
DROP_CAPS = ["setpriv", "--inh-caps=-all", "--bounding-set=-all"] if ROOT else []
pytestmark = pytest.mark.skipif(
    ROOT and shutil.which("setpriv") is None, reason="as root, setpriv (util-linux) is needed to drop capabilities"
)

FILES = ("config", "env_file", "agentdb", "hub")  # the paths that name a file
WRITTEN = ("data_dir", "hub")  # the paths memsync writes (so unwritable and read-only matter)
FAULTS = (
    "missing",
    "parent is a file",
    "wrong kind",  # a folder where a file belongs, or a file where a folder belongs
    "unreadable",
    "unwritable",
    "dangling symlink",
    "name too long",
    "read-only file system",
)
# A missing one is no problem: the agent has not written it yet, or memsync creates it.
FINE = {("agentdb", "missing"), ("agentdb", "dangling symlink"), ("data_dir", "missing"), ("hub", "missing")}


def applies(path: str, fault: str) -> bool:
    if fault in ("unwritable", "read-only file system"):
        return path in WRITTEN
    return True


@dataclass
class Case:
    config: Path
    env: dict[str, str]
    bad: Path  # the path the fault is in, as the configuration names it
    read_only: Path | None  # a folder to mount read-only for the command


def arrange(  # noqa: PLR0912 - a branch a fault
    root: Path, agentdb: Path, path: str, fault: str, *, hub_in_data_dir: bool = False
) -> Case:
    """A site whose ``path`` has ``fault``; everything else is healthy. ``hub_in_data_dir``: the
    hub where it is by default, in the data dir (and so, faults and all, where its commands look)."""
    conf, data, hubs, agent = root / "conf", root / "data", root / "hubs", root / "agent"
    for folder in (conf, hubs, agent):
        folder.mkdir(parents=True)
    shutil.copy(agentdb, agent / "agentdb.db")
    places = {
        "config": conf / "site.toml",
        "env_file": conf / "site.env",
        "agentdb": agent / "agentdb.db",
        "data_dir": data,
        "hub": hubs / "hub.db",
    }
    if fault == "parent is a file":
        (root / "blocker").write_text("not a folder\n", encoding="utf-8")
        places[path] = root / "blocker" / places[path].name
    elif fault == "name too long":
        places[path] = places[path].parent / ("x" * (NAME_MAX + 1))
    elif fault == "dangling symlink":
        target = root / "gone" / places[path].name
        link = places[path]
        if link.exists():
            link.unlink()
        places[path] = link
        link.symlink_to(target)
    bad = places[path]
    if path == "data_dir" and fault in ("unreadable", "unwritable", "read-only file system"):
        data.mkdir()
    if path != "agentdb" and fault == "missing" and bad.exists():
        bad.unlink()
    if path == "agentdb" and fault in ("missing", "wrong kind"):
        bad.unlink()
    if fault == "wrong kind":
        if path == "data_dir":
            bad.write_text("a file\n", encoding="utf-8")
        else:
            bad.mkdir()
    config = places["config"] if path == "config" else conf / "site.toml"
    hub = "" if hub_in_data_dir else f'path = "{places["hub"]}"'
    text = (
        f'data_dir = "{places["data_dir"]}"\n[site]\nname = "laptop"\n[agentdb]\npath = "{places["agentdb"]}"\n'
        f'[backbone]\n{hub}\n[warm]\nenabled = false\n[log]\nlevel = "error"\n'
    )
    if path != "config" or fault in ("unreadable",):
        config.write_text(text, encoding="utf-8")
    if path != "env_file" or fault == "unreadable":
        places["env_file"].write_text("MEMSYNC_SYNC__BATCH_SIZE=100\n", encoding="utf-8")
    if fault == "unreadable":
        if path == "hub":
            bad.touch()  # an empty file is an empty SQLite database
        bad.chmod(0)
    if fault == "unwritable":
        (bad if path == "data_dir" else bad.parent).chmod(0o555)
    read_only = None
    if fault == "read-only file system":
        read_only = bad if path == "data_dir" else bad.parent
    env = {"MEMSYNC_ENV_FILE": str(places["env_file"]), "XDG_CACHE_HOME": str(root / "cache")}
    return Case(config, env, bad, read_only)


def run(case: Case, command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    argv = [*DROP_CAPS, sys.executable, "-m", "daemon", *command]
    if case.read_only is not None:
        if not ROOT or shutil.which("unshare") is None:
            pytest.skip("a read-only file system is mounted with unshare -m, as root")
        folder = shlex.quote(str(case.read_only))
        mount = f"mount --bind {folder} {folder} && mount -o remount,bind,ro {folder} && exec "
        argv = ["unshare", "-m", "sh", "-c", mount + shlex.join(argv)]
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MEMSYNC_")}
    environ.update(case.env, PYTHONPATH=str(REPO))
    return subprocess.run(argv, capture_output=True, text=True, env=environ, cwd=cwd, timeout=120, check=False)


def check(done: subprocess.CompletedProcess[str], case: Case, path: str, fault: str, command: str) -> None:
    shown = f"exit {done.returncode}, stderr {done.stderr!r}, stdout {done.stdout[-2000:]!r}"
    assert "Traceback" not in done.stderr, shown
    if (path, fault) in FINE:
        assert done.returncode != EX_CONFIG, shown
        return
    if command == "status" and path not in ("config", "env_file") and done.returncode != EX_CONFIG:
        # status reports: a site it cannot use is down (exit 2), with the problem among its reasons.
        assert done.returncode == DOWN, shown
        named = [r for r in json.loads(done.stdout)["reasons"] if str(case.bad) in r or str(case.bad.parent) in r]
        assert named, f"no reason names the path: {shown}"
        assert any(f"(uid {os.geteuid()})" in r for r in named), f"the user is not named: {shown}"
        return
    assert done.returncode == EX_CONFIG, shown
    lines = done.stderr.splitlines()
    assert len(lines) == 1, shown
    assert str(case.bad) in lines[0] or str(case.bad.parent) in lines[0], shown
    assert f"(uid {os.geteuid()})" in lines[0], f"the user is not named: {shown}"


@pytest.fixture(scope="module")
def agentdb_file(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    make: Callable[..., Path] = request.getfixturevalue("agentdb_cache")
    return make(5)


def cases() -> list[tuple[str, str]]:
    paths = ("config", "env_file", "agentdb", "data_dir", "hub")
    return [(p, f) for p in paths for f in FAULTS if applies(p, f)]


@pytest.mark.parametrize(("path", "fault"), cases(), ids=[f"{p}-{f}" for p, f in cases()])
@pytest.mark.parametrize("command", ["status", "sync"])
def test_a_path_fault_is_one_sentence(tmp_path: Path, agentdb_file: Path, path: str, fault: str, command: str) -> None:
    case = arrange(tmp_path, agentdb_file, path, fault)
    argv = [command, "--json"] if command == "status" else [command]
    check(run(case, [*argv, "-c", str(case.config)], tmp_path), case, path, fault, command)


COMMANDS = {
    "run": ["run"],
    "sync --wait": ["sync", "--wait", "--timeout", "5"],
    "search": ["search", "anything"],
    "reindex": ["reindex"],
    "export": ["export"],
    "forget": ["forget", "laptop:1", "--yes"],
    "archive list": ["archive", "list"],
    "quarantine list": ["quarantine", "list"],
    "jobs": ["jobs"],
    "digest": ["digest"],
    "agents": ["agents"],
    "heartbeat": ["heartbeat", "--agent", "a", "--platform", "claude-code"],
    "approval request": ["approval", "request", "--category", "internal", "--summary", "s"],
    "approvals list": ["approvals", "list"],
    "telegram check": ["telegram", "check"],
    "service render": ["service", "render"],
}
# The commands that open neither the data dir nor the hub (here, with the search index off);
# quarantine list reads only the state file, in the data dir.
CONFIG_ONLY = {"reindex", "telegram check", "service render"}
EVERY_COMMAND = [
    (command, path, fault)
    for command in COMMANDS
    for path, fault in (("config", "unreadable"), ("data_dir", "parent is a file"), ("hub", "wrong kind"))
    if path == "config" or (command not in CONFIG_ONLY and (path, command) != ("hub", "quarantine list"))
]


@pytest.mark.parametrize(("command", "path", "fault"), EVERY_COMMAND, ids=["-".join(c) for c in EVERY_COMMAND])
def test_every_command_says_a_path_fault_in_one_sentence(
    tmp_path: Path, agentdb_file: Path, command: str, path: str, fault: str
) -> None:
    case = arrange(tmp_path, agentdb_file, path, fault, hub_in_data_dir=path == "data_dir")
    check(run(case, [*COMMANDS[command], "-c", str(case.config)], tmp_path), case, path, fault, command)
