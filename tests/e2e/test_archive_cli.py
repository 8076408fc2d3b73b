"""Tier: e2e. The cold archive through the CLI and a daemon in child processes: the weekly job and
the archive commands, and a kill -9 while archiving."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

from conftest import AgentProcess, episode, memsync, status_json, write_config
from test_archive import SECRET, SITE
from test_backbone_conformance import item

from sync.archive.files import ArchiveFolder
from sync.backbone.hub import HubBackbone

WEEK_S = 7 * 86400


_ARCHIVER = """
import sys
from sync.backbone.hub import HubBackbone
hub = HubBackbone(__import__("pathlib").Path(sys.argv[1]), "laptop")
print("ready", flush=True)
while hub.archive_older_than(int(sys.argv[2]), 40):
    pass
print("done", flush=True)
"""


def _state(path: Path, keys: set[str]) -> tuple[set[str], set[str]]:
    hub = HubBackbone(path, SITE, create=False)
    try:
        hot = [str(e["sourceId"]) for e in hub.episodes()]
        cold = [str(e["sourceId"]) for e in hub.archived_episodes()]
        assert len(set(hot)) == len(hot)
        assert len(set(cold)) == len(cold), "an episode archived twice"
        assert not set(hot) & set(cold)
        assert set(hot) | set(cold) == keys, f"lost: {sorted(keys - set(hot) - set(cold))[:5]}"
        assert [c.problem for c in hub.verify_archive() if c.problem is not None] == []
        return set(hot), set(cold)
    finally:
        hub.close()


def test_kill_9_during_archiving_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "hub.db"
    with closing(HubBackbone(path, SITE)) as hub:
        # 3,000 episodes over 60 weeks of 1970-71, 50 a week.
        for start in range(0, 3000, 500):
            hub.push(
                [item(i, at=1_000 + (i // 50) * WEEK_S + i) for i in range(start + 1, start + 501)], cursor=start + 500
            )
    keys = {str(i) for i in range(1, 3001)}
    cutoff = (1_000 + 70 * WEEK_S) * 1000
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    kills = 0
    for delay in (0.05, 0.15, 0.3, 0.5, 0.8):
        child = subprocess.Popen(
            [sys.executable, "-c", _ARCHIVER, str(path), str(cutoff)], stdout=subprocess.PIPE, text=True, env=env
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        time.sleep(delay)  # on purpose: the kill lands at a different point of the archiving each time
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)
            kills += 1
        child.wait()
        child.stdout.close()
        _state(path, keys)  # after every kill: archive + hot = every episode, once
    assert kills >= 1
    finished = subprocess.run(
        [sys.executable, "-c", _ARCHIVER, str(path), str(cutoff)], capture_output=True, text=True, env=env, check=False
    )
    assert finished.returncode == 0, finished.stderr
    hot, cold = _state(path, keys)
    assert (hot, cold) == (set(), keys)


def test_the_weekly_job_archive_commands_export_and_status(
    tmp_path: Path, agents: Callable[[Path], AgentProcess]
) -> None:
    db, hub_path = tmp_path / "laptop.db", tmp_path / "hub.db"
    agent = agents(db)
    for i in range(4):
        agent.store(episode(i, output=f"{SECRET} {i}"))
    agent.close()
    # A retention of a second: what is synced now is old enough a moment later.
    site = write_config(tmp_path / "laptop", "laptop", db, hub_path, extra="[jobs]\narchive_after_days = 0.00001\n")
    config = str(site.config)
    assert memsync("sync", "--config", config).returncode == 0
    time.sleep(1.2)  # on purpose: the retention (0.864 s) passes, so what was synced is old enough
    ran = memsync("jobs", "run", "cleanup-old-episodes", "--config", config)
    assert ran.returncode == 0, ran.stderr
    assert "4 episodes older than" in ran.stderr

    assert memsync("export", "--config", config).stdout == ""  # nothing hot
    archived = [json.loads(line) for line in memsync("export", "--archived", "--config", config).stdout.splitlines()]
    assert sorted(e["output"] for e in archived) == sorted(f"{SECRET} {i}" for i in range(4))
    assert all(e["archived"] is True for e in archived)
    (listed,) = json.loads(memsync("archive", "list", "--json", "--config", config).stdout)
    assert (listed["site"], listed["episodes"]) == ("laptop", 4)
    assert json.loads(memsync("archive", "list", "--since", "2999-01-01", "--json", "--config", config).stdout) == []
    wrong = memsync("archive", "list", "--since", "last week", "--config", config)
    assert wrong.returncode == 2
    assert "is not a day" in wrong.stderr

    _, report = status_json(site.config)
    assert report["backbone"]["archive"]["episodes"] == 4
    assert report["backbone"]["archive"]["lastRun"]["archived"] == 4
    shown = memsync("status", "--config", config).stdout
    assert "4 episodes in 1 file," in shown

    # Syncing again pushes nothing: the keys stay in the hot table.
    assert memsync("sync", "--config", config).returncode == 0
    assert memsync("export", "--config", config).stdout == ""

    verified = memsync("archive", "verify", "--config", config)
    assert verified.returncode == 0, verified.stderr
    assert "1 of 1 archive files verified" in verified.stderr

    restored = memsync("archive", "restore", "--json", "--config", config)
    assert json.loads(restored.stdout) == {"restored": 4}
    assert json.loads(memsync("archive", "restore", "--json", "--config", config).stdout) == {"restored": 0}
    assert len(memsync("export", "--config", config).stdout.splitlines()) == 4

    path = ArchiveFolder.beside(hub_path).path(listed["location"])
    path.write_bytes(b"garbage")
    damaged = memsync("archive", "verify", "--config", config)
    assert damaged.returncode == 1
    assert "damaged: laptop" in damaged.stderr
    assert "Traceback" not in damaged.stderr
    exported = memsync("export", "--archived", "--config", config)  # nothing archived is read from it
    assert exported.returncode == 0, exported.stderr
    assert len(exported.stdout.splitlines()) == 4
