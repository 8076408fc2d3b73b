"""``memsync status``: gather the facts about one site (I/O), judge them (``daemon.health``), show them.

Safe while the daemon runs: it opens the sidecar read-only, takes its own snapshot of the AgentDB
file, and only reads from the backbone.
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.segment import Segment, Segments
from rich.table import Table

from daemon.config import Settings
from daemon.control.lock import holder_pid
from daemon.counts import counted
from daemon.health import Facts, Level, assess, lag_seconds
from daemon.paths import agentdb_problem, writable_problem
from daemon.site import open_sidecar_readonly, opened_backbone
from daemon.warm.files import read_status
from daemon.warm.lag import episodes_behind
from sync.agentdb import AgentDBReader
from sync.backbone.base import ChangeFeed, ColdArchive, SourceRecord
from sync.errors import MemsyncError, PathProblem
from sync.source import SourceIdentity, describe, refusal
from sync.warm.cursor import CursorFile

# Status counts the episodes the search index has not reached up to this many, then says "more than".
BEHIND_COUNT_LIMIT = 1000


def _iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _float(value: str | None) -> float | None:
    return None if value is None else float(value)


def gather(settings: Settings, now: float | None = None) -> dict[str, Any]:
    """Everything status shows, as one JSON-ready dict (``status --json`` prints it as is)."""
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
    agentdb: dict[str, Any] = {"path": str(settings.agentdb.path), "readable": False, "error": None}
    backlog: int | None = None
    oldest: float | None = None
    problem = agentdb_problem(settings.agentdb.path)
    # A file the agent has not created yet is nothing to fix: nothing waits, and the daemon waits for it.
    agentdb["waiting"] = problem is None and not settings.agentdb.path.exists()
    if agentdb["waiting"]:
        backlog = 0
    else:
        try:
            if problem is not None:
                raise PathProblem(problem)
            with AgentDBReader(settings.agentdb.path).snapshot() as snap:
                backlog = snap.count_after(cursor)
                agentdb.update(readable=True, episodes=snap.count(), maxId=snap.max_id(), mode=snap.mode)
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
        "synced": synced,
        "backlog": backlog,
        "lastSyncAt": _iso(_float(meta.get("last_success_at"))),
        "lagSeconds": None if lag is None else round(lag, 3),
        "quarantined": quarantined,
        "conflicts": conflicts,
        # Episodes synced with secrets replaced by markers (never the secrets themselves).
        "redacted": int(_float(meta.get("redacted_episodes")) or 0),
        "redaction": settings.privacy.redact,
        "lastError": meta.get("last_error"),
        "agentdb": agentdb,
        "backbone": backbone,
        "warm": warm,
        "telegram": _telegram(settings),
        "stateFile": str(settings.state_path),
        "pathProblem": path_problem,
        # Why `run` and `sync` refuse this machine (exit 78): another source feeds the site.
        "sourceRefused": refused,
    }


def _refused(settings: Settings, meta: dict[str, str | None], recorded: SourceRecord | None) -> str | None:
    """What `run` would refuse with, judged as it judges (``sync.source``): this machine and AgentDB
    file, and the instance its sidecar holds (none when the sidecar was copied from another machine)."""
    here = SourceIdentity.here("", settings.agentdb.path)
    instance = meta.get("source_instance") if meta.get("source_machine") == here.machine else None
    return refusal(recorded, replace(here, instance=instance or ""), settings.site.name)


def _telegram(settings: Settings) -> dict[str, Any]:
    """Whether alerts reach Telegram, and what waits in the outbox (never the token)."""
    from daemon.alerts.store import outbox_summary

    found: dict[str, Any] = {"enabled": settings.telegram.enabled, "chat": settings.telegram.chat_id}
    outbox = outbox_summary(settings.alerts_path, settings.site.name)
    found.update(outbox or {"waiting": 0, "lastError": None, "lastSentAt": None, "tokenRefused": None})
    if found["lastSentAt"] is not None:
        found["lastSentAt"] = _iso(found["lastSentAt"] / 1000)
    return found


def _backbone(settings: Settings) -> tuple[dict[str, Any], tuple[int, bool] | None, SourceRecord | None]:
    """The backbone as this site sees it, how far the search index is behind it, and the source
    recorded as feeding the site."""
    backbone: dict[str, Any] = {"kind": settings.backbone.kind, "reachable": False, "error": None}
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


def _archive(archive: ColdArchive) -> dict[str, Any]:
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
    from daemon.warm.files import Collections

    cursor = CursorFile(settings.warm_dir / "indexer.json").read(Collections(settings).active())
    return episodes_behind(feed, cursor, BEHIND_COUNT_LIMIT)


def _warm(settings: Settings, daemon_running: bool, behind: tuple[int, bool] | None) -> dict[str, Any]:
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
        # False once the daemon has let the idle model go (warm.unload_after); the next use loads it.
        "modelLoaded": found.get("modelLoaded"),
        "feedCursor": found.get("cursor"),
        # Episodes in the backbone the index has not reached; None when the backbone did not answer.
        "behind": None if behind is None else behind[0],
        "behindExact": None if behind is None else behind[1],
        "embedded": totals.get("embedded"),
        "lastIndexedAt": _iso(found.get("lastPassAt")),
        # After a forget: the index's files rebuilt without the forgotten episodes (owed, purging,
        # purged, failed), and when.
        "purge": _purge(found.get("purge")),
        # A shared Qdrant: the alias every site goes through, and what happened when another site's
        # rebuild moved it (the collection this site used went away while it was offline, say).
        "alias": found.get("alias"),
        "notice": found.get("notice"),
    }


def _purge(found: Any) -> dict[str, Any] | None:
    if not isinstance(found, dict):
        return None
    at = found.get("at")
    return {
        "state": found.get("state"),
        "at": _iso(at) if isinstance(at, int | float) else None,
        "detail": found.get("detail"),
    }


def _behind_text(warm: dict[str, Any]) -> str:
    count = warm.get("behind")
    if count is None:
        return "how far behind is unknown (backbone unreachable)"
    if count == 0:
        return "up to date"
    return f"{'more than ' if not warm.get('behindExact') else ''}{counted(count, 'episode')} behind"


def _telegram_line(telegram: dict[str, Any]) -> str:
    if not telegram["enabled"]:
        return "off (alerts go to the log only)"
    waiting = f"{counted(telegram['waiting'], 'message')} waiting" if telegram["waiting"] else "nothing waiting"
    error = f" (last error: {telegram['lastError']})" if telegram["waiting"] and telegram["lastError"] else ""
    last = f"; last sent {telegram['lastSentAt']}" if telegram["lastSentAt"] else ""
    refused = f"; [red]{telegram['tokenRefused']}[/]" if telegram.get("tokenRefused") else ""
    return f"chat {telegram['chat']}: {waiting}{error}{last}{refused}"


def _agentdb_text(adb: dict[str, Any]) -> str:
    if adb["waiting"]:
        return f"waiting for the AgentDB file at {adb['path']} (not created yet)"
    if adb["readable"]:
        return f"{adb['path']}: {counted(adb['episodes'], 'episode')}, max id {adb['maxId']}"
    return f"{adb['path']}: [red]{adb['error']}[/]"


def print_stripped(table: Table, console: Console) -> None:
    """The table without the spaces rich pads its last column with: a line that ends in spaces
    breaks a diff, a grep for ``$`` and a terminal's copy."""
    for line in console.render_lines(table, console.options, pad=False):
        while line and not line[-1].control and not line[-1].text.strip():
            line.pop()
        if line and not line[-1].control:
            last = line[-1]
            line[-1] = Segment(last.text.rstrip(), last.style)
        console.print(Segments([*line, Segment.line()]), soft_wrap=True, end="")


_STYLE = {Level.OK: "green", Level.DEGRADED: "yellow", Level.DOWN: "red"}


def render(report: dict[str, Any], console: Console) -> None:
    level = Level(report["exitCode"])
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("site", report["site"])
    table.add_row("health", f"[{_STYLE[level]}]{level.label}[/]")
    daemon = report["daemon"]
    table.add_row("daemon", f"running (pid {daemon['pid']})" if daemon["running"] else "[yellow]not running[/]")
    bb = report["backbone"]
    reach = "[green]reachable[/]" if bb["reachable"] else f"[red]unreachable[/]: {bb['error']}"
    table.add_row("backbone", f"{bb['kind']} ({bb.get('description', '?')}): {reach}")
    if bb.get("source"):
        table.add_row("fed by", bb["source"])
    table.add_row("agentdb", _agentdb_text(report["agentdb"]))
    table.add_row("cursor", f"{report['cursor']} ({counted(report['synced'], 'episode')} synced)")
    table.add_row("backlog", "?" if report["backlog"] is None else str(report["backlog"]))
    table.add_row("last sync", report["lastSyncAt"] or "never")
    table.add_row("lag", "?" if report["lagSeconds"] is None else f"{report['lagSeconds']:.1f}s")
    table.add_row("quarantined", str(report["quarantined"]))
    table.add_row("conflicts", f"{report['conflicts']} (reused ids; both episodes kept)")
    table.add_row(
        "redacted",
        f"{counted(report['redacted'], 'episode')} had secrets replaced before they left"
        if report["redaction"]
        else "[yellow]off[/] (privacy.redact = false: secrets in episodes leave the site)",
    )
    archive = bb.get("archive")
    if archive is not None:
        run = archive["lastRun"]
        last = "never run" if run is None else f"last run {run['at']}: {counted(run['archived'], 'episode')} archived"
        table.add_row(
            "archive",
            f"{counted(archive['episodes'], 'episode')} in {counted(archive['files'], 'file')}, "
            f"{archive['bytes']:,} bytes; {last}",
        )
    warm = report["warm"]
    if not warm["enabled"]:
        table.add_row("search index", "off (warm.enabled = false)")
    else:
        where = f"{warm['store']} {warm['collection']}, {warm['model'] or warm['embedder']}"
        shown = warm["problem"] or f"{warm['state']}, {_behind_text(warm)}"
        if warm["modelLoaded"] is False:
            shown += " (model let go while idle)"
        purge = warm.get("purge")
        if purge is not None:
            when = f" {purge['at']}" if purge["at"] else ""
            shown += f"; forgotten episodes' purge: {purge['state']}{when}"
        if warm.get("alias"):
            where += f" (behind alias {warm['alias']})"
        if warm.get("notice"):
            shown += f"; {warm['notice']}"
        table.add_row("search index", f"{where}: {shown}")
    table.add_row("telegram", _telegram_line(report["telegram"]))
    print_stripped(table, console)
    for reason in report["reasons"]:
        console.print(f"[{_STYLE[level]}]- {reason}[/]")
