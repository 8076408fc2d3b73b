"""The hub's ``Dreams`` (``sync.backbone.dreams``): the dream cycle's steps, links and marks, every
site's, in one transaction a call. A mark (``episodes.dream_state``) and its removal give the
episode a new seq in the change feed, so every site's index hides or shows it; its content, hash
and ``syncedAt`` never change.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import orjson

from sync.backbone.dreams import DreamLink, DreamStep, Key, NewStep, check_steps, links_of, marks_of
from sync.backbone.hub.connection import HubConnection
from sync.backbone.hub.schema import change_seq, set_change_seq
from sync.errors import BackboneConflict, BackboneNotFound, BackboneRejected

_STEP_COLUMNS = "id, kind, canonical_site, canonical_id, members, at, run, reason, synthesis, undone_at, undone_by"


def _step(row: Sequence[Any]) -> DreamStep:
    step_id, kind, c_site, c_id, members, at, run, reason, synthesis, undone_at, undone_by = row
    return DreamStep(
        step_id=str(step_id),
        kind=kind,
        canonical=(c_site, c_id),
        members=tuple((m[0], m[1]) for m in orjson.loads(members)),
        at=at,
        run=run,
        reason=reason,
        undone_at=undone_at,
        undone_by=undone_by,
        synthesis=None if synthesis is None else orjson.loads(synthesis),
    )


def _state(conn: sqlite3.Connection, key: Key) -> tuple[bool, str | None]:
    """Whether the backbone holds ``key`` (hot or archived), and its mark."""
    row = conn.execute("SELECT dream_state FROM episodes WHERE source_site = ? AND source_id = ?", key).fetchone()
    return (False, None) if row is None else (True, row[0])


def _undo(conn: sqlite3.Connection, step: DreamStep, now: int, by: str) -> None:
    conn.execute("UPDATE dream_steps SET undone_at = ?, undone_by = ? WHERE id = ?", (now, by, int(step.step_id)))
    conn.execute("DELETE FROM dream_links WHERE step_id = ?", (int(step.step_id),))
    seq = change_seq(conn)
    for key in step.members:
        seq += conn.execute(
            "UPDATE episodes SET dream_state = NULL, change_seq = ?"
            " WHERE source_site = ? AND source_id = ? AND json_extract(dream_state, '$.step') = ?",
            (seq + 1, *key, step.step_id),
        ).rowcount
    set_change_seq(conn, seq)


def release_forgotten(conn: sqlite3.Connection, key: Key, now: int) -> None:
    """A forgotten memory takes its links with it, and the steps it stood for are undone (by
    "forget"), so that nothing stays hidden behind a memory that is gone. Inside forget's
    transaction."""
    rows = conn.execute(
        f"SELECT {_STEP_COLUMNS} FROM dream_steps WHERE canonical_site = ? AND canonical_id = ? AND undone_at IS NULL",
        key,
    ).fetchall()
    for row in rows:
        _undo(conn, _step(row), now, "forget")
    conn.execute(
        "DELETE FROM dream_links WHERE (from_site = ? AND from_id = ?) OR (to_site = ? AND to_id = ?)", (*key, *key)
    )


class HubDreams(HubConnection):
    def record_dream(self, steps: Sequence[NewStep], run: str) -> list[DreamStep]:
        try:
            check_steps(steps)
        except ValueError as exc:
            raise BackboneRejected(str(exc)) from None
        now = self.clock()

        def record(conn: sqlite3.Connection) -> list[DreamStep]:
            seq = change_seq(conn)
            done: list[DreamStep] = []
            for step in steps:
                keys = (step.canonical, *step.members)
                states = [_state(conn, key) for key in keys]
                if not all(held for held, _ in states) or any(mark is not None for _, mark in states):
                    continue  # forgotten meanwhile, or hidden by another step: not this night's
                cursor = conn.execute(
                    "INSERT INTO dream_steps (kind, canonical_site, canonical_id, members, at, run, reason, synthesis)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        step.kind,
                        *step.canonical,
                        orjson.dumps([list(m) for m in step.members]).decode(),
                        now,
                        run,
                        step.reason,
                        None if step.synthesis is None else orjson.dumps(dict(step.synthesis)).decode(),
                    ),
                )
                step_id = str(cursor.lastrowid)
                conn.executemany(
                    "INSERT OR REPLACE INTO dream_links VALUES (?, ?, ?, ?, ?, ?)",
                    [(*link.source, *link.target, link.kind, int(step_id)) for link in links_of(step, step_id)],
                )
                for key, mark in marks_of(step, step_id).items():
                    seq += 1
                    conn.execute(
                        "UPDATE episodes SET dream_state = ?, change_seq = ? WHERE source_site = ? AND source_id = ?",
                        (orjson.dumps(mark.as_json()).decode(), seq, *key),
                    )
                done.append(
                    DreamStep(
                        step_id,
                        step.kind,
                        step.canonical,
                        step.members,
                        now,
                        run,
                        step.reason,
                        synthesis=step.synthesis,
                    )
                )
            set_change_seq(conn, seq)
            return done

        return self._run(record)

    def undo_dream_step(self, step_id: str, by: str) -> DreamStep:
        now = self.clock()

        def undo(conn: sqlite3.Connection) -> DreamStep:
            row = conn.execute(
                f"SELECT {_STEP_COLUMNS} FROM dream_steps WHERE id = ?", (int(step_id) if step_id.isdigit() else -1,)
            ).fetchone()
            if row is None:
                raise BackboneNotFound(f"no dream step {step_id}")
            step = _step(row)
            if not step.standing:
                raise BackboneConflict(f"dream step {step_id} was undone already")
            _undo(conn, step, now, by)
            return _step(
                conn.execute(f"SELECT {_STEP_COLUMNS} FROM dream_steps WHERE id = ?", (int(step_id),)).fetchone()
            )

        return self._run(undo)

    def dream_steps(self, *, standing_only: bool = False, limit: int | None = None) -> list[DreamStep]:
        rows = self._read(
            f"SELECT {_STEP_COLUMNS} FROM dream_steps WHERE (? = 0 OR undone_at IS NULL) ORDER BY id DESC LIMIT ?",
            (int(standing_only), -1 if limit is None else limit),
        )
        return [_step(row) for row in rows]

    def dream_links(self, key: Key) -> list[DreamLink]:
        rows = self._read(
            "SELECT from_site, from_id, to_site, to_id, kind, step_id FROM dream_links"
            " WHERE (from_site = ? AND from_id = ?) OR (to_site = ? AND to_id = ?) ORDER BY step_id, to_site, to_id",
            (*key, *key),
        )
        return [DreamLink((fs, fi), (ts, ti), kind, str(step)) for fs, fi, ts, ti, kind, step in rows]
