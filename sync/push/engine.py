"""One sync pass: snapshot a source, decide what each row needs, deliver it, record it.

The engine takes a source's description (``sync.source.base.Source``: its reader, its rows'
conversion, its id mapping), never a file: the AgentDB file is one source, the journal of saved
memories another, each with its own sidecar.

Order of work in a pass:
1. read new rows after the cursor in id order, a batch at a time, and advance the cursor after each
   batch. A row that cannot be delivered is quarantined with its reason and never blocks the rows
   after it; a batch the backbone refuses as a whole is split in halves until the bad row is found;
2. re-check rows already behind the cursor (quarantined rows someone asked to retry, the last
   ``window`` ids, everything every ``full_interval``) to catch edits and reused ids. The window
   is re-checked at most once every ``window_interval`` while new rows keep arriving, and on every
   pass that brings none (``recheck_due`` asks for one when a busy spell put it off).
   A re-check reads each row's raw values and converts only the rows whose values moved since the
   engine settled them (``sync.source.agentdb.digests``), so a quiet window costs a read, not a conversion.

Delivery is at-least-once to the backbone and exactly-once in effect: the backbone upserts by
(sourceSite, sourceId) and says UNCHANGED for a row it already holds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from sync.backbone.base import EpisodeSink, Outcome, PushItem, PushResult
from sync.episode import Attribution, Episode, Rejected
from sync.errors import BackboneRejected
from sync.push.agents import AgentsSeen
from sync.push.plan import Decision, Occupant, Verdict, after_conflict, batches, decide, plan_scan, window_due
from sync.push.sidecar import Conflict, Quarantined, QuarantineEntry, Sidecar, Synced
from sync.resilience.problems import ProblemLog
from sync.resilience.retry import RetryPolicy
from sync.source.agentdb.digests import RowDigests
from sync.source.agentdb.reader import clock_ahead_message
from sync.source.base import RowSnapshot as Snapshot
from sync.source.base import Source
from sync.source.redaction import Redactor

log = structlog.get_logger("memsync.engine")

RECHECK_CHUNK = 2000
# Rows of the full re-check done in one pass (~0.1 s): new episodes never wait behind more than this.
FULL_CHECK_SLICE = 5000
# While an agent keeps appending, the window is re-checked at most this often (sync.push.plan.window_due).
WINDOW_INTERVAL = 1.0
# Beyond this many distinct episodes under one id, something is writing garbage: stop and say so.
MAX_GENERATIONS = 64


@dataclass
class PassReport:
    read: int = 0
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    reused: int = 0
    quarantined: int = 0
    released: int = 0
    rechecked: int = 0  # rows behind the cursor converted again because their raw bytes moved
    cursor: int = 0
    backlog: int = 0
    full_scan: bool = False  # a slice of the full re-check ran
    full_done: bool = False  # ...and it completed the full re-check
    interrupted: bool = False
    redacted: int = 0  # episodes delivered with secrets redacted out of them

    @property
    def delivered(self) -> int:
        return self.inserted + self.updated

    def changed_anything(self) -> bool:
        return bool(self.inserted or self.updated or self.reused or self.quarantined or self.released)


@dataclass(frozen=True, slots=True)
class _Work:
    episode: Episode
    decision: Decision
    was_quarantined: bool
    kept_source_id: str | None = None  # for a reused id: where the other episode stays


@dataclass
class _Delivery:
    synced: list[Synced] = field(default_factory=list)
    quarantined: list[Quarantined] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    released: list[int] = field(default_factory=list)


class SyncEngine:
    def __init__(
        self,
        *,
        source: Source,
        sidecar: Sidecar,
        backbone: EpisodeSink,
        defaults: Attribution | None = None,
        batch_rows: int = 200,
        window: int = 256,
        full_interval: float = 60.0,
        full_check_slice: int = FULL_CHECK_SLICE,
        window_interval: float = WINDOW_INTERVAL,
        retry: RetryPolicy | None = None,
        clock: Callable[[], float] = time.time,
        redactor: Redactor | None = None,
    ) -> None:
        self.source = source
        self.reader = source.reader
        self.sidecar = sidecar
        self.backbone = backbone
        self.defaults = defaults or Attribution()
        self.redactor = redactor  # None: episodes leave as they are (privacy.redact = false)
        self.batch_rows = max(1, min(batch_rows, backbone.max_batch_rows))
        self.window = window
        self.full_interval = full_interval
        self.full_check_slice = full_check_slice
        self.window_interval = window_interval
        self._window_checked_at: float | None = None
        self._window_owed = False  # a busy pass put the window's re-check off
        self.retry = retry or RetryPolicy()
        self.clock = clock
        self.problems = ProblemLog(log)  # a backbone being retried is logged once, and once when it answers
        # The full re-check in slices: where the one in progress has reached (None: none running),
        # the file's stamp when it began, and whether the file changed since the last one began.
        self._full_position: int | None = None
        self._full_started: object | None = None
        self._changed_since_full = True  # unknown at start: edits may have happened while we were down
        self.passes = 0  # passes run by this engine (status and the benchmarks read it)
        # The agents this site's episodes name, for the registry's heartbeats (daemon/schedule/beats).
        self.agents = AgentsSeen.load(sidecar.get("agents_seen"))
        # Each settled row's raw values: a re-check converts only rows whose bytes moved.
        self._digests = RowDigests()
        self._ahead_said = False  # the file's time ahead of our clock: said once, and once when it ends

    def recheck_due(self) -> bool:
        """True when a pass is needed for re-checks alone, though the file did not change: the
        window a busy spell put off, or the full re-check."""
        if self._window_owed and (
            self._window_checked_at is None or self.clock() - self._window_checked_at >= self.window_interval
        ):
            return True
        return self.full_check_due()

    def full_check_due(self) -> bool:
        """True when a pass is needed for the full re-check alone: one is under way, or its interval
        has passed since the last and the file changed since. So an edit to an old episode is
        caught even if the file then goes quiet."""
        if self._full_position is not None:
            return True
        if not self._changed_since_full:
            return False
        last = self.sidecar.get_float("last_full_at")
        return last is None or self.clock() - last >= self.full_interval

    def _say_clock(self) -> None:
        """Say once that the file's time is ahead of this machine's clock (and once that it no
        longer is): the file is then read whole on every poll, and a person should fix a clock."""
        ahead = self.reader.ahead_of_clock_s
        if ahead is not None and not self._ahead_said:
            log.warning(
                "clock behind the AgentDB file",
                detail=clock_ahead_message(ahead),
                ahead_s=round(ahead),
                path=str(self.reader.path),
            )
        elif ahead is None and self._ahead_said:
            log.info("clock no longer behind the AgentDB file", path=str(self.reader.path))
        self._ahead_said = ahead is not None

    # -- the pass -------------------------------------------------------------------------------
    def run_pass(
        self,
        stop: threading.Event | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> PassReport:
        """One pass over the file. ``progress(done, total)`` follows the new rows, for progress bars.

        New rows first, so that they never wait behind re-checks; then the rows behind the cursor
        (requested retries, the window, a slice of the full re-check)."""
        stop = stop or threading.Event()
        report = PassReport()
        started = self.clock()  # `sync --wait` waits for a pass that began after it asked
        with self.reader.snapshot() as snap:
            self._say_clock()
            if self._full_started is not None and snap.stamp != self._full_started:
                self._changed_since_full = True
            start_cursor = self.sidecar.cursor()
            plan = plan_scan(
                start_cursor,
                self.window,
                self.clock(),
                self.sidecar.get_float("last_full_at"),
                self.full_interval,
                self._full_position,
                self._changed_since_full,
            )
            report.cursor = self._sync_new_rows(snap, start_cursor, report, stop, progress)
            self._retry_requested(snap, start_cursor, report, stop)
            now = self.clock()
            if window_due(now, self._window_checked_at, self.window_interval, report.read > 0):
                self._recheck(snap, plan.window_after, start_cursor, report, stop)
                self._window_checked_at, self._window_owed = now, False
            else:
                self._window_owed = True
            if plan.full_from is not None and not stop.is_set():
                self._full_check_slice(snap, plan.full_from, start_cursor, report, stop)
            report.backlog = snap.count_after(report.cursor)
            report.interrupted = stop.is_set() and report.backlog > 0
        now = self.clock()
        self.passes += 1
        # When the backlog last reached zero: pending rows cannot have been waiting longer than that.
        caught_up = {"caught_up_at": now} if report.backlog == 0 else {}
        self.sidecar.set_many(
            {
                "last_pass_at": now,
                "last_pass_started_at": started,
                "last_success_at": now,
                "last_error": None,
                "last_error_at": None,
                "source_error": None,
                "source_error_at": None,
                "backlog": report.backlog,
                "passes": self.passes,
                **({"agents_seen": self.agents.dump()} if self.agents.take_changed() else {}),
                **(
                    {"redacted_episodes": int(self.sidecar.get_float("redacted_episodes") or 0) + report.redacted}
                    if report.redacted
                    else {}
                ),
                **caught_up,
            }
        )
        if report.changed_anything():
            log.info(
                "synced",
                inserted=report.inserted,
                updated=report.updated,
                reused=report.reused,
                quarantined=report.quarantined,
                released=report.released,
                cursor=report.cursor,
                backlog=report.backlog,
            )
        return report

    def _sync_new_rows(
        self,
        snap: Snapshot,
        cursor: int,
        report: PassReport,
        stop: threading.Event,
        progress: Callable[[int, int], None] | None,
    ) -> int:
        """Rows after the cursor, in id order, a batch at a time; returns the new cursor."""
        total = snap.count_after(cursor)
        done = 0
        if progress is not None:
            progress(0, total)
        while not stop.is_set():
            rows = snap.rows_between(cursor, None, self.batch_rows)
            if not rows:
                break
            upto = rows[-1]["id"]
            occupants = self.sidecar.occupants_between(cursor, upto)
            work, delivery = self._plan_rows(
                rows, occupants, self.sidecar.quarantined_between(cursor, upto), forced=set()
            )
            self._deliver(work, delivery, upto, stop, report)
            self._record(delivery, report, cursor=upto)
            self._digests.remember(tuple(row.values()) for row in rows)
            cursor = upto
            report.read += len(rows)
            done += len(rows)
            if progress is not None:
                progress(done, total)
        return cursor

    def _full_check_slice(
        self, snap: Snapshot, after: int, cursor: int, report: PassReport, stop: threading.Event
    ) -> None:
        if after == 0:
            self._full_started = snap.stamp
            self._changed_since_full = False
        reached = self._recheck(snap, after, cursor, report, stop, limit=self.full_check_slice)
        report.full_scan = True
        if reached >= cursor:
            self._full_position = None
            self.sidecar.set_many({"last_full_at": self.clock()})
            report.full_done = True
        else:
            self._full_position = reached

    def _retry_requested(self, snap: Snapshot, cursor: int, report: PassReport, stop: threading.Event) -> None:
        """Quarantined rows someone asked to retry (``memsync quarantine retry``)."""
        forced = set(self.sidecar.retry_requested())
        if not forced:
            return
        rows = [r for r in snap.rows_by_id(forced) if r["id"] <= cursor]
        self._recheck_rows(rows, forced, cursor, report, stop)
        missing = forced - {r["id"] for r in rows}
        if missing:
            # Gone from the AgentDB file: nothing left to retry; drop the dead letters.
            self._record(_Delivery(released=sorted(missing)), report)

    def _recheck(
        self,
        snap: Snapshot,
        after: int,
        cursor: int,
        report: PassReport,
        stop: threading.Event,
        limit: int | None = None,
    ) -> int:
        """Hash rows in (after, cursor] again, at most ``limit`` of them, and deliver what changed.
        Returns the last id checked (``cursor`` when the range is done)."""
        position, checked = after, 0
        while position < cursor and not stop.is_set() and (limit is None or checked < limit):
            chunk = RECHECK_CHUNK if limit is None else min(RECHECK_CHUNK, limit - checked)
            raw = snap.raw_between(position, cursor, chunk)
            if not raw:
                return cursor
            # Only the rows whose raw values moved since they were settled are converted again.
            moved = self._digests.changed(raw)
            if moved:
                self._recheck_rows([snap.to_row(values) for values in moved], set(), cursor, report, stop)
                self._digests.remember(moved)
            position = raw[-1][0]
            checked += len(raw)
            if len(raw) < chunk:
                return cursor
        return cursor if position >= cursor else position

    def _recheck_rows(
        self, rows: Sequence[dict[str, Any]], forced: set[int], cursor: int, report: PassReport, stop: threading.Event
    ) -> None:
        if not rows:
            return
        report.rechecked += len(rows)
        lo, hi = rows[0]["id"] - 1, rows[-1]["id"]
        ids = [r["id"] for r in rows]
        occupants = self.sidecar.occupants_for(ids)
        quarantined = self.sidecar.quarantined_between(lo, hi)
        work, delivery = self._plan_rows(rows, occupants, quarantined, forced)
        if work or delivery.quarantined or delivery.released:
            self._deliver(work, delivery, cursor, stop, report)
            self._record(delivery, report)

    def _record(self, delivery: _Delivery, report: PassReport, cursor: int | None = None) -> None:
        self.sidecar.record(
            delivery.synced,
            delivery.quarantined,
            delivery.conflicts,
            delivery.released,
            cursor=cursor,
            now=self.clock(),
        )
        report.quarantined += len(delivery.quarantined)
        report.released += len(delivery.released)
        for dead in delivery.quarantined:
            log.warning("quarantined", local_id=dead.local_id, stage=dead.stage, reason=dead.reason)

    # -- deciding -------------------------------------------------------------------------------
    def _plan_rows(
        self,
        rows: Sequence[dict[str, Any]],
        occupants: dict[int, list[Occupant]],
        quarantined: dict[int, QuarantineEntry],
        forced: set[int],
    ) -> tuple[list[_Work], _Delivery]:
        work: list[_Work] = []
        delivery = _Delivery()
        limit = self.backbone.max_episode_bytes
        for row in rows:
            local_id: int = row["id"]
            entry = quarantined.get(local_id)
            retry = local_id in forced
            episode = self.source.convert(row, self.defaults, self.redactor)
            if isinstance(episode, Rejected):
                if entry is None or entry.content_hash != episode.content_hash or retry:
                    delivery.quarantined.append(
                        Quarantined(local_id, episode.content_hash, "read", episode.reason, episode.raw)
                    )
                continue
            if entry is not None and entry.content_hash == episode.content_hash and not retry:
                continue  # the backbone refused exactly this content before; wait for a change or a retry
            if limit is not None and episode.size > limit:
                delivery.quarantined.append(
                    Quarantined(
                        local_id,
                        episode.content_hash,
                        "backbone",
                        f"episode is {episode.size} bytes; the {self.backbone.kind} backbone takes at most {limit}",
                        None,
                    )
                )
                continue
            decision = decide(
                local_id,
                episode.identity_hash,
                episode.content_hash,
                occupants.get(local_id, []),
                self.source.source_id_for,
            )
            if decision.verdict is Verdict.UNCHANGED:
                if entry is not None:
                    delivery.released.append(local_id)
                continue
            kept = decision.displaced.source_id if decision.displaced is not None else None
            work.append(_Work(episode, decision, entry is not None, kept))
        return work, delivery

    # -- delivering -----------------------------------------------------------------------------
    def _deliver(
        self, work: list[_Work], delivery: _Delivery, cursor: int, stop: threading.Event, report: PassReport
    ) -> None:
        queue = work
        while queue:
            conflicted: list[_Work] = []
            for batch in batches(
                queue, self.backbone.max_batch_rows, self.backbone.max_batch_bytes, lambda w: w.episode.size
            ):
                results = self._push_isolating(batch, cursor, stop)
                for item, result in zip(batch, results, strict=True):
                    retry_as = self._settle(item, result, delivery, report)
                    if retry_as is not None:
                        conflicted.append(retry_as)
            queue = conflicted

    def _settle(self, item: _Work, result: PushResult, delivery: _Delivery, report: PassReport) -> _Work | None:
        episode, decision = item.episode, item.decision
        if result.outcome is Outcome.CONFLICT:
            following = after_conflict(episode.local_id, decision, self.source.source_id_for)
            if following.generation > MAX_GENERATIONS:
                delivery.quarantined.append(
                    Quarantined(
                        episode.local_id,
                        episode.content_hash,
                        "backbone",
                        f"more than {MAX_GENERATIONS} different episodes were written under id {episode.local_id}",
                        None,
                    )
                )
                return None
            return _Work(episode, following, item.was_quarantined, item.kept_source_id or decision.source_id)
        if result.outcome is Outcome.REJECTED:
            delivery.quarantined.append(
                Quarantined(
                    episode.local_id,
                    episode.content_hash,
                    "backbone",
                    result.reason or "rejected by the backbone",
                    {"sourceId": decision.source_id, **episode.fields},
                )
            )
            return None
        occupant = Occupant(
            episode.local_id, decision.generation, decision.source_id, episode.identity_hash, episode.content_hash
        )
        delivery.synced.append(Synced(occupant, result.remote_id, result.synced_at))
        self.agents.saw(episode.fields)
        if item.kept_source_id is not None:
            delivery.conflicts.append(Conflict(episode.local_id, item.kept_source_id, decision.source_id))
            report.reused += 1
            log.warning(
                "reused id: kept both episodes",
                local_id=episode.local_id,
                kept=item.kept_source_id,
                new=decision.source_id,
            )
        if item.was_quarantined:
            delivery.released.append(episode.local_id)
        if result.outcome is Outcome.INSERTED:
            report.inserted += 1
        elif result.outcome is Outcome.UPDATED:
            report.updated += 1
        else:
            report.unchanged += 1
        if episode.redacted and result.outcome in (Outcome.INSERTED, Outcome.UPDATED):
            report.redacted += 1
        return None

    def _push_isolating(self, batch: Sequence[_Work], cursor: int, stop: threading.Event) -> list[PushResult]:
        items = [
            PushItem(
                w.decision.source_id,
                w.episode.local_id,
                w.episode.identity_hash,
                w.episode.content_hash,
                w.episode.fields,
                w.episode.body,
            )
            for w in batch
        ]
        try:
            at = self.source.backbone_cursor(cursor)
            results = self.retry.call(lambda: self.backbone.push(items, at), stop=stop, on_retry=self._note_retry)
        except BackboneRejected as exc:
            if len(batch) == 1:
                return [PushResult(items[0].source_id, Outcome.REJECTED, reason=str(exc))]
            middle = len(batch) // 2
            return self._push_isolating(batch[:middle], cursor, stop) + self._push_isolating(
                batch[middle:], cursor, stop
            )
        self.problems.recovered("backbone")
        if len(results) != len(items):
            raise BackboneRejected(f"the backbone answered {len(results)} results for {len(items)} rows")
        return results

    def _note_retry(self, error: BaseException, delay: float, attempt: int) -> None:
        self.problems.problem("backbone", f"unavailable, retrying: {error}", retry_in=round(delay, 2))
        self.sidecar.set_many({"last_error": f"backbone: {error}", "last_error_at": self.clock()})
