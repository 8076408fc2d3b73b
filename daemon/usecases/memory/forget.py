"""Taking episodes back for good, by key (``SITE:ID``) or by a text that must go.

The plan: ``matching`` finds every episode, hot or archived, whose text holds the text (a person
confirms it before anything goes). The effects: ``forget`` deletes each key from the backbone,
which keeps a content-free tombstone so that a later push of the key is refused (and an agent's
copy in its AgentDB file is never synced again); an archived episode's week file is rewritten
without it. Every site's search index drops the episode from the change feed and purges its files
of it: at once where a daemon runs, when it starts where none does; this site's index is purged
before ``forget`` returns (by its daemon, waited for; with none, here). On the embedded hub the
forget then empties the hub's -wal (a checkpoint that cuts it to zero bytes), where the deleted
text would otherwise stay readable for as long as any daemon keeps the hub open. With a text,
this site's own files that keep text outside the backbone are emptied of it too.

A site forgets its own episodes; on the embedded hub a site may forget another's. On Convex a
site's secret reaches only its own: another site's needs the operator's credential, the
deployment's deploy key in ``CONVEX_DEPLOY_KEY`` (in the shell that runs ``forget``, never in a
daemon's environment: it is full access to the deployment).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import chain
from typing import TYPE_CHECKING, Any, Final, Protocol

from sync.errors import MemsyncError

if TYPE_CHECKING:
    from daemon.config import Settings
    from daemon.duties import ServerDuties
    from sync.backbone.base import Backbone, Forgotten

# Fields ``matching`` looks in (the text people and agents write; not hashes or ids).
SEARCHED: Final = ("task", "input", "output", "critique", "tags", "metadata", "sessionId")
# A shorter text matches too much.
MIN_MATCHING: Final = 4


class HotAndArchived(Protocol):
    """What ``matching`` reads: the backbone's episodes, hot and archived."""

    def episodes(self, site: str | None = None, since_ms: int | None = None) -> Iterator[dict[str, Any]]: ...

    def archived_episodes(self, site: str | None = None) -> Iterator[dict[str, Any]]: ...


@dataclass(frozen=True, slots=True)
class Match:
    """An episode whose text holds the text looked for."""

    site: str
    source_id: str
    task: str

    @property
    def key(self) -> tuple[str, str]:
        return self.site, self.source_id


@dataclass(frozen=True, slots=True)
class KeyOutcome:
    key: str  # SITE:ID
    archive_week: str | None  # the archive file rewritten without it, if it was archived


@dataclass(frozen=True, slots=True)
class TextTakenOut:
    """One of this site's own files emptied of the text: how many rows held it."""

    file: str
    rows: int


@dataclass(frozen=True, slots=True)
class IndexReach:
    """A site's search index after the forget: whether its daemon runs to drop and purge the
    episodes now; for this site's, whether it was purged before ``forget`` returned (None: not
    tried) and what stopped it."""

    site: str
    running: bool
    purged: bool | None = None
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class ForgetReport:
    where: str  # what held the episodes, as a sentence names it ("the hub file")
    forgotten: list[KeyOutcome]
    unknown: list[KeyOutcome]  # no such episode (a tombstone keeps the key refused all the same)
    refused: list[str]  # keys of another site's episodes this site may not forget (Convex)
    wal_left: str | None  # a server file that may still hold the text: other processes kept it busy
    elsewhere: list[TextTakenOut]  # this site's own files emptied of the text
    indexes: list[IndexReach]

    @property
    def unpurged(self) -> bool:
        return any(index.purged is False for index in self.indexes)

    @property
    def complete(self) -> bool:
        """Nothing refused, nothing left in a server file, this site's index purged."""
        return not self.refused and self.wal_left is None and not self.unpurged


def report_lines(report: ForgetReport, timeout: float) -> list[str]:
    """What a forget did, one sentence a line, as a person reads it (``memsync forget`` and the web
    viewer say the same); ``timeout``: the seconds this site's index was given to purge."""
    from daemon.counts import counted
    from daemon.duties import OPERATOR_KEY_ENV

    lines = []
    for entry in report.forgotten:
        week = entry.archive_week
        archive = f" and its archive file of {week} (rewritten without it)" if week else ""
        lines.append(f"forgotten: {entry.key}: removed from {report.where}{archive}; a tombstone keeps the key refused")
    if report.wal_left is not None:
        lines.append(
            f"{report.wal_left} may still hold the forgotten text: other processes kept the hub busy. Run "
            "the same `memsync forget` again (it empties that file), or stop the daemons that use the hub"
        )
    lines += [
        f"also taken out of {taken.file}: {counted(taken.rows, 'row')} (quarantine previews, kept messages)"
        for taken in report.elsewhere
    ]
    lines += [f"{e.key}: no such episode in the backbone (a tombstone keeps the key refused)" for e in report.unknown]
    lines += [
        f"{key}: another site's episode; on Convex a site's secret reaches only its own. Run "
        f"`memsync forget` on that site, or set {OPERATOR_KEY_ENV} to the deployment's deploy key (Convex "
        "dashboard, Settings, Deploy keys) in this shell only, never in a daemon's environment, and run it again"
        for key in report.refused
    ]
    for index in report.indexes:
        if index.purged:
            lines.append(f"search index on {index.site}: purged (the forgotten text is in none of its files)")
        elif index.purged is not None:
            why = index.problem or f"not within {timeout:g}s"
            lines.append(
                f"search index on {index.site}: not purged yet ({why}); its daemon finishes it, "
                "or run the same forget again"
            )
        elif index.running:
            lines.append(f"search index on {index.site}: drops and purges them within seconds (its daemon is running)")
        else:
            lines.append(
                f"search index on {index.site}: not reached yet (no daemon running there): it drops and "
                "purges them when its daemon starts, or at its next `memsync sync`"
            )
    return lines


def parse_keys(keys: Iterable[str]) -> list[tuple[str, str]]:
    """``SITE:ID`` pairs; ValueError names a malformed one."""
    found = []
    for key in keys:
        site, sep, source_id = key.partition(":")
        if not sep or not site or not source_id:
            raise ValueError(f"{key!r} is not SITE:ID (e.g. laptop:1234; `memsync export` lists them)")
        found.append((site, source_id))
    return found


def holds(episode: dict[str, Any], text: str) -> bool:
    return any(
        text in (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
        for name in SEARCHED
        if (value := episode.get(name)) is not None
    )


def matching(backbone: HotAndArchived, text: str) -> list[Match]:
    """Every episode the backbone shows this site, hot or archived, whose text holds ``text``."""
    if len(text) < MIN_MATCHING:
        raise ValueError(
            f"the text to match needs at least {MIN_MATCHING} characters (a shorter text matches too much)"
        )
    return [
        Match(str(e["sourceSite"]), str(e["sourceId"]), str(e.get("task") or ""))
        for e in chain(backbone.episodes(None), backbone.archived_episodes(None))
        if holds(e, text)
    ]


def forget(
    settings: Settings,
    backbone: Backbone,
    duties: ServerDuties,
    keys: Sequence[tuple[str, str]],
    *,
    text: str | None = None,
    purge_timeout: float = 60.0,
    now: float,
) -> ForgetReport:
    """Forget each (site, id) everywhere it reaches (see the module's doc); ``text``: the text the
    keys were found by, taken out of this site's own files too; ``purge_timeout``: seconds to wait
    for this site's daemon to purge its index. ``backbone`` opened as a writer (it brings an older
    hub to the current schema). Raises ``OperatorRefused`` when the server refuses the operator's
    credential."""
    forgotten, unknown, refused = _forget_keys(settings, backbone, duties, keys)
    _forget_saved(settings, keys)
    wal_left = duties.empty_forgotten()  # also when nothing new was found: a retry empties it
    elsewhere = [] if text is None else _forget_text_here(settings, text)
    indexes = _indexes(settings, backbone, now) if forgotten else []
    if forgotten:
        indexes = _purge_here(settings, backbone, indexes, timeout=purge_timeout)
    return ForgetReport(duties.where, forgotten, unknown, refused, wal_left, elsewhere, indexes)


def _forget_keys(
    settings: Settings, backbone: Backbone, duties: ServerDuties, keys: Sequence[tuple[str, str]]
) -> tuple[list[KeyOutcome], list[KeyOutcome], list[str]]:
    """Each key forgotten where this site may: its own; another's where the server's duties say
    it may (on the hub, always; on Convex, with the operator's credential)."""
    forgotten: list[KeyOutcome] = []
    unknown: list[KeyOutcome] = []
    refused: list[str] = []
    for site, source_id in dict.fromkeys(keys):
        key = f"{site}:{source_id}"
        done: Forgotten | None = (
            backbone.forget(source_id) if site == settings.site.name else duties.forget_elsewhere(site, source_id)
        )
        if done is None:
            refused.append(key)
            continue
        (forgotten if done.deleted else unknown).append(KeyOutcome(key, done.archive_week))
    return forgotten, unknown, refused


def _forget_saved(settings: Settings, keys: Sequence[tuple[str, str]]) -> None:
    """This site's saved memories (keys ``m<n>``) out of its journal too, so that the text leaves
    the site's disk as well as the backbone (the tombstone alone keeps a key from coming back)."""
    from daemon.paths import exists
    from sync.source.journal.source import local_id_of
    from sync.source.journal.store import Journal

    ids = [n for site, key in keys if site == settings.site.name and (n := local_id_of(key)) is not None]
    if ids and exists(settings.journal_path, "the journal"):
        with Journal(settings.journal_path) as journal:
            journal.delete(ids)


def _forget_text_here(settings: Settings, text: str) -> list[TextTakenOut]:
    """The text out of this site's files that keep text outside the backbone: the sidecars'
    quarantine previews (rows that never became episodes), the journal's saved memories and the
    alerts file's kept messages (a digest quotes top tasks)."""
    from daemon.alerts.store import AlertStore
    from daemon.paths import exists
    from sync.push.sidecar import Sidecar
    from sync.source.journal.store import Journal

    found: list[TextTakenOut] = []
    opener: type[Sidecar] | type[AlertStore] | type[Journal]
    for path, key, opener in (
        (settings.state_path, "state.path", Sidecar),
        (settings.journal_state_path, "state.path", Sidecar),
        (settings.journal_path, "the journal", Journal),
        (settings.alerts_path, "alerts", AlertStore),
    ):
        if not exists(path, key):
            continue
        held = opener(path)
        try:
            found.append(TextTakenOut(str(path), held.forget_text(text)))
        finally:
            held.close()
    return [entry for entry in found if entry.rows]


def _indexes(settings: Settings, backbone: Backbone, now: float) -> list[IndexReach]:
    """Every site's search index, and whether its daemon runs to drop (and purge) what was
    forgotten now: this site's by its lock; another's by a heartbeat within two intervals (the
    registry says offline only after the stale sweep). A site whose daemon is down does it when it
    starts."""
    from daemon.control.lock import holder_pid

    if not settings.warm.enabled:
        return []
    recent = now * 1000 - 2 * settings.jobs.heartbeat_interval * 1000
    indexes = []
    for state in backbone.sites():
        if state.index_state in (None, "off") and state.site != settings.site.name:
            continue
        if state.site == settings.site.name:
            running = holder_pid(settings.lock_path) is not None
        else:
            running = state.online and (state.last_heartbeat or 0) >= recent
        indexes.append(IndexReach(state.site, running))
    if settings.site.name not in {i.site for i in indexes}:
        indexes.append(IndexReach(settings.site.name, holder_pid(settings.lock_path) is not None))
    return indexes


def _purge_here(
    settings: Settings, backbone: Backbone, indexes: list[IndexReach], *, timeout: float
) -> list[IndexReach]:
    """This site's search index purged of what was forgotten: by its daemon, waited for through
    the control socket; with none running, here (the catch-up that ``sync`` runs, which purges
    once it has read the feed's tombstones)."""
    from daemon.control.client import ControlClient
    from daemon.search_worker.wiring import offline_layer

    mine = next((i for i in indexes if i.site == settings.site.name), None)
    if mine is None or not settings.warm.enabled:
        return indexes
    try:
        if mine.running:
            reached = replace(mine, purged=ControlClient(settings.socket_path).purged(wait=timeout).done)
        else:
            with offline_layer(settings, backbone, leases=backbone) as layer:
                layer.catch_up()
            reached = replace(mine, purged=True)
    except MemsyncError as exc:
        reached = replace(mine, purged=False, problem=str(exc))
    return [reached if index is mine else index for index in indexes]
