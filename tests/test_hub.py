"""The embedded hub keeps the backbone contract (sync/backbone/base.py), on a real SQLite file."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from sync.backbone.base import Outcome, PushItem, SourceRecord
from sync.backbone.hub import HubBackbone
from sync.episode import EXPORT_FIELDS, canonical_json
from sync.errors import BackboneUnavailable


def item(source_id: str, identity: str = "id", content: str = "c1", **fields: Any) -> PushItem:
    body = {"sessionId": "s", "task": "t", "ts": 1000, "createdAt": 1000, "output": content, **fields}
    local_id = int(source_id.split("~", maxsplit=1)[0])
    return PushItem(source_id, local_id, f"identity-{identity}-{source_id}", content, body, canonical_json(body))


@pytest.fixture
def hub(tmp_path: Path) -> Any:
    backbone = HubBackbone(tmp_path / "hub.db", "laptop")
    yield backbone
    backbone.close()


def test_insert_then_unchanged_then_update_keeps_first_synced_at(hub: HubBackbone) -> None:
    first = hub.push([item("1"), item("2")], cursor=2)
    assert [r.outcome for r in first] == [Outcome.INSERTED, Outcome.INSERTED]
    assert all(r.remote_id and r.synced_at for r in first)
    again = hub.push([item("1"), item("2")], cursor=2)
    assert [r.outcome for r in again] == [Outcome.UNCHANGED, Outcome.UNCHANGED]
    assert [(r.remote_id, r.synced_at) for r in again] == [(r.remote_id, r.synced_at) for r in first]
    edited = hub.push([item("1", content="c2")], cursor=2)
    assert edited[0].outcome is Outcome.UPDATED
    assert (edited[0].remote_id, edited[0].synced_at) == (first[0].remote_id, first[0].synced_at)
    rows = {e["sourceId"]: e for e in hub.episodes()}
    assert rows["1"]["output"] == "c2"
    assert rows["1"]["contentHash"] == "c2"
    assert len(rows) == 2


def test_a_key_holding_another_episode_is_a_conflict_and_is_left_alone(hub: HubBackbone) -> None:
    hub.push([item("5", identity="a")], cursor=5)
    result = hub.push([item("5", identity="b", content="other")], cursor=5)
    assert result[0].outcome is Outcome.CONFLICT
    (kept,) = list(hub.episodes())
    assert kept["output"] == "c1"
    assert hub.push([item("5~1", identity="b", content="other")], cursor=5)[0].outcome is Outcome.INSERTED


def test_sites_are_separate_keyspaces(hub: HubBackbone, tmp_path: Path) -> None:
    vm = HubBackbone(tmp_path / "hub.db", "vm")  # each site opens its own, on the shared file
    try:
        hub.push([item("1")], cursor=1)
        assert vm.push([item("1")], cursor=1)[0].outcome is Outcome.INSERTED
        assert {e["sourceSite"] for e in hub.episodes()} == {"laptop", "vm"}
        assert [e["sourceSite"] for e in hub.episodes("vm")] == ["vm"]
        assert [e["sourceSite"] for e in vm.episodes()] == ["laptop", "vm"]  # export reads every site's
    finally:
        vm.close()


def test_the_cursor_moves_with_the_rows_and_never_backwards(hub: HubBackbone) -> None:
    assert hub.site_cursor() is None
    hub.push([item("1"), item("2")], cursor=2)
    cursor = hub.site_cursor()
    assert cursor is not None
    assert (cursor.last_synced_id, cursor.total_synced) == (2, 2)
    hub.push([item("1")], cursor=1)  # a re-push after a lost sidecar
    cursor = hub.site_cursor()
    assert cursor is not None
    assert (cursor.last_synced_id, cursor.total_synced) == (2, 2)


def test_a_failed_push_leaves_neither_rows_nor_cursor(tmp_path: Path) -> None:
    path = tmp_path / "hub.db"
    hub = HubBackbone(path, "laptop", busy_timeout_ms=50)
    hub.push([item("1")], cursor=1)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    with pytest.raises(BackboneUnavailable, match="locked"):
        hub.push([item("2"), item("3")], cursor=3)
    holder.execute("ROLLBACK")
    holder.close()
    cursor = hub.site_cursor()
    assert cursor is not None
    assert cursor.last_synced_id == 1
    assert [e["sourceId"] for e in hub.episodes()] == ["1"]
    hub.close()


def test_export_has_the_documented_fields_in_order(hub: HubBackbone) -> None:
    hub.push([item("1", tags=["x"], metadata={"k": 1})], cursor=1)
    (exported,) = list(hub.episodes())
    assert tuple(exported) == EXPORT_FIELDS
    assert exported["sourceSite"] == "laptop"
    assert exported["tags"] == ["x"]
    assert exported["metadata"] == {"k": 1}


def test_an_unreachable_hub_is_a_transient_error(tmp_path: Path) -> None:
    (tmp_path / "hub.db").mkdir()  # a directory where the file should be
    with pytest.raises(BackboneUnavailable, match="cannot open the embedded hub"):
        HubBackbone(tmp_path / "hub.db", "laptop")


def _push_many(path: str, site: str, count: int) -> None:
    hub = HubBackbone(Path(path), site, busy_timeout_ms=30_000)
    for start in range(0, count, 50):
        hub.push([item(str(i)) for i in range(start + 1, start + 51)], cursor=start + 50)
    hub.close()


def test_two_site_processes_share_one_hub_file(tmp_path: Path) -> None:
    path = str(tmp_path / "hub.db")
    HubBackbone(Path(path), "laptop").close()
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_push_many, args=(path, site, 1000)) for site in ("laptop", "vm")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    hub = HubBackbone(Path(path), "laptop")
    episodes = list(hub.episodes())
    assert len(episodes) == 2000
    assert {(e["sourceSite"], e["sourceId"]) for e in episodes} == {
        (site, str(i)) for site in ("laptop", "vm") for i in range(1, 1001)
    }
    hub.close()
    for site in ("laptop", "vm"):
        hub = HubBackbone(Path(path), site)
        cursor = hub.site_cursor()
        hub.close()
        assert cursor is not None
        assert (cursor.last_synced_id, cursor.total_synced) == (1000, 1000)


def test_a_version_2_hub_gets_the_change_feed_in_place(tmp_path: Path) -> None:
    """Hubs written before the change feed: their episodes enter it in id order, tombstones after."""
    path = tmp_path / "hub.db"
    conn = sqlite3.connect(path)
    conn.executescript(
        """CREATE TABLE episodes (id INTEGER PRIMARY KEY, source_site TEXT NOT NULL, source_id TEXT NOT NULL,
             identity_hash TEXT NOT NULL, content_hash TEXT NOT NULL, body TEXT NOT NULL, ts INTEGER,
             created_at INTEGER, synced_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
             UNIQUE (source_site, source_id));
           CREATE TABLE tombstones (source_site TEXT NOT NULL, source_id TEXT NOT NULL, deleted_at INTEGER NOT NULL,
             PRIMARY KEY (source_site, source_id));
           CREATE TABLE schema_info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
           INSERT INTO schema_info VALUES ('version', '2');
           INSERT INTO episodes VALUES (7, 'laptop', '1', 'i1', 'c1', '{"task": "a"}', 1, 1, 5, 5);
           INSERT INTO episodes VALUES (9, 'vm', '4', 'i4', 'c4', '{"task": "b"}', 2, 2, 6, 6);
           INSERT INTO tombstones VALUES ('laptop', '3', 8);"""
    )
    conn.close()
    hub = HubBackbone(path, "laptop")
    try:
        feed = hub.changes(0, 10)
        assert [(c.seq, c.site, c.source_id, c.episode is None) for c in feed] == [
            (7, "laptop", "1", False),
            (9, "vm", "4", False),
            (10, "laptop", "3", True),
        ]
        assert feed[0].episode is not None
        assert feed[0].episode["task"] == "a"
        hub.push([item("5")], cursor=5)
        (new,) = hub.changes(10, 10)
        assert (new.seq, new.source_id) == (11, "5")
    finally:
        hub.close()
    hub = HubBackbone(path, "laptop")  # reopening does not migrate twice
    try:
        assert [c.seq for c in hub.changes(0, 10)] == [7, 9, 10, 11]
        assert hub.source_of() is None  # and on through version 3 to 4
    finally:
        hub.close()
    assert _schema_version(path) == "4"


def _schema_version(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        (version,) = conn.execute("SELECT value FROM schema_info WHERE key = 'version'").fetchone()
        return str(version)
    finally:
        conn.close()


def test_a_version_3_hub_gets_site_sources_in_place(tmp_path: Path) -> None:
    """Hubs written before site sources: the table is added, everything else is kept as it was."""
    path = tmp_path / "hub.db"
    hub = HubBackbone(path, "laptop")
    hub.push([item("1"), item("2")], cursor=2)
    hub.forget("2")
    hub.close()
    # Version 3 was today's schema without site_sources.
    conn = sqlite3.connect(path)
    conn.executescript("DROP TABLE site_sources; UPDATE schema_info SET value = '3' WHERE key = 'version';")
    conn.close()
    hub = HubBackbone(path, "laptop")
    try:
        assert _schema_version(path) == "4"
        assert hub.source_of() is None
        assert hub.set_source(SourceRecord("i-1", "m-1", "laptop.lan", "/a.db"), expected=None) is True
        assert [e["sourceId"] for e in hub.episodes()] == ["1"]
        assert [(c.seq, c.source_id) for c in hub.changes(0, 10)] == [(1, "1"), (3, "2")]
        assert hub.push([item("2")], cursor=2)[0].reason == "forgotten"
    finally:
        hub.close()
    hub = HubBackbone(path, "laptop")  # reopening keeps the record and the version
    try:
        found = hub.source_of()
        assert found is not None
        assert found.instance == "i-1"
    finally:
        hub.close()
    assert _schema_version(path) == "4"
