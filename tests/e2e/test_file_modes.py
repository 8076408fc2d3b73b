"""Private by default: every file and folder memsync creates (data dir, state, hub and its -wal and
-shm, the alerts file, the archive, the search index, the lock and the socket) is its user's only,
0700 / 0600, when started by hand (no service unit's UMask) from a shell whose umask is the usual
0022; a daemon start tightens an older install's wider modes, and says so; and the opt-in shared
hub (backbone.shared_group) gives the hub's folder and files to that group."""

from __future__ import annotations

import grp
import json
import os
import stat
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import AgentProcess, SiteFiles, episode, memsync, stop_daemon, wait_for, wait_started, write_config

# A shell's usual umask, so that only memsync's own choice can make its files private.
USUAL_UMASK = 0o022
ARCHIVING = "[jobs]\narchive_after_days = 0.00001\n\n[jobs.cleanup-old-episodes]\nevery = 1\n"


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    old = os.umask(USUAL_UMASK)  # inherited by every memsync child process the test starts
    yield
    os.umask(old)


def _modes(roots: list[Path]) -> dict[str, str]:
    """Every file and folder under ``roots`` (the roots too), relative name -> octal mode."""
    found = {}
    for root in roots:
        for top, folders, files in os.walk(root):
            for path in (Path(top), *(Path(top, n) for n in (*folders, *files))):
                try:
                    found[str(path.relative_to(root.parent))] = f"{stat.S_IMODE(path.lstat().st_mode):04o}"
                except FileNotFoundError:
                    continue  # a temporary file that went while we walked
    return found


def _site(tmp_path: Path, short_dir: Path, backbone: str = "") -> SiteFiles:
    warm = f'enabled = true\nsocket = "{short_dir / "laptop.sock"}"\ncatch_up_interval = 0.5\n'
    site = write_config(
        tmp_path / "laptop",
        "laptop",
        tmp_path / "agents" / "laptop.db",
        tmp_path / "hub" / "hub.db",
        backbone=backbone,
        warm=warm,
        extra=ARCHIVING,
    )
    os.chmod(site.root, 0o755)  # the config's own folder is the person's, not memsync's
    return site


def _everything(
    tmp_path: Path,
    site: SiteFiles,
    agents: Callable[[Path], AgentProcess],
    start: Callable[..., subprocess.Popen[bytes]],
) -> subprocess.Popen[bytes]:
    """`sync`, then `run` with its search index, a search, the archive job and the alerts file."""
    (tmp_path / "agents").mkdir()
    agent = agents(site.agentdb)
    for i in range(3):
        agent.store(episode(i, task=f"rotate the certificate of host {i}"))
    agent.close()
    assert memsync("sync", "--config", str(site.config)).returncode == 0
    log = tmp_path / "daemon.log"
    proc = start(site.config, log)
    wait_started(site, proc, log)
    archive = site.hub.with_name("hub.archive")
    wait_for(lambda: any(archive.rglob("*.jsonl.gz")), timeout=60, what="the archive job to write a file")
    wait_for(lambda: site.hub.with_name("hub.alerts.db").exists(), timeout=60, what="the alerts file")

    def searched() -> bool:
        done = memsync("search", "certificate", "--mode", "bm25", "--json", "--config", str(site.config))
        return done.returncode == 0 and len(json.loads(done.stdout)["results"]) > 0

    wait_for(searched, timeout=90, what="a search to find the episodes")
    return proc


def _memsyncs(site: SiteFiles, tmp_path: Path) -> list[Path]:
    """What memsync made: the data dir, the hub's folder, the state file and its lock beside the config."""
    return [site.root / "data", tmp_path / "hub"]


def _state_files(site: SiteFiles) -> dict[str, str]:
    return {p.name: f"{stat.S_IMODE(p.stat().st_mode):04o}" for p in site.root.glob(f"{site.name}.state.db*")}


def test_every_file_and_folder_memsync_creates_is_its_users_only_and_a_start_tightens_older_ones(
    tmp_path: Path,
    short_dir: Path,
    agents: Callable[[Path], AgentProcess],
    daemons: Callable[..., subprocess.Popen[bytes]],
) -> None:
    site = _site(tmp_path, short_dir)
    proc = _everything(tmp_path, site, agents, daemons)
    made = {**_modes(_memsyncs(site, tmp_path)), **_state_files(site)}
    kinds = {name.rsplit("/", 1)[-1] for name in made}
    # The table covers what it claims to: hub, -wal, -shm, alerts, archive, index, lock, socket, state.
    for name in ("hub.db", "hub.db-wal", "hub.db-shm", "hub.alerts.db", "laptop.state.db", "laptop.state.db.lock"):
        assert name in kinds, sorted(kinds)
    assert any(name.endswith(".jsonl.gz") for name in made)
    assert any("/warm/" in name for name in made)
    wider = {name: mode for name, mode in made.items() if mode not in ("0700", "0600")}
    assert wider == {}
    assert {mode for name, mode in made.items() if (tmp_path / name).is_dir()} == {"0700"}
    assert stop_daemon(proc) == 0

    # An install from before: everything readable by all; the next start tightens it and says so.
    for root in _memsyncs(site, tmp_path):
        for top, _, files in os.walk(root):
            os.chmod(top, 0o755)
            for name in files:
                os.chmod(Path(top, name), 0o644)
    os.chmod(site.state, 0o644)
    log = tmp_path / "again.log"
    proc = daemons(site.config, log)
    wait_started(site, proc, log)
    again = {**_modes(_memsyncs(site, tmp_path)), **_state_files(site)}
    # The hub's folder may be the person's (beside the AgentDB file, say): its listing is left as it
    # is; what is in it is memsync's and tightened.
    assert {name: mode for name, mode in again.items() if mode not in ("0700", "0600")} == {"hub": "0755"}
    assert "had other modes than memsync gives them" in log.read_text()
    assert stop_daemon(proc) == 0


def test_a_shared_hub_is_its_groups_and_an_unknown_group_is_one_sentence(
    tmp_path: Path,
    short_dir: Path,
    agents: Callable[[Path], AgentProcess],
    daemons: Callable[..., subprocess.Popen[bytes]],
) -> None:
    group = grp.getgrgid(os.getgid()).gr_name  # a group this user is in, so that it may give files to it
    site = _site(tmp_path, short_dir, backbone=f'shared_group = "{group}"\n')
    proc = _everything(tmp_path, site, agents, daemons)
    assert stop_daemon(proc) == 0
    hub_dir = tmp_path / "hub"
    assert f"{stat.S_IMODE(hub_dir.stat().st_mode):04o}" == "2770"
    shared = _modes([hub_dir])
    assert shared.pop("hub") == "2770"
    assert set(shared.values()) <= {"0660", "2770", "0770"}, shared  # archive folders are made 2770 or 0770
    assert "0660" in shared.values()
    assert {p.stat().st_gid for p in hub_dir.rglob("*")} == {os.getgid()}
    others = _modes([site.root / "data"])
    assert not [m for m in others.values() if int(m, 8) & 0o007], others  # nobody outside the group

    wrong = _site(tmp_path / "other", short_dir, backbone='shared_group = "no-such-group-4417"\n')
    done = memsync("status", "--config", str(wrong.config))
    assert done.returncode == 78
    assert "no-such-group-4417" in done.stderr
    assert "groupadd" in done.stderr
    assert "Traceback" not in done.stderr
