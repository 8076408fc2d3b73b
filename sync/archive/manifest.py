"""``ArchiveFile``: what the manifest says of one archive file. A value of the archive's own, so that
the format (``codec``), the folder (``files``) and both backbones, which keep these manifests, share
it without the archive importing the backbone."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ArchiveFile:
    """One site's archived episodes of one ISO week: a gzip-compressed JSON Lines file and its
    manifest (``sync.archive.codec``)."""

    site: str
    week: str  # "2026-W08": the ISO week of the episodes' ts, UTC
    count: int  # episodes (lines) in the file
    sha256: str  # of the compressed file's bytes
    bytes: int  # the compressed file's size
    first_id: str  # the key range: the first and last sourceId in the file's order (ts, sourceId)
    last_id: str
    from_ts: int  # the oldest and newest episode's ts, ms
    to_ts: int
    written_at: int  # ms
    location: str  # where it is: a path beside the hub, a Convex storage id
