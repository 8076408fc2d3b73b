"""``memsync forget``: by key and by a text that must go, on the embedded hub, checked in the hub
file's bytes and in the search index's files (read around memsync); a re-push of a forgotten key
is refused; a site forgets another site's episode on the hub."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

from conftest import AgentProcess, episode, hub_episodes, memsync, write_config

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

    done = memsync("forget", "--matching", SECRET_TEXT, "--yes", "--json", "--config", str(laptop.config))
    assert done.returncode == 0, done.stderr
    forgotten = json.loads(done.stdout)["forgotten"]
    assert sorted(e["key"] for e in forgotten) == [
        "laptop:2",
        "vm:1",
    ]  # agentdb ids start at 1; the vm's is another site's
    by_key = memsync("forget", "laptop:3", "nosuch:1", "--config", str(laptop.config))
    assert by_key.returncode == 0, by_key.stderr
    assert "nosuch:1: no such episode" in by_key.stderr
    left = {(e["sourceSite"], e["sourceId"]) for e in hub_episodes(hub)}
    assert left == held - {("laptop", "2"), ("vm", "1"), ("laptop", "3")}

    with closing(sqlite3.connect(hub)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert SECRET_TEXT.encode() not in _raw(list(tmp_path.glob("hub.db*")))
    # The index drops them at its next catch-up (here `sync`, with no daemon running): no search
    # finds them. Deleting a point leaves its bytes in Qdrant's WAL and segments, so the same
    # catch-up rebuilds the collection without them and drops the old one: no `reindex` needed.
    warm_dir = tmp_path / "laptop" / "data" / "warm"
    assert SECRET_TEXT.encode() in _raw(_files(warm_dir))  # what the purge must take away
    assert memsync("sync", "--config", str(laptop.config)).returncode == 0
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
