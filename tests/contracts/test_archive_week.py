"""The golden archive week (contracts/archive_week): the hub writes the pinned lines from the
contract's episodes, as Convex writes them (its numbers, its key order, metadata it keeps as text),
frames them as pinned, and reads both its own file and the one Convex wrote, and a file an older
hub wrote (cloud_functions/archiveWeek.test.ts holds the same from Convex's side)."""

from __future__ import annotations

import gzip
import zlib
from dataclasses import asdict
from pathlib import Path
from typing import Any

import orjson
import pytest
from contract import CONTRACTS, contract

from sync.archive import codec, lines
from sync.archive.files import MANIFEST_SUFFIX, SUFFIX, ArchiveFolder, location_of
from sync.archive.manifest import ArchiveFile
from sync.episode import EXPORT_FIELDS, canonical_json

WEEK = CONTRACTS / "archive_week"
INPUT: dict[str, Any] = contract("archive_week/input.json")


def golden(name: str) -> bytes:
    return (WEEK / name).read_bytes()


def written() -> list[Any]:
    """The week's records as the hub holds them (metadata Convex keeps as text, as an object)."""
    return codec.merge([], [lines.exported_form(r) for r in INPUT["add"]], INPUT["drop"])


def test_the_hub_writes_the_golden_lines_byte_for_byte() -> None:
    assert codec.jsonl(written()) == golden(f"{INPUT['week']}.jsonl")
    # Each line's keys in the order the hub's export writes them (what the golden input holds),
    # metadata kept as text after them; read back, the text is the object again.
    raw = [orjson.loads(line) for line in golden(f"{INPUT['week']}.jsonl").splitlines()]
    assert {tuple(r) for r in raw} == {EXPORT_FIELDS, (*EXPORT_FIELDS, lines.TEXT_FIELD)}
    assert {tuple(r) for r in codec.decode(golden("hub.jsonl.gz"))} == {EXPORT_FIELDS}


@pytest.mark.parametrize(("text", "js"), INPUT["numbers"], ids=[n[0] for n in INPUT["numbers"]])
def test_numbers_are_written_as_javascript_writes_them(text: str, js: str) -> None:
    assert lines.js_number(float(text)) == js
    assert f',"reward":{js},'.encode() in lines.line({"sourceId": "1", "reward": float(text), "success": True})


def test_integers_are_written_as_javascript_writes_their_float64() -> None:
    assert lines.line({"reward": 1, "ts": 2**53 - 1}) == b'{"reward":1,"ts":9007199254740991}\n'
    assert lines.line({"ts": 2**53 + 1}) == b'{"ts":9007199254740992}\n'  # what Convex holds of it


def test_object_keys_come_in_convexs_order() -> None:
    assert lines.js_key_order(INPUT["keys"]["given"]) == INPUT["keys"]["convex"]
    # Code units, not code points: past U+FFFF the two orders differ.
    assert sorted(["｡", "😀"]) != lines.js_key_order(["｡", "😀"])


def test_the_metadata_convex_keeps_as_text_is_the_daemons_text() -> None:
    as_text = [r for r in INPUT["add"] if lines.TEXT_FIELD in r]
    assert {r["sourceId"] for r in as_text} == {r["sourceId"] for r in written() if not lines.carried(r["metadata"])}
    for given in as_text:
        assert given["metadata"] is None
        assert canonical_json(lines.exported_form(given)["metadata"]).decode() == given[lines.TEXT_FIELD]


@pytest.mark.parametrize(
    ("metadata", "carried"),
    [
        ({}, True),
        ({"tool": "bash", "n": [1, 2.5, {"deep": None}], "10": True, "_memsync": {}}, True),
        ({" ~": 2**53 - 1, "f": -(2.0**53) + 1, "x" * 1024: 1e300 / 1e300}, True),
        ({"clé": 1}, False),
        ({"a": {"$ref": "#"}}, False),
        ({"tab\there": 1}, False),
        ({"x" * 1025: 1}, False),
        ({"n": 2**53}, False),
        ({"n": [-(2**53)]}, False),
        ({"f": 1e16}, False),
    ],
)
def test_which_metadata_convex_carries_as_an_object(metadata: dict[str, Any], carried: bool) -> None:
    assert lines.carried(metadata) is carried
    line = orjson.loads(lines.line({"sourceId": "1", "metadata": metadata}))
    assert line == (
        {"sourceId": "1", "metadata": metadata}
        if carried
        else {"sourceId": "1", "metadata": None, lines.TEXT_FIELD: canonical_json(metadata).decode()}
    )
    assert lines.exported_form(line) == {"sourceId": "1", "metadata": metadata}  # read back exactly


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


def test_a_file_an_older_hub_wrote_still_reads_and_is_written_anew_when_its_week_is() -> None:
    """Before the hub wrote as Convex does: numbers as Python writes them (1.0), metadata's keys
    in the agent's order, metadata Convex keeps as text written as an object."""
    records = written()
    old_lines = b"".join(orjson.dumps(r) + b"\n" for r in records)
    assert b'"reward":1.0,' in old_lines
    assert b'"scores":[0.3,1e-7,12345.678,1.0,-0.0' in old_lines
    assert '"metadata":{"$schema":"s","a":[1e-7],"clé":{"日本":1.0}'.encode() in old_lines
    data = zlib.compress(old_lines, codec.LEVEL, wbits=31)
    file = codec.manifest(INPUT["site"], INPUT["week"], records, data, INPUT["writtenAt"], "old")
    assert codec.check(file, data, [r["sourceId"] for r in records]) is None
    back = codec.decode(data)
    assert back == records
    assert (back[3]["sourceId"], back[3]["reward"], type(back[3]["reward"])) == ("ep-3", 1.0, float)
    assert list(back[1]["metadata"]) == ["scores", "nested", "attempt", "10", "2", "_memsync"]  # the agent's order
    # Its week rewritten (an episode added or forgotten): the lines Convex would write.
    assert codec.jsonl(codec.merge(back, [], ())) == golden(f"{INPUT['week']}.jsonl")


def test_a_line_whose_metadata_text_is_not_json_is_damage() -> None:
    data = zlib.compress(b'{"sourceId":"1","metadata":null,"metadataJson":"{nope"}\n', codec.LEVEL, wbits=31)
    with pytest.raises(codec.ArchiveDamaged, match="line 1's metadataJson is not JSON"):
        codec.decode(data)


def test_a_golden_file_damaged_by_one_byte_is_refused() -> None:
    data = bytearray(golden("convex.jsonl.gz"))
    data[len(data) // 2] ^= 0xFF
    problem = codec.check(_convex_file(), bytes(data), ())
    assert problem is not None
    assert problem.startswith("its bytes changed")
