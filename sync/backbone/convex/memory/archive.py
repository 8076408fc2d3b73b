"""Convex's cold archive (``archive.ts``; the deployment's cleanup-old-episodes cron writes it) and
forgetting, which rewrites an archived episode's week file without it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sync.archive.manifest import ArchiveFile
from sync.backbone.base import ArchiveCheck, ArchiveRun, Forgotten
from sync.backbone.convex.connection import MAX_PAGE, ConvexConnection
from sync.backbone.convex.wire import exported, forgotten
from sync.errors import BackboneRejected


class ConvexArchive(ConvexConnection):
    def forget(self, source_id: str) -> Forgotten:
        """Hot or archived: the deployment deletes it, tombstones it, and rewrites its week's
        archive file without it (an action: file storage is written by actions only)."""
        return forgotten(self.call("action", "episodes:forget", {"sourceId": source_id}))

    def archive_files(
        self, site: str | None = None, since_ms: int | None = None, until_ms: int | None = None
    ) -> list[ArchiveFile]:
        """Every site's manifests (they hold no episode text), or ``site``'s."""
        return [_archive_file(r) for r in self.call("query", "archive:files", _range(site, since_ms, until_ms))]

    def verify_archive(
        self, site: str | None = None, since_ms: int | None = None, until_ms: int | None = None
    ) -> list[ArchiveCheck]:
        rows = self.call("action", "archive:verify", _range(site, since_ms, until_ms))
        return [ArchiveCheck(_archive_file(r["file"]), r.get("problem")) for r in rows]

    def restore_archive(self, site: str | None = None, since_ms: int | None = None, until_ms: int | None = None) -> int:
        """This site's archived episodes come back (a site's secret restores only its own)."""
        if site not in (None, self.site):
            return 0
        return int(self.call("action", "archive:restore", _range(None, since_ms, until_ms))["restored"])

    def archived_episodes(self, site: str | None = None) -> Iterator[dict[str, Any]]:
        """This site's archived episodes (a site reads only its own), with ``archived: true``."""
        if site not in (None, self.site):
            return
        cursor: str | None = None
        while True:
            page = self.call("action", "archive:episodes", {"cursor": cursor, "limit": MAX_PAGE})
            for episode in page["episodes"]:
                yield exported(episode)
            cursor = page.get("next")
            if cursor is None:
                return

    def archived_records(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
        """Any site's archived episodes by (site, source id), for a search index that never indexed
        them (the change feed gives only ``archived: true, episode: None``): the file copy of each
        key archived now with the row's content, as exported, with ``archived: true``. Keys hot,
        unknown or not in their file are absent. 500 keys a call; keys an answer had no room for
        (``unread``) are asked again."""
        wanted = list(dict.fromkeys((str(site), str(source_id)) for site, source_id in keys))
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for start in range(0, len(wanted), 500):
            pending: list[dict[str, str]] = [{"sourceSite": s, "sourceId": i} for s, i in wanted[start : start + 500]]
            while pending:
                answer = self.call("action", "archive:records", {"keys": pending})
                for record in answer["records"]:
                    out[(str(record["sourceSite"]), str(record["sourceId"]))] = exported(record)
                unread = list(answer.get("unread") or [])
                if unread and not answer["records"]:  # the deployment promises progress; never loop
                    raise BackboneRejected("archive:records returned nothing and left keys unread")
                pending = unread
        return out

    def archived_counts(self, site: str | None = None) -> dict[tuple[str, str], int] | None:
        """Each file's archived keys counted by the deployment, a week at a time (as verify reads
        them): one action for every file."""
        rows = self.call("action", "archive:counts", _range(site, None, None))
        return {(str(r["site"]), str(r["week"])): int(r["archived"]) for r in rows}

    def last_archive_run(self) -> ArchiveRun | None:
        value = self.call("query", "archive:lastRun")
        return None if value is None else ArchiveRun(int(value["at"]), int(value["archived"]), int(value["files"]))


def _range(site: str | None, since_ms: int | None, until_ms: int | None) -> dict[str, Any]:
    """The archive functions' range arguments: an absent one is left out (Convex refuses null)."""
    args: dict[str, Any] = {}
    if site is not None:
        args["ofSite"] = site
    if since_ms is not None:
        args["sinceMs"] = since_ms
    if until_ms is not None:
        args["untilMs"] = until_ms
    return args


def _archive_file(r: Mapping[str, Any]) -> ArchiveFile:
    return ArchiveFile(
        site=r["site"],
        week=r["week"],
        count=int(r["count"]),
        sha256=r["sha256"],
        bytes=int(r["bytes"]),
        first_id=r["firstId"],
        last_id=r["lastId"],
        from_ts=int(r["fromTs"]),
        to_ts=int(r["toTs"]),
        written_at=int(r["writtenAt"]),
        location=str(r["storageId"]),
    )
