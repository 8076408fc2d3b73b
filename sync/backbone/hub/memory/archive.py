"""The hub's cold archive: the cleanup sweep that moves old episodes' bodies to compressed files
beside the hub, and ``ColdArchive`` (list, verify, restore, the archived episodes for export).

Order, so that a crash at any point loses and duplicates nothing: a week's file is written whole
(its previous episodes merged with the new ones), fsynced and read back against its manifest; only
then one transaction switches the week's ``archive_files`` row to it and strips the text from
exactly the rows it holds (a row edited since it was read keeps its body and stays hot). Before the
commit the old row still names the old, complete file and every new episode is still hot; after
it, the old file is removed. Every episode is at every moment hot or in the file its week's row
names (tested with ``kill -9`` in the middle).

The commit is a compare-and-set on the row's sha256: a forget rewriting the same week meanwhile
makes the sweep read the week again instead of writing a forgotten episode back.

Archiving, restoring and forgetting are changes in the feed, so every site's index marks a point
archived, unmarks it, or drops it.
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import astuple
from typing import Any

from sync.archive import codec
from sync.archive.files import ArchiveFolder, location_of
from sync.archive.manifest import ArchiveFile
from sync.backbone.base import ArchiveCheck, ArchiveRun, Forgotten
from sync.backbone.hub.connection import HubConnection
from sync.backbone.hub.fleet.digest import rebuild_stored_digest
from sync.backbone.hub.memory.dreams import release_forgotten
from sync.backbone.hub.memory.episodes import exported, with_approval
from sync.backbone.hub.memory.links import drop_links
from sync.backbone.hub.memory.uses import forget_uses
from sync.backbone.hub.schema import change_seq, set_change_seq
from sync.errors import BackboneBroken, BackboneRejected

_FILE_COLUMNS = "site, week, count, sha256, bytes, first_id, last_id, from_ts, to_ts, written_at, location"
# A week whose row changed under a writer (a forget and the sweep at once) is read again, this often.
_ATTEMPTS = 5


def _file(row: Sequence[Any]) -> ArchiveFile:
    return ArchiveFile(*row)


class HubArchive(HubConnection):
    @property
    def folder(self) -> ArchiveFolder:
        return ArchiveFolder.beside(self.path)

    # -- the sweep --------------------------------------------------------------------------------
    def archive_older_than(self, cutoff_ms: int, limit: int) -> int:
        """Hot episodes with ts < ``cutoff_ms``, a whole site-week at a time, oldest week first,
        until ``limit`` rows are archived or none is left (a week larger than ``limit`` is written
        in parts); then the files forgets still owe, and orphans of a crash. Each week's file is
        written once per call: what one call takes is bounded by ``limit``, and the write lock is
        held only for each week's commit, never while a file is written."""
        if limit < 0:
            raise BackboneRejected(f"limit must not be negative, got {limit}")
        archived = files = 0
        while archived < limit:
            oldest = self._read(
                "SELECT source_site, ts FROM episodes WHERE archived = 0 AND ts < ? ORDER BY ts LIMIT 1", (cutoff_ms,)
            )
            if not oldest:
                break
            site, week = oldest[0][0], codec.iso_week(int(oldest[0][1]))
            rows = self._read(
                "SELECT source_site, source_id, body, content_hash, synced_at FROM episodes"
                " WHERE archived = 0 AND source_site = ? AND ts >= ? AND ts < ? ORDER BY ts LIMIT ?",
                (site, codec.week_start_ms(week), min(codec.week_end_ms(week), cutoff_ms), limit - archived),
            )
            records = [exported(*row) for row in rows]
            moved = self._rewrite(site, week, add=records)
            archived, files = archived + moved, files + 1
            if moved == 0:  # every row changed under us (edited meanwhile): the next call sees them
                break
        files += self._settle_forgets()
        self._remove_orphans()
        if archived or files:
            self._run(
                lambda conn: conn.execute(
                    "INSERT INTO archive_runs (at, archived, files) VALUES (?, ?, ?)", (self.clock(), archived, files)
                )
            )
        return archived

    def _rewrite(self, site: str, week: str, *, add: Sequence[dict[str, Any]] = (), drop: Sequence[str] = ()) -> int:
        """Write the week's file with ``add`` merged in and ``drop`` left out, verify it, commit;
        how many rows were archived."""
        for _ in range(_ATTEMPTS):
            current = self._week_file(site, week)
            existing = [] if current is None else self._records(current)
            records = codec.merge(existing, add, drop)
            outcome = self._commit(site, week, current, records, add, drop)
            if outcome is not None:
                return outcome
        raise BackboneRejected(f"the archive of {site} {week} kept changing while it was rewritten; try again")

    def _records(self, file: ArchiveFile) -> list[dict[str, Any]]:
        data = self.folder.read(file.location)
        problem = codec.check(file, data, ())
        if problem is not None or data is None:
            raise BackboneBroken(
                f"the archive file of {file.site} {file.week} ({self.folder.path(file.location)}) is damaged: "
                f"{problem}. Nothing was read from it or archived into it: put it back from a backup "
                f"(`memsync archive verify --site {file.site}` lists every damaged file)"
            )
        return codec.decode(data)

    def _commit(
        self,
        site: str,
        week: str,
        current: ArchiveFile | None,
        records: Sequence[Mapping[str, Any]],
        add: Sequence[dict[str, Any]],
        drop: Sequence[str],
    ) -> int | None:
        """Write, verify and switch to the new file (None: the week's row changed meanwhile)."""
        new: ArchiveFile | None = None
        if records:
            data = codec.encode(records)
            new = codec.manifest(
                site, week, records, data, self.clock(), location_of(site, week, codec.sha256_of(data))
            )
            self.folder.write(new.location, data, new)
            problem = codec.readback_problem(new, self.folder.read(new.location))
            if problem is not None:
                raise BackboneBroken(f"the archive file just written for {site} {week} does not read back: {problem}")

        def switch(conn: sqlite3.Connection) -> int | None:
            row = conn.execute("SELECT sha256 FROM archive_files WHERE site = ? AND week = ?", (site, week)).fetchone()
            if (None if row is None else row[0]) != (None if current is None else current.sha256):
                return None
            if new is None:
                conn.execute("DELETE FROM archive_files WHERE site = ? AND week = ?", (site, week))
            else:
                marks = ", ".join("?" * len(_FILE_COLUMNS.split(",")))
                conn.execute(f"INSERT OR REPLACE INTO archive_files ({_FILE_COLUMNS}) VALUES ({marks})", astuple(new))
            if drop:
                conn.executemany(
                    "DELETE FROM archive_forgets WHERE site = ? AND week = ? AND source_id = ?",
                    [(site, week, key) for key in drop],
                )
            # An episode edited into another week since its last archiving: that week's file keeps
            # an old copy, which it owes dropping (settled at the end of this run, as forgets are).
            conn.executemany(
                "INSERT OR IGNORE INTO archive_forgets SELECT source_site, archive_week, source_id FROM episodes"
                " WHERE source_site = ? AND source_id = ? AND content_hash = ? AND archived = 0"
                " AND archive_week IS NOT NULL AND archive_week != ?",
                [(site, record["sourceId"], record["contentHash"], week) for record in add],
            )
            # Each row its own feed position (a row skipped, edited meanwhile, leaves a gap: fine).
            seq = change_seq(conn)
            moved = conn.executemany(
                f"UPDATE episodes SET body = json_remove(body, {_TEXT_PATHS}), archived = 1, archive_week = ?,"
                " change_seq = ? WHERE source_site = ? AND source_id = ? AND content_hash = ? AND archived = 0",
                [(week, seq + n, site, record["sourceId"], record["contentHash"]) for n, record in enumerate(add, 1)],
            ).rowcount
            set_change_seq(conn, seq + len(add))
            return int(moved)

        moved = self._run(switch)
        if moved is None:
            if new is not None and (current is None or new.location != current.location):
                self.folder.remove(new.location)
            return None
        if current is not None and (new is None or new.location != current.location):
            self.folder.remove(current.location)
        return moved

    def _settle_forgets(self) -> int:
        """Rewrite the weeks that still hold an episode forgotten while archived (a forget whose
        process died before its rewrite); how many files."""
        owed: dict[tuple[str, str], list[str]] = defaultdict(list)
        # A key archived into the owing week again since (its ts moved back) is that file's own
        # copy now: the debt lapses (dropped with the rewrite of nothing else, below).
        rows = self._read(
            "SELECT f.site, f.week, f.source_id, e.archived = 1 AND e.archive_week = f.week FROM archive_forgets f"
            " LEFT JOIN episodes e ON e.source_site = f.site AND e.source_id = f.source_id",
            (),
        )
        lapsed = [(site, week, key) for site, week, key, current in rows if current]
        if lapsed:
            self._run(
                lambda conn: conn.executemany(
                    "DELETE FROM archive_forgets WHERE site = ? AND week = ? AND source_id = ?", lapsed
                )
            )
        for site, week, source_id, current in rows:
            if not current:
                owed[(site, week)].append(source_id)
        for (site, week), keys in owed.items():
            self._rewrite(site, week, drop=keys)
        return len(owed)

    def _remove_orphans(self) -> None:
        named = {row[0] for row in self._read("SELECT location FROM archive_files", ())}
        for location in self.folder.orphans(named):
            self.folder.remove(location)

    # -- forgetting --------------------------------------------------------------------------------
    def forget(self, source_id: str) -> Forgotten:
        """Delete the row and keep a tombstone (a new tombstone is a change: every index drops the
        point); if a week's file holds a copy of it (archived, or hot again after a restore or an
        edit), that file owes a rewrite without it, recorded in the same transaction and done at
        once (or by the next sweep, if this process dies first)."""

        def forget(conn: sqlite3.Connection) -> tuple[bool, str | None]:
            row = conn.execute(
                "SELECT archive_week, created_at FROM episodes WHERE source_site = ? AND source_id = ?",
                (self.site, source_id),
            ).fetchone()
            conn.execute("DELETE FROM episodes WHERE source_site = ? AND source_id = ?", (self.site, source_id))
            release_forgotten(conn, (self.site, source_id), self.clock())
            drop_links(conn, self.site, source_id)
            week = None if row is None else row[0]
            if row is not None:  # its task may be in its day's stored digest
                rebuild_stored_digest(conn, row[1], self.clock())
                # total_synced counts the site's episodes held here: status and the fleet follow it.
                conn.execute(
                    "UPDATE sync_cursors SET total_synced = max(0, total_synced - 1) WHERE site = ?", (self.site,)
                )
            forget_uses(conn, self.site, source_id)
            if week is not None:
                conn.execute("INSERT OR IGNORE INTO archive_forgets VALUES (?, ?, ?)", (self.site, week, source_id))
            if not conn.execute(
                "SELECT 1 FROM tombstones WHERE source_site = ? AND source_id = ?", (self.site, source_id)
            ).fetchone():
                seq = change_seq(conn) + 1
                conn.execute(
                    "INSERT INTO tombstones (source_site, source_id, deleted_at, change_seq) VALUES (?, ?, ?, ?)",
                    (self.site, source_id, self.clock(), seq),
                )
                set_change_seq(conn, seq)
            return row is not None, week

        deleted, week = self._run(forget)
        if week is not None:
            self._rewrite(self.site, week, drop=[source_id])
        return Forgotten(deleted, week)

    # -- ColdArchive --------------------------------------------------------------------------------
    def _week_file(self, site: str, week: str) -> ArchiveFile | None:
        rows = self._read(f"SELECT {_FILE_COLUMNS} FROM archive_files WHERE site = ? AND week = ?", (site, week))
        return _file(rows[0]) if rows else None

    def archive_files(
        self, site: str | None = None, since_ms: int | None = None, until_ms: int | None = None
    ) -> list[ArchiveFile]:
        rows = self._read(
            f"SELECT {_FILE_COLUMNS} FROM archive_files WHERE (? IS NULL OR site = ?) ORDER BY site, week",
            (site, site),
        )
        return [f for f in map(_file, rows) if codec.overlaps(f, since_ms, until_ms)]

    def verify_archive(
        self, site: str | None = None, since_ms: int | None = None, until_ms: int | None = None
    ) -> list[ArchiveCheck]:
        checks = []
        for file in self.archive_files(site, since_ms, until_ms):
            keys = self._archived_keys(file)
            checks.append(ArchiveCheck(file, codec.check(file, self.folder.read(file.location), keys)))
        return checks

    def restore_archive(self, site: str | None = None, since_ms: int | None = None, until_ms: int | None = None) -> int:
        restored = 0
        for file in self.archive_files(site, since_ms, until_ms):
            records = self._records(file)

            def bring_back(
                conn: sqlite3.Connection, file: ArchiveFile = file, records: list[dict[str, Any]] = records
            ) -> int:
                seq = change_seq(conn)
                back = 0
                for record in records:
                    body = json.dumps({k: v for k, v in record.items() if k not in _KEY_FIELDS})
                    back += conn.execute(
                        "UPDATE episodes SET body = ?, archived = 0, change_seq = ?"
                        " WHERE source_site = ? AND source_id = ? AND content_hash = ? AND archived = 1"
                        " AND archive_week = ?",
                        (body, seq + back + 1, file.site, record["sourceId"], record["contentHash"], file.week),
                    ).rowcount
                set_change_seq(conn, seq + back)
                return back

            restored += self._run(bring_back)
        return restored

    def archived_episodes(self, site: str | None = None) -> Iterator[dict[str, Any]]:
        for file in self.archive_files(site):
            archived = self._archived_keys(file)
            if not archived:  # every copy in it is hot again (restored or edited): nothing to read
                continue
            decisions = dict(
                self._read(
                    "SELECT source_id, approval_status FROM episodes WHERE source_site = ? AND archived = 1"
                    " AND archive_week = ? AND approval_status IS NOT NULL",
                    (file.site, file.week),
                )
            )
            for record in self._records(file):
                if record["sourceId"] in archived:  # a restored (hot) or forgotten copy is not archived
                    yield with_approval({**record, "archived": True}, decisions.get(record["sourceId"]))

    def archived_records(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
        """Each archived key's record from its week's file, each file read once."""
        weeks: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)  # (site, week) -> {id: content hash}
        for site, source_id in dict.fromkeys(keys):
            rows = self._read(
                "SELECT archive_week, content_hash FROM episodes"
                " WHERE source_site = ? AND source_id = ? AND archived = 1",
                (site, source_id),
            )
            if rows:
                weeks[(site, rows[0][0])][source_id] = rows[0][1]
        found: dict[tuple[str, str], dict[str, Any]] = {}
        for (site, week), wanted in weeks.items():
            file = self._week_file(site, week)
            if file is None:
                continue
            for record in self._records(file):
                source_id = str(record["sourceId"])
                if wanted.get(source_id) == record.get("contentHash"):
                    found[(site, source_id)] = {**record, "archived": True}
        return found

    def _archived_keys(self, file: ArchiveFile) -> set[str]:
        """The keys of a file's site and week that are archived now (each must be in the file)."""
        rows = self._read(
            "SELECT source_id FROM episodes WHERE source_site = ? AND archived = 1 AND archive_week = ?",
            (file.site, file.week),
        )
        return {r[0] for r in rows}

    def archived_counts(self, site: str | None = None) -> dict[tuple[str, str], int] | None:
        rows = self._read(
            "SELECT source_site, archive_week, count(*) FROM episodes"
            " WHERE archived = 1 AND (? IS NULL OR source_site = ?) GROUP BY source_site, archive_week",
            (site, site),
        )
        return {(s, w): int(n) for s, w, n in rows}

    def last_archive_run(self) -> ArchiveRun | None:
        rows = self._read("SELECT at, archived, files FROM archive_runs ORDER BY id DESC LIMIT 1", ())
        return ArchiveRun(*rows[0]) if rows else None

    def archive_size(self) -> int:
        return self.folder.size()


# The exported record's fields that are columns of their own, not part of the stored body.
_KEY_FIELDS = frozenset({"sourceSite", "sourceId", "contentHash", "syncedAt"})
# What archiving strips from a hot body (``codec.stub``), as SQLite's json_remove paths: done in
# the UPDATE, so no body is parsed and written again in Python.
_TEXT_PATHS = ", ".join(f"'$.{name}'" for name in codec.TEXT_FIELDS)
