"""The cold archive: the file format's decisions from tables, the hub's archive read around memsync
(the hub file's bytes, the archive folder's files), ``kill -9`` in the middle of archiving, and the
``archive`` / ``export --archived`` / ``status`` commands. Both backbones' shared behaviour is in
test_backbone_conformance.py."""

from __future__ import annotations

import gzip
import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from test_backbone_conformance import item

from sync.archive import codec
from sync.archive.files import ArchiveFolder
from sync.archive.manifest import ArchiveFile
from sync.backbone.hub import HubBackbone
from sync.episode import EXPORT_FIELDS
from sync.errors import BackboneBroken

SITE = "laptop"


def record(source_id: str, ts: int, site: str = SITE, **extra: Any) -> dict[str, Any]:
    return {"sourceSite": site, "sourceId": source_id, "ts": ts, "task": f"task {source_id}", **extra}


# --- the format, from tables -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ts_ms", "week"),
    [
        (0, "1970-W01"),  # a Thursday: ISO week 1 of 1970
        (1_767_225_600_000, "2026-W01"),  # 2026-01-01, a Thursday
        (1_767_052_800_000, "2026-W01"),  # 2025-12-30 belongs to 2026's first week
        (1_798_675_200_000, "2026-W53"),  # 2026-12-31: 2026 (starting on a Thursday) has 53 weeks
        (1_735_603_200_000, "2025-W01"),  # 2024-12-31 belongs to 2025's first week
    ],
)
def test_an_episode_goes_to_the_iso_week_of_its_ts(ts_ms: int, week: str) -> None:
    assert codec.iso_week(ts_ms) == week
    assert codec.week_start_ms(week) <= ts_ms < codec.week_end_ms(week)


def test_merging_a_week_replaces_older_copies_leaves_forgotten_ones_out_and_keeps_file_order() -> None:
    existing = [record("2", 20), record("5", 10, output="old")]
    new = [record("5", 10, output="new"), record("1", 30), record("10", 10)]
    merged = codec.merge(existing, new, drop={"2"})
    assert [(r["sourceId"], r.get("output")) for r in merged] == [("10", None), ("5", "new"), ("1", None)]
    assert all("archived" not in r for r in codec.merge([record("1", 1, archived=True)], []))


def test_the_encoding_is_deterministic_and_plain_gzip() -> None:
    records = [record("1", 1), record("2", 2, tags=["ünï"])]
    data = codec.encode(records)
    assert codec.encode(records) == data  # the same records: the same sha256
    in_export_order = {k: records[1][k] for k in EXPORT_FIELDS if k in records[1]}  # as Convex writes a line
    assert gzip.decompress(data).decode().splitlines()[1] == json.dumps(
        in_export_order, separators=(",", ":"), ensure_ascii=False
    )
    assert codec.decode(data) == records


def _file(records: list[dict[str, Any]], data: bytes) -> ArchiveFile:
    return codec.manifest(SITE, "1970-W01", records, data, 0, "laptop/1970-W01.x.jsonl.gz")


RECORDS = [record("1", 1), record("2", 2), record("3", 3)]
GOOD = codec.encode(RECORDS)


@pytest.mark.parametrize(
    ("data", "manifest_change", "archived_keys", "problem"),
    [
        (GOOD, {}, ["1", "3"], None),
        (None, {}, [], "the file is missing"),
        (GOOD[:-9], {}, [], "its bytes changed"),
        (GOOD[:10] + bytes([GOOD[10] ^ 1]) + GOOD[11:], {}, [], "its bytes changed"),
        (b"not gzip at all", {"bytes": 15, "sha256": codec.sha256_of(b"not gzip at all")}, [], "does not decompress"),
        (
            gzip.compress(b'{"sourceId":"1"}\nnot json\n', mtime=0),
            {"bytes": -1},
            [],
            "line 2 is not JSON",
        ),
        (GOOD, {"count": 4}, [], "holds 3 episodes; the manifest says 4"),
        (GOOD, {"last_id": "9"}, [], "key range"),
        (GOOD, {"site": "vm"}, [], "3 episodes in it are not vm's"),
        (GOOD, {}, ["1", "7"], "1 archived episodes of its week are not in it (e.g. laptop:7)"),
    ],
)
def test_verify_names_what_is_wrong_with_a_file(
    data: bytes | None, manifest_change: dict[str, Any], archived_keys: list[str], problem: str | None
) -> None:
    file = replace(_file(RECORDS, GOOD), **manifest_change)
    if manifest_change.get("bytes") == -1 and data is not None:  # a bad line inside a well-formed file
        file = replace(file, bytes=len(data), sha256=codec.sha256_of(data))
    found = codec.check(file, data, archived_keys)
    if problem is None:
        assert found is None
    else:
        assert found is not None
        assert problem in found


@pytest.mark.parametrize(
    ("since", "until", "inside"),
    [(None, None, True), (5, None, True), (11, None, False), (None, 5, True), (None, 2, False), (2, 4, True)],
)
def test_a_file_is_in_a_range_when_its_episodes_dates_overlap_it(
    since: int | None, until: int | None, inside: bool
) -> None:
    file = replace(_file(RECORDS, GOOD), from_ts=2, to_ts=10)
    assert codec.overlaps(file, since, until) is inside


# --- the hub's archive, read around memsync ------------------------------------------------------------


SECRET = "archived-text-that-must-leave-the-hot-table"


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[HubBackbone]:
    backbone = HubBackbone(tmp_path / "hub.db", SITE)
    yield backbone
    backbone.close()


def _hub_bytes(path: Path) -> bytes:
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))


def _archive_text(folder: ArchiveFolder) -> bytes:
    return b"".join(gzip.decompress(p.read_bytes()) for p in folder.root.glob("*/*.jsonl.gz"))


def test_archived_text_leaves_the_hub_file_and_is_in_the_archive_beside_it(hub: HubBackbone, tmp_path: Path) -> None:
    hub.push([item(i, at=1_000 + i, output=f"{SECRET} {i}") for i in range(1, 4)] + [item(4, output="hot")], cursor=4)
    assert SECRET.encode() in _hub_bytes(hub.path)  # the control: before archiving it is there
    assert hub.archive_older_than(2_000 * 1000, 100) == 3

    assert SECRET.encode() not in _hub_bytes(hub.path)
    folder = ArchiveFolder(tmp_path / "hub.archive")
    (path,) = folder.root.glob("laptop/1970-W01.*.jsonl.gz")
    lines = [json.loads(line) for line in gzip.decompress(path.read_bytes()).splitlines()]  # what zcat shows
    assert [(r["sourceId"], r["output"]) for r in lines] == [(str(i), f"{SECRET} {i}") for i in (1, 2, 3)]
    manifest = json.loads(path.with_name(path.name.removesuffix(".jsonl.gz") + ".manifest.json").read_text())
    assert manifest["count"] == 3
    assert manifest["sha256"] == codec.sha256_of(path.read_bytes())
    with closing(sqlite3.connect(hub.path)) as conn:
        kept = conn.execute("SELECT body FROM episodes WHERE archived = 1 ORDER BY source_id").fetchall()
    assert all(set(json.loads(body)).isdisjoint(codec.TEXT_FIELDS) for (body,) in kept)
    assert json.loads(kept[0][0])["agentName"] == "coder"  # what the digest and health read stays

    # Forgetting an archived episode: its text is in no file of the archive folder any more.
    hub.forget("2")
    assert f"{SECRET} 2".encode() not in _archive_text(folder)
    assert f"{SECRET} 3".encode() in _archive_text(folder)
    assert len(list(folder.root.glob("laptop/*.jsonl.gz"))) == 1  # the old version removed

    # Restored (hot again), its file still holds a copy: forgetting it rewrites that file too.
    assert hub.restore_archive() == 2
    assert hub.forget("3").archive_week == "1970-W01"
    assert f"{SECRET} 3".encode() not in _archive_text(folder)
    assert f"{SECRET} 1".encode() in _archive_text(folder)
    assert [c.problem for c in hub.verify_archive()] == [None]


def test_a_forget_interrupted_before_its_rewrite_is_finished_by_the_next_run(hub: HubBackbone, tmp_path: Path) -> None:
    hub.push([item(i, at=1_000 + i, output=f"{SECRET} {i}") for i in (1, 2)], cursor=2)
    hub.archive_older_than(2_000 * 1000, 100)
    # What forget's transaction leaves when its process dies before the rewrite: the row gone,
    # the debt recorded (written here around memsync, as the transaction does).
    with closing(sqlite3.connect(hub.path)) as conn, conn:
        conn.execute("DELETE FROM episodes WHERE source_id = '1'")
        conn.execute("INSERT INTO archive_forgets VALUES ('laptop', '1970-W01', '1')")
    folder = ArchiveFolder(tmp_path / "hub.archive")
    assert f"{SECRET} 1".encode() in _archive_text(folder)
    hub.archive_older_than(2_000 * 1000, 100)
    assert f"{SECRET} 1".encode() not in _archive_text(folder)
    assert [c.problem for c in hub.verify_archive()] == [None]


def test_a_damaged_file_is_reported_and_not_archived_into(hub: HubBackbone, tmp_path: Path) -> None:
    hub.push([item(i, at=1_000 + i) for i in (1, 2)], cursor=2)
    hub.archive_older_than(2_000 * 1000, 100)
    (file,) = hub.archive_files()
    path = ArchiveFolder(tmp_path / "hub.archive").path(file.location)
    path.write_bytes(path.read_bytes()[:-20])
    (check,) = hub.verify_archive()
    assert check.problem is not None
    assert "bytes changed" in check.problem
    hub.push([item(3, at=1_003)], cursor=3)
    with pytest.raises(BackboneBroken, match=r"archive file of laptop 1970-W01 .* is damaged"):
        hub.archive_older_than(2_000 * 1000, 100)
    with pytest.raises(BackboneBroken, match=r"put it back from a backup"):
        list(hub.archived_episodes())
    assert {e["sourceId"] for e in hub.episodes()} == {"3"}  # still hot: nothing lost


# --- kill -9 in the middle ---------------------------------------------------------------------------


# --- the commands, as a user runs them ---------------------------------------------------------------
