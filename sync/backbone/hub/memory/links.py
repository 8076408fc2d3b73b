"""The hub as ``Links``: the explicit links in the ``links`` table, written by ``add_links`` and by
a push whose metadata names an episode (``store_pushed_links``, in the push's own transaction),
deleted by a forget (``drop_links``, in the forget's); and ``related``, which reads the subject's
session, the window of episodes nearest it in time and its rows, and leaves every decision to
``sync.policy.links``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any, Final

import orjson

from sync.backbone.hub.connection import HubConnection
from sync.errors import BackboneNotFound, BackboneRejected
from sync.policy.links import (
    EXPLICIT,
    WINDOW,
    Candidate,
    EpisodeRef,
    Link,
    StoredLink,
    candidate,
    explicit_links,
    related,
)

MAX_LIMIT: Final = 200  # neighbours a call answers at most
MAX_ADD: Final = 200  # links a call stores at most
MAX_SESSION: Final = 2000  # a session's episodes read (a longer one: its first ones)
_CANDIDATE = "SELECT source_site, source_id, body FROM episodes"


def _forgotten(conn: sqlite3.Connection, ref: EpisodeRef) -> bool:
    found = conn.execute(
        "SELECT 1 FROM tombstones WHERE source_site = ? AND source_id = ?", (ref.site, ref.source_id)
    ).fetchone()
    return found is not None


def store_links(conn: sqlite3.Connection, links: Iterable[StoredLink], now: int) -> int:
    """Insert explicit links, each once; a link to itself or with a forgotten end is skipped.
    How many were new."""
    added = 0
    for link in links:
        if link.source == link.target or _forgotten(conn, link.source) or _forgotten(conn, link.target):
            continue
        added += conn.execute(
            "INSERT OR IGNORE INTO links VALUES (?, ?, ?, ?, ?, ?)",
            (link.source.site, link.source.source_id, link.target.site, link.target.source_id, link.kind, now),
        ).rowcount
    return added


def store_pushed_links(conn: sqlite3.Connection, site: str, pushed: Iterable[tuple[str, Any]], now: int) -> None:
    """A pushed episode's metadata (``about``, ``updates``) replaces the links it wrote before."""
    for source_id, metadata in pushed:
        own = EpisodeRef(site, source_id)
        conn.execute(
            "DELETE FROM links WHERE from_site = ? AND from_id = ? AND kind IN ('about', 'updates')", (site, source_id)
        )
        store_links(conn, explicit_links(own, metadata), now)


def drop_links(conn: sqlite3.Connection, site: str, source_id: str) -> None:
    """A forget: every explicit link with the key at either end goes."""
    conn.execute(
        "DELETE FROM links WHERE (from_site = ? AND from_id = ?) OR (to_site = ? AND to_id = ?)",
        (site, source_id, site, source_id),
    )


def _candidates(rows: Iterable[tuple[str, str, str]]) -> list[Candidate]:
    out = []
    for site, source_id, body in rows:
        record = orjson.loads(body)
        record["sourceSite"], record["sourceId"] = site, source_id
        out.append(candidate(record))
    return out


class HubLinks(HubConnection):
    def related(self, site: str, source_id: str, limit: int = 20) -> list[Link]:
        if not 1 <= limit <= MAX_LIMIT:
            raise BackboneRejected(f"limit must be from 1 to {MAX_LIMIT}, not {limit}")
        found = self._read(f"{_CANDIDATE} WHERE source_site = ? AND source_id = ?", (site, source_id))
        if not found:
            raise BackboneNotFound(f"no episode {site}:{source_id} in the embedded hub")
        (subject,) = _candidates(found)
        others: list[Candidate] = []
        if subject.keys.session is not None:
            others += _candidates(
                self._read(
                    f"{_CANDIDATE} WHERE source_site = ? AND json_extract(body, '$.sessionId') = ? AND archived = 0"
                    " ORDER BY ts LIMIT ?",
                    (site, subject.keys.session, MAX_SESSION),
                )
            )
        if subject.keys.ts is not None:
            at = subject.keys.ts
            others += _candidates(
                self._read(f"{_CANDIDATE} WHERE archived = 0 AND ts <= ? ORDER BY ts DESC LIMIT ?", (at, WINDOW))
            )
            others += _candidates(
                self._read(f"{_CANDIDATE} WHERE archived = 0 AND ts > ? ORDER BY ts LIMIT ?", (at, WINDOW))
            )
        rows = [
            StoredLink(EpisodeRef(r[0], r[1]), EpisodeRef(r[2], r[3]), r[4])
            for r in self._read(
                "SELECT from_site, from_id, to_site, to_id, kind FROM links"
                " WHERE (from_site = ? AND from_id = ?) OR (to_site = ? AND to_id = ?)",
                (site, source_id, site, source_id),
            )
        ]
        held = {o.ref for o in others}
        for end in {r.target if r.source == subject.ref else r.source for r in rows} - held:
            others += _candidates(
                self._read(f"{_CANDIDATE} WHERE source_site = ? AND source_id = ?", (end.site, end.source_id))
            )
        return related(subject, others, rows, limit)

    def add_links(self, links: Sequence[StoredLink]) -> int:
        if len(links) > MAX_ADD:
            raise BackboneRejected(f"{len(links)} links in one call; at most {MAX_ADD}")
        for link in links:
            if link.kind not in EXPLICIT:
                raise BackboneRejected(f"a stored link is one of {', '.join(sorted(EXPLICIT))}, not {link.kind!r}")
        now = self.clock()
        return self._run(lambda conn: store_links(conn, links, now))
