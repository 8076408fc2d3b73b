"""A site's health: gather the facts about one site (I/O) and judge them (``daemon.health.site``), as
``memsync status`` shows them and the MCP ``memory_health`` tool answers; and the fleet's, every
site and agent as the backbone's registry holds them (``status --fleet``, ``agents``).

Safe while the daemon runs: it opens the sidecar read-only, takes its own snapshot of the AgentDB
file, and only reads from the backbone. The report is one JSON-ready document (``status --json``
prints it as is), typed key by key below.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, NotRequired, TypedDict

from daemon.config import Settings
from daemon.control.lock import holder_pid
from daemon.health.site import Facts, assess, lag_seconds
from daemon.paths import agentdb_folder_missing, agentdb_problem, writable_problem
from daemon.search_worker.files import read_status
from daemon.site import open_sidecar_readonly, opened_backbone
from sync.backbone.base import ChangeFeed, ColdArchive, SourceRecord
from sync.errors import MemsyncError, PathProblem
from sync.push.claim import SourceIdentity, describe, refusal
from sync.push.sidecar import Sidecar
from sync.search.collection.cursor import CursorFile
from sync.search.indexing.lag import episodes_behind
from sync.source.agentdb.reader import AgentDBReader, clock_ahead_message

# Status counts the episodes the search index has not reached up to this many, then says "more than".
BEHIND_COUNT_LIMIT = 1000


class DaemonState(TypedDict):
    running: bool
    pid: int | None
    startedAt: str | None


class AgentDBState(TypedDict):
    path: str
    readable: bool
    error: str | None
    waiting: bool  # the file is not created yet: nothing to fix, the daemon waits for it
    episodes: NotRequired[int]  # when readable
    maxId: NotRequired[int]
    mode: NotRequired[str]
    aheadOfClock: NotRequired[float | None]  # the file's time ahead of this machine's clock, in s


class RemoteCursor(TypedDict):
    lastSyncedId: int
    lastSyncedAt: str | None
    totalSynced: int


class ArchiveRunState(TypedDict):
    at: str | None
    archived: int
    files: int


class ArchiveState(TypedDict):
    files: int
    episodes: int
    bytes: int
    lastRun: ArchiveRunState | None


class BackboneState(TypedDict):
    kind: str
    reachable: bool
    error: str | None
    description: NotRequired[str]  # once opened
    cursor: NotRequired[RemoteCursor]  # the backbone's record of this site's pushes, if any
    source: NotRequired[str | None]  # who feeds the site, as recorded
    archive: NotRequired[ArchiveState | None]


class PurgeState(TypedDict):
    state: Any
    at: str | None
    detail: Any


class WarmState(TypedDict):
    """The search index; with it off, only ``enabled`` and ``problem``. The values from the warm
    layer's status file are as it wrote them."""

    enabled: bool
    state: NotRequired[str]
    detail: NotRequired[Any]
    pausedUntil: NotRequired[str | None]
    problem: str | None
    store: NotRequired[str]
    embedder: NotRequired[str]
    collection: NotRequired[Any]
    model: NotRequired[Any]
    # False once the daemon has let the idle model go (warm.unload_after); the next use loads it.
    modelLoaded: NotRequired[Any]
    feedCursor: NotRequired[Any]
    # Episodes in the backbone the index has not reached; None when the backbone did not answer.
    behind: NotRequired[int | None]
    behindExact: NotRequired[bool | None]
    embedded: NotRequired[Any]
    lastIndexedAt: NotRequired[str | None]
    # After a forget: the index's files rebuilt without the forgotten episodes (owed, purging,
    # purged, failed), and when.
    purge: NotRequired[PurgeState | None]
    # A shared Qdrant: the alias every site goes through, and what happened when another site's
    # rebuild moved it (the collection this site used went away while it was offline, say).
    alias: NotRequired[Any]
    notice: NotRequired[Any]


class TelegramState(TypedDict):
    """Whether alerts reach Telegram, and what waits in the outbox (never the token)."""

    enabled: bool
    chat: str | None
    waiting: int | None
    lastError: str | None
    lastSentAt: str | None
    tokenRefused: str | None


class JournalState(TypedDict):
    """The journal of saved memories (``memsync remember``): how many it holds, how many wait."""

    path: str
    saved: int  # memories in the journal (0: none saved yet)
    backlog: int | None  # saved but not yet pushed (None: unknown)
    lastError: str | None  # the journal's pass's last problem


class StatusReport(TypedDict):
    """The report, under its JSON's names (``status --json``)."""

    site: str
    health: str  # ok | degraded | down
    exitCode: int  # 0 ok, 1 degraded, 2 down (``daemon.health.site.Level``)
    reasons: list[str]
    daemon: DaemonState
    cursor: int
    synced: int
    backlog: int | None
    lastSyncAt: str | None
    lagSeconds: float | None
    quarantined: int
    conflicts: int
    # Episodes synced with secrets replaced by markers (never the secrets themselves).
    redacted: int
    redaction: bool
    lastError: str | None
    agentdb: AgentDBState
    journal: JournalState
    backbone: BackboneState
    warm: WarmState
    telegram: TelegramState
    stateFile: str
    pathProblem: str | None
    # Why `run` and `sync` refuse this machine (exit 78): another source feeds the site.
    sourceRefused: str | None


def _iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _float(value: str | None) -> float | None:
    return None if value is None else float(value)


def gather(settings: Settings, now: float | None = None) -> StatusReport:
    """Everything status shows, as one JSON-ready document (``status --json`` prints it as is)."""
    now = time.time() if now is None else now
    meta: dict[str, str | None] = {}
    cursor = quarantined = conflicts = synced = 0
    path_problem = writable_problem(settings, create=False)
    sidecar = None
    if path_problem is None:  # else the state file may be out of reach too: the problem says why
        try:
            sidecar = open_sidecar_readonly(settings)
        except PathProblem as exc:
            path_problem = str(exc)
    if sidecar is not None:
        try:
            keys = (
                "last_success_at",
                "last_error",
                "last_error_at",
                "source_error",
                "caught_up_at",
                "daemon_started_at",
                "redacted_episodes",
                "source_instance",
                "source_machine",
            )
            meta = {k: sidecar.get(k) for k in keys}
            cursor, synced = sidecar.cursor(), sidecar.synced_count()
            quarantined, conflicts = sidecar.quarantine_count(), sidecar.conflict_count()
        finally:
            sidecar.close()

    try:
        pid = holder_pid(settings.lock_path)
    except OSError:
        pid = None  # the lock is out of reach: path_problem says why, and no daemon of ours could run
    backlog: int | None = None
    oldest: float | None = None
    problem = agentdb_problem(settings.agentdb.path)
    agentdb: AgentDBState = {
        "path": str(settings.agentdb.path),
        "readable": False,
        "error": None,
        # A file the agent has not created yet is nothing to fix: nothing waits, and the daemon waits for it.
        "waiting": problem is None and not settings.agentdb.path.exists(),
    }
    if agentdb["waiting"]:
        backlog = 0
    else:
        try:
            if problem is not None:
                raise PathProblem(problem)
            with (reader := AgentDBReader(settings.agentdb.path)).snapshot() as snap:
                backlog = snap.count_after(cursor)
                agentdb["readable"] = True
                agentdb["episodes"], agentdb["maxId"], agentdb["mode"] = snap.count(), snap.max_id(), snap.mode
                agentdb["aheadOfClock"] = reader.ahead_of_clock_s and round(reader.ahead_of_clock_s)
                created = snap.oldest_created_after(cursor)
                oldest = None if created is None else (created / 1000 if created > 100_000_000_000 else created)
        except MemsyncError as exc:
            agentdb["error"] = str(exc)

    backbone, behind, recorded = _backbone(settings)
    refused = _refused(settings, meta, recorded)
    warm = _warm(settings, pid is not None, behind)
    caught_up = _float(meta.get("caught_up_at"))
    lag = lag_seconds(now, backlog, caught_up, oldest)
    facts = Facts(
        daemon_running=pid is not None,
        backbone_error=backbone["error"],
        source_error=agentdb["error"],
        path_problem=path_problem,
        last_error=meta.get("last_error"),
        backlog=backlog,
        lag_seconds=lag,
        lag_warning=settings.sync.lag_warning,
        quarantined=quarantined,
        conflicts=conflicts,
        warm_problem=warm.get("problem"),
        source_refused=refused,
        clock_ahead=clock_ahead_message(ahead) if (ahead := agentdb.get("aheadOfClock")) else None,
        agentdb_folder=agentdb_folder_missing(settings.agentdb.path) if agentdb["waiting"] else None,
    )
    level, reasons = assess(facts)
    return {
        "site": settings.site.name,
        "health": level.label,
        "exitCode": int(level),
        "reasons": reasons,
        "daemon": {
            "running": pid is not None,
            "pid": pid if pid and pid > 0 else None,
            "startedAt": _iso(_float(meta.get("daemon_started_at"))),
        },
        "cursor": cursor,
        # The site's episodes the backbone holds (it follows forgets); the sidecar's count without it.
        "synced": backbone["cursor"]["totalSynced"] if backbone.get("cursor") else synced,
        "backlog": backlog,
        "lastSyncAt": _iso(_float(meta.get("last_success_at"))),
        "lagSeconds": None if lag is None else round(lag, 3),
        "quarantined": quarantined,
        "conflicts": conflicts,
        "redacted": int(_float(meta.get("redacted_episodes")) or 0),
        "redaction": settings.privacy.redact,
        "lastError": meta.get("last_error"),
        "agentdb": agentdb,
        "journal": _journal(settings),
        "backbone": backbone,
        "warm": warm,
        "telegram": _telegram(settings),
        "stateFile": str(settings.state_path),
        "pathProblem": path_problem,
        "sourceRefused": refused,
    }


def _journal(settings: Settings) -> JournalState:
    """The journal as its reader and its own sidecar see it; never created here."""
    state: JournalState = {"path": str(settings.journal_path), "saved": 0, "backlog": 0, "lastError": None}
    if not settings.journal_path.exists():
        return state
    cursor = 0
    if settings.journal_state_path.exists():
        try:
            sidecar = Sidecar(settings.journal_state_path, readonly=True)
        except (FileNotFoundError, sqlite3.Error):
            sidecar = None
        if sidecar is not None:
            try:
                cursor, state["lastError"] = sidecar.cursor(), sidecar.get("last_error")
            finally:
                sidecar.close()
    try:
        with AgentDBReader(settings.journal_path).snapshot() as snap:
            state["saved"], state["backlog"] = snap.count(), snap.count_after(cursor)
    except MemsyncError as exc:
        state["backlog"], state["lastError"] = None, str(exc)
    return state


def _refused(settings: Settings, meta: dict[str, str | None], recorded: SourceRecord | None) -> str | None:
    """What `run` would refuse with, judged as it judges (``sync.push.claim``): this machine and AgentDB
    file, and the instance its sidecar holds (none when the sidecar was copied from another machine)."""
    here = SourceIdentity.here("", settings.agentdb.path)
    instance = meta.get("source_instance") if meta.get("source_machine") == here.machine else None
    return refusal(recorded, replace(here, instance=instance or ""), settings.site.name)


def _telegram(settings: Settings) -> TelegramState:
    """Whether alerts reach Telegram, and what waits in the outbox (never the token)."""
    from daemon.alerts.store import outbox_summary

    outbox = outbox_summary(settings.alerts_path, settings.site.name) or {
        "waiting": 0,
        "lastError": None,
        "lastSentAt": None,
        "tokenRefused": None,
    }
    sent_at = outbox["lastSentAt"]
    return {
        "enabled": settings.telegram.enabled,
        "chat": settings.telegram.chat_id,
        "waiting": outbox["waiting"],
        "lastError": outbox["lastError"],
        "lastSentAt": None if sent_at is None else _iso(sent_at / 1000),
        "tokenRefused": outbox["tokenRefused"],
    }


def _backbone(settings: Settings) -> tuple[BackboneState, tuple[int, bool] | None, SourceRecord | None]:
    """The backbone as this site sees it, how far the search index is behind it, and the source
    recorded as feeding the site."""
    backbone: BackboneState = {"kind": settings.backbone.kind, "reachable": False, "error": None}
    behind: tuple[int, bool] | None = None
    source: SourceRecord | None = None
    try:
        with opened_backbone(settings, create=False) as bb:
            backbone["description"] = bb.description
            bb.ping()
            remote = bb.site_cursor()
            backbone["reachable"] = True
            if remote is not None:
                backbone["cursor"] = {
                    "lastSyncedId": remote.last_synced_id,
                    "lastSyncedAt": _iso(remote.last_synced_at / 1000),
                    "totalSynced": remote.total_synced,
                }
            source = bb.source_of()
            backbone["source"] = None if source is None else describe(source)
            try:
                backbone["archive"] = _archive(bb)
            except MemsyncError:  # a hub no daemon of this version has opened yet has no archive
                backbone["archive"] = None
            behind = _index_behind(settings, bb)
    except MemsyncError as exc:
        backbone["error"] = str(exc)
    return backbone, behind, source


def _archive(archive: ColdArchive) -> ArchiveState:
    """The cold archive: its files' episodes and size, and the cleanup job's last run."""
    files = archive.archive_files()
    run = archive.last_archive_run()
    counts = archive.archived_counts()  # a restore leaves the files' own counts as they were
    return {
        "files": len(files),
        "episodes": sum(f.count for f in files) if counts is None else sum(counts.values()),
        "bytes": sum(f.bytes for f in files),
        "lastRun": None if run is None else {"at": _iso(run.at / 1000), "archived": run.archived, "files": run.files},
    }


def _index_behind(settings: Settings, feed: ChangeFeed) -> tuple[int, bool] | None:
    """(episodes the search index has not reached, exact), or None when the index is off."""
    if not settings.warm.enabled:
        return None
    from daemon.search_worker.files import Collections

    cursor = CursorFile(settings.warm_dir / "indexer.json").read(Collections(settings).active())
    return episodes_behind(feed, cursor, BEHIND_COUNT_LIMIT)


def _warm(settings: Settings, daemon_running: bool, behind: tuple[int, bool] | None) -> WarmState:
    """The search index, as the daemon's warm layer last reported it, and how far behind it is."""
    if not settings.warm.enabled:
        return {"enabled": False, "problem": None}
    found = read_status(settings) or {}
    state = found.get("state", "never run") if daemon_running else "not running"
    paused = found.get("pausedUntil") if state == "paused" else None
    problem = None
    if state == "paused":
        problem = f"indexing paused until {_iso(paused)}: {found.get('detail')}"
    elif state in ("needs-reindex", "foreign-collection", "error", "retrying"):
        problem = f"{state}: {found.get('detail')}"
    totals = found.get("totals") or {}
    return {
        "enabled": True,
        "state": state,
        "detail": found.get("detail"),
        "pausedUntil": _iso(paused),
        "problem": problem,
        "store": settings.warm.store,
        "embedder": settings.warm.embedder,
        "collection": found.get("collection", settings.warm.collection),
        "model": found.get("model"),
        "modelLoaded": found.get("modelLoaded"),
        "feedCursor": found.get("cursor"),
        "behind": None if behind is None else behind[0],
        "behindExact": None if behind is None else behind[1],
        "embedded": totals.get("embedded"),
        "lastIndexedAt": _iso(found.get("lastPassAt")),
        "purge": _purge(found.get("purge")),
        "alias": found.get("alias"),
        "notice": found.get("notice"),
    }


def _purge(found: Any) -> PurgeState | None:
    if not isinstance(found, dict):
        return None
    at = found.get("at")
    return {
        "state": found.get("state"),
        "at": _iso(at) if isinstance(at, int | float) else None,
        "detail": found.get("detail"),
    }


def fleet(settings: Settings, now: float) -> dict[str, Any]:
    """Every site and agent in the backbone, online or not, and the fleet judged by its worst
    (``daemon.health.fleet.fleet_report``'s document: ``status --fleet --json`` prints it as is)."""
    from daemon.health.fleet import fleet_report

    with opened_backbone(settings, create=False) as backbone:
        report = fleet_report(
            backbone.sites(),
            backbone.agents(all_sites=True),
            backbone.job_runs(None, 200),
            len(backbone.approvals("pending")),
            settings.sync.lag_warning,
            int(now * 1000),
            int(settings.jobs.stale_after * 1000),
        )
    _local_index_state(settings, report["sites"])
    return report


def _local_index_state(settings: Settings, sites: list[dict[str, Any]]) -> None:
    """This site's search index as its status file says now: the registry has it from the last
    heartbeat (a minute old at best, and none from a `sync` without a daemon)."""
    if not settings.warm.enabled:
        return
    state = (read_status(settings) or {}).get("state")
    for site in sites:
        if site["site"] == settings.site.name and isinstance(state, str):
            site["index_state"] = state


def alerts(settings: Settings) -> list[dict[str, Any]]:
    """The alerts standing now on this site's alerts file (the hub's sites share one): each signal
    and subject that is late or down, since when, and whether it is snoozed or muted."""
    from daemon.alerts.store import alerts_standing

    return [
        {
            "signal": key.split(":", 1)[0],
            "subject": key.split(":", 1)[1] if ":" in key else "",
            "state": state.state,
            "since": state.since,
            "snoozedUntil": state.snoozed_until or None,
            "mutedUntil": state.muted_until or None,
        }
        for key, state in alerts_standing(settings.alerts_path)
    ]
