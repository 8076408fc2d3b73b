"""The cold archive's file format, and every decision about it, with no I/O.

One file per site and ISO week (of the episodes' ``ts``, UTC): gzip-compressed JSON Lines, one
episode per line as ``memsync export`` prints it, written as Convex writes it (``lines``), in
(ts, sourceId) order. Its manifest
(``ArchiveFile``) says how many lines, the sha256 and size of the compressed bytes, and the key and
time range. gzip because every machine can read it back without memsync (``zcat``), and it is in
the standard library; the benchmark measures what it costs against compressing the same lines alone.

Files are rewritten whole (a later run's episodes of the same week merged in, a forgotten episode
left out): a week is small, and a whole file is the unit that is written, verified and committed.
"""

from __future__ import annotations

import gzip
import hashlib
import zlib
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import orjson

from sync.archive import lines
from sync.archive.manifest import ArchiveFile

# Level 6: zlib's default; level 9 costs about twice the time for a few percent.
LEVEL = 6
WEEK_MS = 7 * 86400 * 1000


# What archiving takes out of the hot table: the text an agent wrote (and anything a secret could
# sit in). What stays beside the key (agent, reward, success, times, hashes) keeps the digest,
# health and approvals working on archived episodes without reading the archive.
TEXT_FIELDS = ("sessionId", "task", "input", "output", "critique", "tags", "metadata")


def stub(fields: Mapping[str, Any]) -> dict[str, Any]:
    """An archived episode's hot body: its fields without the text."""
    return {k: v for k, v in fields.items() if k not in TEXT_FIELDS}


class ArchiveDamaged(ValueError):
    """An archive file that does not read back as an archive (truncated, not gzip, a bad line)."""


def iso_week(ts_ms: int) -> str:
    """The ISO week an episode's ts falls in, UTC: "2026-W08"."""
    year, week, _ = datetime.fromtimestamp(ts_ms / 1000, UTC).isocalendar()
    return f"{year}-W{week:02d}"


def week_start_ms(week: str) -> int:
    """Monday 00:00 UTC of an ISO week "YYYY-Www"."""
    start = datetime.strptime(week + "-1", "%G-W%V-%u").replace(tzinfo=UTC)
    return int(start.timestamp() * 1000)


def week_end_ms(week: str) -> int:
    return week_start_ms(week) + WEEK_MS


def _order(record: Mapping[str, Any]) -> tuple[int, str]:
    ts = record.get("ts")
    return (int(ts) if isinstance(ts, int | float) else 0, str(record.get("sourceId")))


def merge(
    existing: Iterable[Mapping[str, Any]], new: Iterable[Mapping[str, Any]], drop: Collection[str] = ()
) -> list[Mapping[str, Any]]:
    """A week's records: the file's, then this run's (an episode archived again after an edit
    replaces its old copy), without the keys in ``drop`` (forgotten), in file order."""
    by_key: dict[str, Mapping[str, Any]] = {}
    for record in (*existing, *new):
        key = str(record["sourceId"])
        if key not in drop:
            # Records are only read from here on: a new one is kept as it is, not copied.
            by_key[key] = {k: v for k, v in record.items() if k != "archived"} if "archived" in record else record
    return sorted(by_key.values(), key=_order)


def jsonl(records: Sequence[Mapping[str, Any]]) -> bytes:
    """The file's text before compression: one JSON object per line, each ending in a newline,
    UTF-8 unescaped, written as Convex writes it (``sync.archive.lines``: its numbers, its key
    order, metadata it keeps as text): contracts/archive_week pins these bytes."""
    return b"".join(map(lines.line, records))


def encode(records: Sequence[Mapping[str, Any]]) -> bytes:
    """The file's bytes: deterministic (no name or time in the gzip header), so the same records
    always give the same sha256. zlib writes the gzip header itself, as Node's zlib does on Convex,
    whatever the ``gzip`` module's version would write."""
    return zlib.compress(jsonl(records), LEVEL, wbits=31)


def decode(data: bytes) -> list[dict[str, Any]]:
    """The records of a file; ``ArchiveDamaged`` names what is wrong with a damaged one."""
    try:
        text = gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        raise ArchiveDamaged(f"it does not decompress ({exc})") from None
    records: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            raise ArchiveDamaged(f"line {number} is not JSON") from None
        if not isinstance(record, dict) or not isinstance(record.get("sourceId"), str):
            raise ArchiveDamaged(f"line {number} is not an episode")
        try:
            records.append(lines.exported_form(record))
        except ValueError:
            raise ArchiveDamaged(f"line {number}'s metadataJson is not JSON") from None
    return records


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def manifest(
    site: str, week: str, records: Sequence[Mapping[str, Any]], data: bytes, written_at: int, location: str
) -> ArchiveFile:
    """The manifest of a file just encoded from ``records`` (which are in file order)."""
    if not records:
        raise ValueError("an archive file holds at least one episode")
    return ArchiveFile(
        site=site,
        week=week,
        count=len(records),
        sha256=sha256_of(data),
        bytes=len(data),
        first_id=str(records[0]["sourceId"]),
        last_id=str(records[-1]["sourceId"]),
        from_ts=_order(records[0])[0],
        to_ts=_order(records[-1])[0],
        written_at=written_at,
        location=location,
    )


def check(file: ArchiveFile, data: bytes | None, archived_keys: Collection[str]) -> str | None:
    """What is wrong with a file read back against its manifest and the hot table's archived keys
    of its week (each must be in it), or None. ``data`` None: the file is missing."""
    if data is None:
        return f"the file is missing ({file.location})"
    if len(data) != file.bytes or sha256_of(data) != file.sha256:
        return (
            f"its bytes changed: sha256 {sha256_of(data)[:12]}, {len(data)} bytes; "
            f"the manifest says {file.sha256[:12]}, {file.bytes} bytes"
        )
    try:
        records = decode(data)
    except ArchiveDamaged as exc:
        return str(exc)
    return _content_problem(file, records, archived_keys)


def readback_problem(file: ArchiveFile, data: bytes | None) -> str | None:
    """A file just written, read back: its bytes are the ones encoded (size and sha256), they
    decompress, and hold the manifest's number of lines. Its lines were encoded from records in
    this process, so parsing them again would check the encoder, not the storage."""
    if data is None:
        return f"the file is missing ({file.location})"
    if len(data) != file.bytes or sha256_of(data) != file.sha256:
        return "its bytes are not the ones written"
    try:
        held = gzip.decompress(data).count(b"\n")
    except (OSError, EOFError, zlib.error) as exc:
        return f"it does not decompress ({exc})"
    return None if held == file.count else f"it holds {held} lines; {file.count} were written"


def _content_problem(
    file: ArchiveFile, records: Sequence[Mapping[str, Any]], archived_keys: Collection[str]
) -> str | None:
    if len(records) != file.count:
        return f"it holds {len(records)} episodes; the manifest says {file.count}"
    if records and (str(records[0]["sourceId"]), str(records[-1]["sourceId"])) != (file.first_id, file.last_id):
        return "its key range is not the manifest's"
    wrong_site = sum(1 for r in records if r.get("sourceSite") != file.site)
    if wrong_site:
        return f"{wrong_site} episodes in it are not {file.site}'s"
    held = {str(r["sourceId"]) for r in records}
    missing = [k for k in archived_keys if k not in held]
    if missing:
        return f"{len(missing)} archived episodes of its week are not in it (e.g. {file.site}:{missing[0]})"
    return None


def overlaps(file: ArchiveFile, since_ms: int | None, until_ms: int | None) -> bool:
    """Is a file in a ``--since``/``--until`` range (by its episodes' ts)?"""
    return (since_ms is None or file.to_ts >= since_ms) and (until_ms is None or file.from_ts < until_ms)
