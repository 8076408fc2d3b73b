"""``memsync forget``: by key and by a text that must go, on the embedded hub, checked in the hub
file's bytes and in the search index's files (read around memsync); a re-push of a forgotten key
is refused; a site forgets another site's episode on the hub."""

from __future__ import annotations

import gzip
import json
import os
import sqlite3
import subprocess
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

from conftest import (
    AgentProcess,
    SiteFiles,
    episode,
    hub_episodes,
    memsync,
    stop_daemon,
    wait_for,
    wait_started,
    write_config,
)

from daemon.alerts.messages import Message
from daemon.alerts.store import AlertStore, Queued
from sync.backbone.hub import HubBackbone

SECRET_TEXT = "the-launch-codes-are-0000"


def _raw(paths: list[Path]) -> bytes:
    return b"".join(p.read_bytes() for p in paths if p.is_file())


def _files(folder: Path) -> list[Path]:
    """Every file of the search index: the engine's WAL, segments and indexes, and memsync's own."""
    return [p for p in folder.rglob("*") if p.is_file()]


def test_forget_by_key_and_by_text_from_the_hub_and_the_index(
    tmp_path: Path, agents: Callable[[Path], AgentProcess]
) -> None:
    hub = tmp_path / "hub.db"
    laptop_db, vm_db = tmp_path / "laptop.db", tmp_path / "vm.db"
    for db, n in ((laptop_db, 4), (vm_db, 2)):
        agent = agents(db)
        for i in range(n):
            agent.store(episode(i, output=f"{SECRET_TEXT} {i}" if (db, i) in ((laptop_db, 1), (vm_db, 0)) else "fine"))
        agent.close()
    laptop = write_config(tmp_path / "laptop", "laptop", laptop_db, hub, warm="enabled = true")
    vm = write_config(tmp_path / "vm", "vm", vm_db, hub, warm="enabled = false")
    for site in (laptop, vm):
        assert memsync("sync", "--config", str(site.config)).returncode == 0
    held = {(e["sourceSite"], e["sourceId"]) for e in hub_episodes(hub)}
    assert len(held) == 6

    before = memsync("search", SECRET_TEXT, "--mode", "bm25", "--json", "--config", str(laptop.config))
    assert SECRET_TEXT in json.dumps(json.loads(before.stdout)["results"])  # what forgetting must take away

    # Piped stdin: --matching refuses to guess, and forgets nothing.
    asked = memsync("forget", "--matching", SECRET_TEXT, "--config", str(laptop.config))
    assert asked.returncode == 2
    assert "--yes" in asked.stderr
    assert len(hub_episodes(hub)) == 6

    warm_dir = tmp_path / "laptop" / "data" / "warm"
    assert SECRET_TEXT.encode() in _raw(_files(warm_dir))  # what the purge must take away
    done = memsync("forget", "--matching", SECRET_TEXT, "--yes", "--json", "--config", str(laptop.config))
    assert done.returncode == 0, done.stderr
    forgotten = json.loads(done.stdout)["forgotten"]
    assert sorted(e["key"] for e in forgotten) == [
        "laptop:2",
        "vm:1",
    ]  # agentdb ids start at 1; the vm's is another site's
    by_key = memsync("forget", "laptop:3", "nosuch:1", "--config", str(laptop.config))
    assert by_key.returncode == 0, by_key.stderr
    said = "memsync: forgotten: laptop:3: removed from the hub file; a tombstone keeps the key refused"
    assert said in by_key.stderr.splitlines()
    assert "nosuch:1: no such episode" in by_key.stderr
    left = {(e["sourceSite"], e["sourceId"]) for e in hub_episodes(hub)}
    assert left == held - {("laptop", "2"), ("vm", "1"), ("laptop", "3")}

    assert SECRET_TEXT.encode() not in _raw(list(tmp_path.glob("hub.db*")))
    # With no daemon running, forget itself ran the index's catch-up: no search finds them.
    # Deleting a point leaves its bytes in Qdrant's WAL and segments, so the same catch-up
    # rebuilt the collection without them and dropped the old one: no `reindex` needed.
    assert "search index on laptop: purged" in done.stderr
    found = memsync("search", SECRET_TEXT, "--mode", "bm25", "--json", "--config", str(laptop.config))
    assert found.returncode == 0, found.stderr
    assert SECRET_TEXT not in json.dumps(json.loads(found.stdout)["results"])
    assert "reindex" not in done.stderr  # purging is the index's job, not the person's
    assert SECRET_TEXT.encode() not in _raw(_files(warm_dir))
    assert b"fine" in _raw(_files(warm_dir))  # the index's files hold payload text in the clear
    purge = json.loads((warm_dir / "laptop" / "indexer.json").read_text())
    assert purge.get("purgeOwed") == []  # nothing more owed
    kept = memsync("search", "task number 0", "--mode", "bm25", "--json", "--config", str(laptop.config))
    assert len(json.loads(kept.stdout)["results"]) == 3  # the episodes not forgotten are still found

    # The agent edits a forgotten row: the backbone refuses the key; nothing comes back.
    agent = agents(laptop_db)
    agent.update(2, output=f"{SECRET_TEXT} again")
    agent.close()
    assert memsync("sync", "--config", str(laptop.config)).returncode in (0, 1)
    assert ("laptop", "2") not in {(e["sourceSite"], e["sourceId"]) for e in hub_episodes(hub)}


def test_forget_needs_keys_or_a_text(tmp_path: Path) -> None:
    site = write_config(tmp_path / "s", "laptop", tmp_path / "a.db", tmp_path / "hub.db")
    for argv, said in (([], "SITE:ID"), (["laptop"], "is not SITE:ID"), (["--matching", "ab"], "4 characters")):
        done = memsync("forget", *argv, "--config", str(site.config))
        assert done.returncode == 2
        assert said in done.stderr


def test_forget_before_anything_was_synced_says_so_and_creates_nothing(tmp_path: Path) -> None:
    hub = tmp_path / "hub.db"
    site = write_config(tmp_path / "s", "laptop", tmp_path / "a.db", hub)
    done = memsync("forget", "laptop:1", "--config", str(site.config))
    assert (done.returncode, done.stdout) == (1, "")
    assert f"the hub {hub} does not exist yet: nothing has been synced, so nothing to forget" in done.stderr
    assert not hub.exists()


# --- gone from every file, with daemons running -----------------------------------------------

PLANTED = "codename-bluefinch-7731"


def _readable(path: Path) -> bytes:
    """A file's bytes, and a gzip file's (an archive week) decompressed too; b"" for one that went
    away while the daemons wrote (a temporary file) and for a socket."""
    try:
        data = path.read_bytes()
    except OSError:  # gone, or a socket
        return b""
    if data[:2] == b"\x1f\x8b":
        data += gzip.decompress(data)
    return data


def _holding(folders: list[Path], text: str) -> list[str]:
    """Every file under ``folders`` whose bytes hold ``text``, read around memsync."""
    files = (Path(top, name) for folder in folders for top, _, names in os.walk(folder) for name in names)
    return sorted(str(p) for p in files if text.encode() in _readable(p))  # os.walk: folders come and go


def test_a_forgotten_text_is_in_no_file_while_the_daemons_run(
    tmp_path: Path,
    short_dir: Path,
    agents: Callable[[Path], AgentProcess],
    daemons: Callable[..., subprocess.Popen[bytes]],
) -> None:
    hub_dir, agent_dir = tmp_path / "hub", tmp_path / "agents"
    hub_dir.mkdir()
    agent_dir.mkdir()
    hub = hub_dir / "hub.db"
    laptop_db, vm_db = agent_dir / "laptop.db", agent_dir / "vm.db"
    warm = f'enabled = true\nsocket = "{short_dir / "laptop.sock"}"\ncatch_up_interval = 0.5\n'
    laptop = write_config(tmp_path / "laptop", "laptop", laptop_db, hub, warm=warm)
    vm = write_config(tmp_path / "vm", "vm", vm_db, hub)
    agent = agents(laptop_db)
    agent.store(episode(1, task="rotate the TLS certificate"))
    agent.store(episode(2, task="brief the team", output=f"the launch is {PLANTED}"))
    agent.close()
    agent = agents(vm_db)
    agent.store(episode(1, task="an old plan", input=f"plan for {PLANTED}"))
    agent.exec("UPDATE episodes SET ts = 1735689600 WHERE id = 1")  # a week long past: archived below
    agent.store(episode(2, task="check the backups"))
    agent.close()

    # Every file memsync owns: each site's folder (data dir, state file, search index, its daemon's
    # log) and the hub's folder (hub, -wal, -shm, alerts file, archive). The AgentDB files are the agents'.
    owned = [tmp_path / "laptop", tmp_path / "vm", hub_dir]
    procs = [daemons(site.config, site.root / "daemon.log") for site in (laptop, vm)]
    for site, proc in zip((laptop, vm), procs, strict=True):
        wait_started(site, proc, site.root / "daemon.log")
    wait_for(lambda: len(hub_episodes(hub)) == 4, timeout=60, what="both sites to sync")
    with closing(HubBackbone(hub, "vm")) as backbone:
        assert backbone.archive_older_than(1_750_000_000_000, 100) == 1  # vm:1 goes to its week's gzip file

    def indexed(query: str) -> list[str]:
        done = memsync("search", query, "--mode", "bm25", "--json", "--config", str(laptop.config))
        assert done.returncode == 0, done.stderr
        return sorted(f"{r['sourceSite']}:{r['sourceId']}" for r in json.loads(done.stdout)["results"])

    wait_for(lambda: indexed(PLANTED) == ["laptop:2", "vm:1"], timeout=90, what="the index to hold both")
    before = _holding(owned, PLANTED)  # what forgetting must take away: the hub, its archive, the index
    assert any(name.startswith(str(hub)) for name in before), before
    assert any(name.endswith(".jsonl.gz") for name in before), before
    assert any("/warm/" in name for name in before), before

    done = memsync("forget", "--matching", PLANTED, "--yes", "--json", "--config", str(laptop.config))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert sorted(e["key"] for e in report["forgotten"]) == ["laptop:2", "vm:1"]
    assert report["wal"] == []
    assert [i.get("purged") for i in report["indexes"] if i["site"] == "laptop"] == [True]
    # Once forget has returned, with both daemons holding the hub open: no file holds the text,
    # the index's included (forget waited for its daemon's purge), and no checkpoint or stop by
    # the test made it so.
    assert _holding(owned, PLANTED) == []
    assert all(proc.poll() is None for proc in procs)
    assert indexed("TLS certificate backups") == ["laptop:1", "vm:2"]  # the rest is still there
    assert _holding([tmp_path / "laptop" / "data" / "warm"], "rotate the TLS certificate")  # text in the clear
    for proc in procs:
        assert stop_daemon(proc) == 0
    assert _holding(owned, PLANTED) == []


def test_the_hub_wal_is_emptied_once_no_reader_holds_an_old_snapshot(tmp_path: Path) -> None:
    hub_path = tmp_path / "hub.db"
    hub = HubBackbone(hub_path, "laptop", busy_timeout_ms=50)
    reader = sqlite3.connect(hub_path, isolation_level=None)
    try:
        hub.ping()  # the schema's frames are in the -wal
        assert Path(f"{hub_path}-wal").stat().st_size > 0
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM episodes").fetchall()  # a read transaction left open
        pauses: list[float] = []
        assert not hub.empty_wal(attempts=3, pause_s=0.5, sleep=pauses.append)
        assert pauses == [0.5, 0.5]  # tried again, briefly, then said so
        reader.execute("COMMIT")
        assert hub.empty_wal(sleep=pauses.append)
        assert Path(f"{hub_path}-wal").stat().st_size == 0
    finally:
        reader.close()
        hub.close()


def test_forget_matching_reaches_quarantine_previews_and_kept_messages(
    site_files: Callable[..., SiteFiles], agents: Callable[[Path], AgentProcess], tmp_path: Path
) -> None:
    """Text outside the backbone: a row quarantined for its empty task (its preview in the
    sidecar) and a message kept in the alerts file (a digest quoting a task). `forget --matching`
    takes the text out of both files, -wal included."""
    planted = "codename-bluefinch-7731"
    site = site_files("laptop", tmp_path / "agentdb.db")
    agent = agents(site.agentdb)
    agent.store(episode(1, task="", output=f"about {planted}"))  # no task: quarantined, never pushed
    agent.store(episode(2, task="ordinary work"))
    assert memsync("sync", "--config", str(site.config)).returncode == 0
    settings = site.settings()
    store = AlertStore(settings.alerts_path)
    try:
        store.enqueue(Queued("digest:2026-01-01", Message(f"top tasks: {planted}, ordinary work")))
    finally:
        store.close()
    kept = [settings.state_path, settings.alerts_path]
    journals = [Path(f"{p}{end}") for p in kept for end in ("", "-wal")]
    assert planted.encode() in _raw(journals[:2])  # the sidecar holds it (positive control)
    assert planted.encode() in _raw(journals[2:])  # and the alerts file

    done = memsync("forget", "--matching", planted, "--yes", "--json", "--config", str(site.config))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert sorted((e["file"], e["rows"]) for e in report["elsewhere"]) == sorted((str(p), 1) for p in kept)
    assert planted.encode() not in _raw(journals)
    assert b"ordinary work" in _raw(journals[2:])  # the rest of the message stays
