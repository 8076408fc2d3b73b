"""The golden archive week (contracts/archive_week): the hub writes the pinned lines from the
contract's episodes, frames them as pinned, and reads both its own file and the one Convex wrote
(cloud_functions/archiveWeek.test.ts holds the same from Convex's side)."""

from __future__ import annotations

import gzip
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from contract import CONTRACTS, contract

from sync.archive import codec
from sync.archive.files import MANIFEST_SUFFIX, SUFFIX, ArchiveFolder, location_of
from sync.archive.manifest import ArchiveFile
from sync.episode import EXPORT_FIELDS

WEEK = CONTRACTS / "archive_week"
INPUT: dict[str, Any] = contract("archive_week/input.json")


def golden(name: str) -> bytes:
    return (WEEK / name).read_bytes()


def written() -> list[Any]:
    return codec.merge([], INPUT["add"], INPUT["drop"])


def test_the_hub_writes_the_golden_lines_byte_for_byte() -> None:
    assert codec.jsonl(written()) == golden(f"{INPUT['week']}.jsonl")
    # Each line's keys in the order the hub's export writes them (what the golden input holds).
    assert {tuple(r) for r in codec.decode(golden("hub.jsonl.gz"))} == {EXPORT_FIELDS}


def test_the_hub_frames_them_as_pinned_plain_gzip_at_the_pinned_level() -> None:
    data = codec.encode(written())
    assert INPUT["gzip"]["level"] == codec.LEVEL
    header = bytes.fromhex(INPUT["gzip"]["header"])
    assert data[: len(header)] == header  # no name, no comment, mtime 0, XFL 0
    assert gzip.decompress(data) == golden(f"{INPUT['week']}.jsonl")
    assert codec.encode(written()) == data  # deterministic: the same records, the same sha256


def test_every_episode_of_the_week_is_in_its_week() -> None:
    records = written()
    assert {codec.iso_week(r["ts"]) for r in records} == {INPUT["week"]}
    assert codec.week_start_ms(INPUT["week"]) == records[0]["ts"]
    assert codec.week_end_ms(INPUT["week"]) - 1 == records[-1]["ts"]


def test_the_hub_writes_the_golden_manifest_beside_its_file(tmp_path: Path) -> None:
    data = golden("hub.jsonl.gz")
    location = location_of(INPUT["site"], INPUT["week"], codec.sha256_of(data))
    file = codec.manifest(INPUT["site"], INPUT["week"], written(), data, INPUT["writtenAt"], location)
    ArchiveFolder(tmp_path).write(location, data, file)
    beside = tmp_path / location.removesuffix(SUFFIX)
    assert beside.with_name(beside.name + MANIFEST_SUFFIX).read_bytes() == golden("hub.manifest.json")


def _convex_file() -> ArchiveFile:
    """The manifest Convex keeps of its file (an archiveFiles row), as the hub's value."""
    m = contract("archive_week/convex.manifest.json")
    return ArchiveFile(
        site=INPUT["site"],
        week=INPUT["week"],
        count=m["count"],
        sha256=m["sha256"],
        bytes=m["bytes"],
        first_id=m["firstId"],
        last_id=m["lastId"],
        from_ts=m["fromTs"],
        to_ts=m["toTs"],
        written_at=INPUT["writtenAt"],
        location="convex storage",
    )


@pytest.mark.parametrize("writer", ["hub", "convex"])
def test_the_hub_reads_each_sides_file_against_its_manifest(writer: str) -> None:
    data = golden(f"{writer}.jsonl.gz")
    file = ArchiveFile(**contract("archive_week/hub.manifest.json")) if writer == "hub" else _convex_file()
    keys = [r["sourceId"] for r in written()]
    assert codec.check(file, data, keys) is None
    assert codec.readback_problem(file, data) is None
    assert codec.decode(data) == written()
    # The manifest each side keeps is the one the hub derives from the same file.
    derived = codec.manifest(file.site, file.week, codec.decode(data), data, file.written_at, file.location)
    assert asdict(derived) == asdict(file)


def test_a_golden_file_damaged_by_one_byte_is_refused() -> None:
    data = bytearray(golden("convex.jsonl.gz"))
    data[len(data) // 2] ^= 0xFF
    problem = codec.check(_convex_file(), bytes(data), ())
    assert problem is not None
    assert problem.startswith("its bytes changed")
