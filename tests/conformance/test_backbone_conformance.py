"""One conformance suite, run against the embedded hub and against Convex (the real cloud_functions
in the local Convex server): both must give the same results for the same calls."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import AgentProcess, episode, expected_episode, read_agentdb_rows
from convex_fixtures import LocalConvex

from sync.backbone.base import (
    AgentBeat,
    Backbone,
    Change,
    ChangeFeed,
    Forgotten,
    HealthTransition,
    Outcome,
    PointRecord,
    PushItem,
    SiteBeat,
    SiteState,
    SourceRecord,
    Sweeps,
)
from sync.backbone.convex import ConvexBackbone
from sync.backbone.hub import HubBackbone
from sync.episode import EXPORT_FIELDS, Attribution, Episode
from sync.errors import BackboneConflict, BackboneNotFound, BackboneRejected
from sync.policy.approvals import MAX_DEFERS
from sync.policy.leases import Claim
from sync.push.agents import liveness
from sync.push.engine import SyncEngine
from sync.push.sidecar import Sidecar
from sync.source.agentdb.rows import convert
from sync.source.agentdb.source import agentdb_source
from sync.source.entities import entities, task_key
from sync.source.types import memory_type

STALE_AFTER_MS = 3 * 60_000


class ConvexSweeps:
    """The sweeps as Convex's crons run them: its internal functions, called with the admin key.
    The local Convex is shared by every test of the session and a sweep covers every site, so the
    counts here are of this test's sites only (``ours``)."""

    def __init__(self, convex: LocalConvex, ours: Callable[[str], bool]) -> None:
        self.convex = convex
        self.ours = ours

    def mark_stale(self, now_ms: int, stale_after_ms: int) -> int:
        value = self.convex.admin("mutation", "agents:markStale", {"now": now_ms, "staleAfterMs": stale_after_ms})
        return sum(self.ours(a["site"]) for a in value["agents"]) + sum(self.ours(s) for s in value["sites"])

    def prune_agents(self, now_ms: int, retention_ms: int) -> int:
        value = self.convex.admin("mutation", "agents:pruneAgents", {"now": now_ms, "retentionMs": retention_ms})
        return sum(self.ours(a["site"]) for a in value["pruned"])

    def expire_approvals(self, now_ms: int, timeouts_ms: Mapping[str, int], default_ms: int) -> int:
        args = {"now": now_ms, "timeoutsMs": dict(timeouts_ms), "defaultMs": default_ms}
        value = self.convex.admin("mutation", "approvals:expirePending", args)
        return sum(self.ours(e["site"]) for e in value["expired"])

    def sync_health(self, now_ms: int, silent_after_ms: int) -> list[HealthTransition]:
        rows = self.convex.admin(
            "mutation", "health:syncHealthAlert", {"now": now_ms, "silentAfterMs": silent_after_ms}
        )
        return [
            HealthTransition(r["site"], r["state"], int(r["at"]), float(r["silentForS"]))
            for r in rows
            if self.ours(r["site"])
        ]

    def build_digest(self, day: str, now_ms: int) -> dict[str, Any]:
        digest: dict[str, Any] = self.convex.admin("mutation", "digest:build", {"day": day, "now": now_ms})
        return digest

    def archive_older_than(self, cutoff_ms: int, limit: int) -> int:
        # Orphans of a crashed writer may go at once here: no other writer runs in these tests.
        args = {"cutoff": cutoff_ms, "limit": limit, "orphanGraceMs": 0}
        return int(self.convex.admin("action", "episodes:archiveOld", args)["archived"])


@dataclass
class Opened:
    backbone: Backbone
    # The periodic sweeps, as of a given time: the hub's own methods, or on Convex the crons'
    # internal functions run with the admin key.
    sweeps: Sweeps
    # The names of this test's sites (on Convex, with the test's suffix), to pick them out of the
    # fleet: a shared Convex holds every test's sites.
    ours: Callable[[str], bool]
    # What the backbone itself stores as an episode's approvalStatus (read around memsync).
    approval_status: Callable[[str], str | None]

    @property
    def site(self) -> str:
        return self.backbone.site


OpenSite = Callable[[str], Opened]


@pytest.fixture(params=["local", "convex"])
def open_site(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OpenSite]:
    """A backbone client for a site; on Convex each test's sites get names of their own. Opening a
    name again gives another client of the same site (a second daemon, or a clone)."""
    opened: list[Backbone] = []
    suffix = uuid.uuid4().hex[:8]
    registered: dict[str, str] = {}

    def make(name: str) -> Opened:
        if request.param == "local":
            hub = HubBackbone(tmp_path / "hub.db", name)
            opened.append(hub)

            def stored_status(source_id: str) -> str | None:
                with closing(sqlite3.connect(tmp_path / "hub.db")) as conn:
                    row = conn.execute(
                        "SELECT approval_status FROM episodes WHERE source_site = ? AND source_id = ?",
                        (name, source_id),
                    ).fetchone()
                return None if row is None else row[0]

            return Opened(hub, hub, lambda _site: True, stored_status)
        convex: LocalConvex = request.getfixturevalue("local_convex")
        site = f"{name}-{suffix}"
        if site not in registered:
            registered[site] = convex.register_site(site)
        client = ConvexBackbone(convex.url, site, registered[site])
        opened.append(client)
        ours = registered.__contains__

        def convex_status(source_id: str) -> str | None:
            found = convex.admin("query", "episodes:approvalStatusOf", {"site": site, "sourceId": source_id})
            return None if found is None else str(found)

        return Opened(client, ConvexSweeps(convex, ours), ours, convex_status)

    yield make
    for backbone in opened:
        backbone.close()


def item(
    local_id: int,
    *,
    task: str = "t",
    output: str = "out",
    suffix: str = "",
    at: int | None = None,  # seconds: the episode's ts and created_at
    tags: tuple[str, ...] = ("a",),
    reward: float | None = 0.5,
    success: bool = True,
    agent: str | None = "coder",
    meta: Mapping[str, Any] | None = None,  # the metadata, instead of the agent's
) -> PushItem:
    metadata: dict[str, Any] = {"_private": 1} if agent is None else {"agent_name": agent, "_private": 1}
    if meta is not None:
        metadata = dict(meta)
    row = {
        "id": local_id,
        "ts": 1735689600 + local_id if at is None else at,
        "created_at": 1735689600 + local_id if at is None else at,
        "session_id": b"s",
        "task": task.encode(),
        "input": f"in {local_id}".encode(),
        "output": output.encode(),
        "critique": None,
        "reward": reward,
        "success": int(success),
        "latency_ms": 10,
        "tokens_used": 20,
        "tags": json.dumps(list(tags)).encode(),
        "metadata": json.dumps(metadata).encode(),
    }
    ep = convert(row, Attribution())
    assert isinstance(ep, Episode)
    return PushItem(f"{local_id}{suffix}", local_id, ep.identity_hash, ep.content_hash, ep.fields, ep.body)


def test_insert_then_unchanged_then_update_keeps_the_first_synced_at(open_site: OpenSite) -> None:
    s = open_site("laptop")
    first = s.backbone.push([item(1), item(2)], cursor=2)
    assert [r.outcome for r in first] == [Outcome.INSERTED, Outcome.INSERTED]
    assert all(r.remote_id and r.synced_at for r in first)
    again = s.backbone.push([item(1), item(2)], cursor=2)
    assert [r.outcome for r in again] == [Outcome.UNCHANGED, Outcome.UNCHANGED]
    assert [(r.remote_id, r.synced_at) for r in again] == [(r.remote_id, r.synced_at) for r in first]
    edited = s.backbone.push([item(1, output="better")], cursor=2)
    assert edited[0].outcome is Outcome.UPDATED
    assert (edited[0].remote_id, edited[0].synced_at) == (first[0].remote_id, first[0].synced_at)
    exported = {e["sourceId"]: e for e in s.backbone.episodes(s.site)}
    assert exported["1"]["output"] == "better"
    assert len(exported) == 2


def test_a_key_holding_another_episode_is_a_conflict_and_is_left_alone(open_site: OpenSite) -> None:
    s = open_site("laptop")
    s.backbone.push([item(5, task="first")], cursor=5)
    (conflict,) = s.backbone.push([item(5, task="another")], cursor=5)
    assert conflict.outcome is Outcome.CONFLICT
    assert [e["task"] for e in s.backbone.episodes(s.site)] == ["first"]
    (second,) = s.backbone.push([item(5, task="another", suffix="~1")], cursor=5)
    assert second.outcome is Outcome.INSERTED
    assert sorted(e["sourceId"] for e in s.backbone.episodes(s.site)) == ["5", "5~1"]


def test_the_cursor_moves_with_the_rows_and_never_backwards(open_site: OpenSite) -> None:
    s = open_site("laptop")
    assert s.backbone.site_cursor() is None
    s.backbone.push([item(1), item(2)], cursor=2)
    cursor = s.backbone.site_cursor()
    assert cursor is not None
    assert (cursor.last_synced_id, cursor.total_synced) == (2, 2)
    s.backbone.push([item(1)], cursor=1)  # a re-push after a lost sidecar
    cursor = s.backbone.site_cursor()
    assert cursor is not None
    assert (cursor.last_synced_id, cursor.total_synced) == (2, 2)


def test_a_client_writes_and_reads_as_the_site_it_was_opened_for(open_site: OpenSite) -> None:
    laptop, vm = open_site("laptop"), open_site("vm")
    laptop.backbone.push([item(1)], cursor=1)
    assert vm.backbone.site_cursor() is None  # laptop's push moved laptop's cursor only
    (pushed,) = vm.backbone.push([item(1)], cursor=1)
    assert pushed.outcome is Outcome.INSERTED  # the same key, in vm's own keyspace
    cursor = laptop.backbone.site_cursor()
    assert cursor is not None
    assert cursor.site == laptop.site
    assert [e["sourceSite"] for e in vm.backbone.episodes(vm.site)] == [vm.site]


def test_export_has_the_documented_fields_in_order_and_metadata_as_an_object(open_site: OpenSite) -> None:
    s = open_site("laptop")
    s.backbone.push([item(1)], cursor=1)
    (exported,) = list(s.backbone.episodes(s.site))
    assert tuple(exported) == EXPORT_FIELDS
    assert exported["sourceSite"] == s.site
    assert exported["metadata"] == {"agent_name": "coder", "_private": 1}
    assert exported["tags"] == ["a"]
    assert exported["success"] is True


def _sync(agentdb: Path, tmp_path: Path, s: Opened, name: str) -> SyncEngine:
    sidecar = Sidecar(tmp_path / f"{name}.state.db")
    sidecar.bind(s.site, s.backbone.description)
    return SyncEngine(source=agentdb_source(agentdb), sidecar=sidecar, backbone=s.backbone)


def _assert_delivered(s: Opened, agentdb: Path) -> list[dict[str, Any]]:
    rows = read_agentdb_rows(agentdb)
    exported = list(s.backbone.episodes(s.site))
    counts = Counter(e["sourceId"] for e in exported)
    assert all(n == 1 for n in counts.values()), "an episode was duplicated"
    assert set(counts) == {str(i) for i in rows}
    for e in exported:
        want = expected_episode(rows[int(e["sourceId"])])
        assert {k: e[k] for k in want} == want
    return exported


def test_the_engine_gives_the_same_result_on_both(
    open_site: OpenSite, make_agentdb: Callable[..., Path], tmp_path: Path
) -> None:
    s = open_site("laptop")
    agentdb = make_agentdb(450, edge_cases=True)
    engine = _sync(agentdb, tmp_path, s, "a")
    report = engine.run_pass()
    assert (report.inserted, report.quarantined, report.backlog) == (450, 0, 0)
    _assert_delivered(s, agentdb)
    assert engine.run_pass().changed_anything() is False


def test_edits_and_reused_ids_through_the_engine(
    open_site: OpenSite, agents: Callable[[Path], AgentProcess], tmp_path: Path
) -> None:
    s = open_site("laptop")
    path = tmp_path / "race.db"
    first = agents(path)
    first.store(episode(1))
    engine = _sync(path, tmp_path, s, "race")
    engine.run_pass()
    second = agents(path)
    second.reload()
    reused = first.store(episode(2, task="first writer"))
    engine.run_pass()
    assert second.store(episode(3, task="second writer")) == reused
    second.update(1, critique="edited")
    report = engine.run_pass()
    assert (report.reused, report.inserted, report.updated) == (1, 1, 1)
    by_key = {e["sourceId"]: e for e in s.backbone.episodes(s.site)}
    assert (by_key[str(reused)]["task"], by_key[f"{reused}~1"]["task"]) == ("first writer", "second writer")
    assert by_key["1"]["critique"] == "edited"


def test_two_sites_syncing_at_once_lose_nothing_and_duplicate_nothing(
    open_site: OpenSite, make_agentdb: Callable[..., Path], tmp_path: Path
) -> None:
    sites = [open_site("laptop"), open_site("vm")]
    files = [make_agentdb(300, seed=1, name="a.db"), make_agentdb(300, seed=2, name="b.db")]
    engines = [_sync(f, tmp_path, s, f.stem) for f, s in zip(files, sites, strict=True)]
    errors: list[BaseException] = []

    def run(engine: SyncEngine) -> None:
        try:
            engine.run_pass()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(e,)) for e in engines]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    for s, f in zip(sites, files, strict=True):
        assert {e["sourceSite"] for e in _assert_delivered(s, f)} == {s.site}


def _now_ms() -> int:
    return int(time.time() * 1000)


def test_heartbeats_and_staleness(open_site: OpenSite) -> None:
    laptop, vm = open_site("laptop"), open_site("vm")
    laptop.backbone.heartbeat("coder", "claude-code")
    vm.backbone.heartbeat("planner", "agentic-flow")
    (coder,) = laptop.backbone.agents()
    assert (coder.agent_name, coder.platform, coder.status) == ("coder", "claude-code", "online")
    laptop.sweeps.mark_stale(_now_ms() + 60_000, STALE_AFTER_MS)
    assert laptop.backbone.agents()[0].status == "online"
    laptop.sweeps.mark_stale(_now_ms() + 3 * 60_000 + 1_000, STALE_AFTER_MS)  # three minutes without a heartbeat
    assert laptop.backbone.agents()[0].status == "offline"
    laptop.backbone.heartbeat("coder", "claude-code")
    assert laptop.backbone.agents()[0].status == "online"
    assert [a.agent_name for a in vm.backbone.agents()] == ["planner"]  # each site sees its own


def test_approvals_and_their_expiry(open_site: OpenSite) -> None:
    laptop, vm = open_site("laptop"), open_site("vm")
    later = _now_ms() + 600_000
    first = laptop.backbone.create_approval(
        agent_name="coder", action_type="deploy", priority="high", reviewers=["alice"], expires_at=later
    )
    (pending,) = laptop.backbone.approvals("pending")
    assert (pending.approval_id, pending.action_type, pending.reviewers) == (first, "deploy", ("alice",))
    assert laptop.backbone.resolve_approval(first, "approved", "alice") == "approved"
    with pytest.raises(BackboneConflict):
        laptop.backbone.resolve_approval(first, "rejected", "bob")
    with pytest.raises(BackboneConflict):
        vm.backbone.resolve_approval(first, "rejected", "mallory")  # another site's: decided once, wherever
    with pytest.raises(BackboneNotFound):
        vm.backbone.resolve_approval("999999", "rejected", "mallory")
    soon = laptop.backbone.create_approval(
        agent_name="coder",
        action_type="rm -rf",
        priority="critical",
        reviewers=[],
        expires_at=_now_ms() + 60_000,
    )
    laptop.sweeps.expire_approvals(_now_ms() + 61_000, {}, 3_600_000)
    assert [a.approval_id for a in laptop.backbone.approvals("expired")] == [soon]
    with pytest.raises(BackboneConflict):
        laptop.backbone.resolve_approval(soon, "approved", "alice")
    with pytest.raises(BackboneRejected):
        laptop.backbone.create_approval(
            agent_name="coder", action_type="x", priority="urgent!", reviewers=[], expires_at=later
        )
    assert [a.status for a in laptop.backbone.approvals()] == ["approved", "expired"]


def test_approvals_are_decided_from_any_site_deferred_and_followed_by_their_episode(open_site: OpenSite) -> None:
    """People decide for the fleet: a pending approval of the laptop's is approved on the vm; the
    episode it is about carries the decision; a deferral pushes its expiry out by the category's
    timeout, MAX_DEFERS times at most."""
    laptop, vm = open_site("laptop"), open_site("vm")
    laptop.backbone.push([item(1)], cursor=1)  # the episode the approval is about
    first_episode = "1"
    later = _now_ms() + 24 * 3_600_000
    asked = laptop.backbone.create_approval(
        agent_name="coder",
        action_type="send_message",
        priority="normal",
        reviewers=["42"],
        expires_at=later,
        summary="email the weekly report to the team",
        source_id=first_episode,
    )
    # An episode id that names none of the site's episodes is refused, and nothing is created.
    with pytest.raises(BackboneNotFound, match="no episode '2' from site"):
        laptop.backbone.create_approval(
            agent_name="coder",
            action_type="send_message",
            priority="normal",
            reviewers=[],
            expires_at=later,
            source_id="2",
        )
    seen = vm.backbone.approval(asked)
    assert seen is not None
    assert (seen.site, seen.summary, seen.source_id, seen.defer_count) == (
        laptop.site,
        "email the weekly report to the team",
        first_episode,
        0,
    )
    assert vm.backbone.approval("not-an-id") is None
    assert [a.approval_id for a in vm.backbone.approvals(all_sites=True) if vm.ours(a.site)] == [asked]
    assert vm.backbone.approvals() == []

    deferred = vm.backbone.defer_approval(asked, "ann")
    hour = 60 * 60_000  # send_message's timeout
    assert deferred.defer_count == 1
    assert abs(deferred.expires_at - (seen.created_at + 2 * hour)) < 5_000
    for _ in range(MAX_DEFERS - 1):
        vm.backbone.defer_approval(asked, "ann")
    with pytest.raises(BackboneConflict, match="deferred 3 times"):
        vm.backbone.defer_approval(asked, "ann")
    # A deferred approval is judged by its own deadline, not its category's timeout from creation.
    laptop.sweeps.expire_approvals(seen.created_at + 2 * hour, {}, hour)
    assert laptop.backbone.approvals("pending")[0].approval_id == asked

    end = laptop.backbone.feed_end()
    assert vm.backbone.resolve_approval(asked, "approved", "ann") == "approved"
    assert laptop.approval_status(first_episode) == "approved"
    # The decision is a change in the feed (search indexes show it), its content the same.
    (moved,) = [c for c in laptop.backbone.changes(end, 100) if (c.site, c.source_id) == (laptop.site, first_episode)]
    assert moved.episode is not None
    assert moved.episode["approvalStatus"] == "approved"
    assert moved.episode["contentHash"] == item(1).content_hash
    resolved = laptop.backbone.approval(asked)
    assert resolved is not None
    assert (resolved.status, resolved.resolved_by) == ("approved", "ann")
    assert resolved.resolved_at is not None


def test_forget_deletes_for_good(open_site: OpenSite) -> None:
    s = open_site("laptop")
    s.backbone.push([item(1), item(2)], cursor=2)
    assert s.backbone.forget("1") == Forgotten(True, None)
    assert [e["sourceId"] for e in s.backbone.episodes(s.site)] == ["2"]
    (again,) = s.backbone.push([item(1)], cursor=2)
    assert (again.outcome, again.reason) == (Outcome.REJECTED, "forgotten")
    assert s.backbone.forget("1") == Forgotten(False, None)
    assert [e["sourceId"] for e in s.backbone.episodes(s.site)] == ["2"]


def test_the_sites_total_follows_its_forgets(open_site: OpenSite) -> None:
    """totalSynced counts the site's episodes the backbone holds, so that status and the fleet
    agree with it after a forget: the inserted, less the forgotten (a key forgotten twice, or
    never synced, takes nothing off)."""
    s = open_site("laptop")
    s.backbone.push([item(1), item(2), item(3)], cursor=3)
    s.backbone.forget("2")
    s.backbone.forget("2")
    s.backbone.forget("99")
    cursor = s.backbone.site_cursor()
    assert cursor is not None
    assert (cursor.last_synced_id, cursor.total_synced) == (3, 2)
    assert len(list(s.backbone.episodes(s.site))) == 2
    (synced,) = [site for site in s.backbone.sites() if site.site == s.site]
    assert synced.total_synced == 2


def test_a_forget_rebuilds_the_stored_digest_of_the_episodes_day(open_site: OpenSite) -> None:
    """A digest's top tasks quote episodes' tasks: forgetting one takes it out of its day's
    stored digest too (rebuilt in the forget), whatever the day."""
    s = open_site("laptop")
    day, noon = "2020-03-04", int(datetime(2020, 3, 4, 12, tzinfo=UTC).timestamp())
    secret = f"codename-{uuid.uuid4().hex[:10]}"
    s.backbone.push([item(1, at=noon, task=secret), item(2, at=noon + 60, task="ordinary work")], cursor=2)
    s.sweeps.build_digest(day, _now_ms())
    assert secret in json.dumps(s.backbone.digest(day))
    s.backbone.forget("1")
    after = s.backbone.digest(day)
    assert after is not None
    assert secret not in json.dumps(after)
    assert "ordinary work" in json.dumps(after)


def _feed_end(feed: ChangeFeed) -> int:
    """The feed's last seq so far (a shared Convex holds other tests' changes too)."""
    after = 0
    while page := feed.changes(after, 500):
        after = page[-1].seq
    return after


def _feed(feed: ChangeFeed, after: int, limit: int = 500) -> list[Change]:
    changes: list[Change] = []
    while page := feed.changes(after, limit):
        assert [c.seq for c in page] == sorted({c.seq for c in page}), "seq must strictly increase"
        assert all(c.seq > after for c in page)
        changes.extend(page)
        after = page[-1].seq
    return changes


def test_the_change_feed_lists_every_insert_edit_and_forget_once_in_commit_order(open_site: OpenSite) -> None:
    laptop, vm = open_site("laptop"), open_site("vm")
    start = _feed_end(laptop.backbone)
    laptop.backbone.push([item(1), item(2)], cursor=2)
    vm.backbone.push([item(1)], cursor=1)
    laptop.backbone.push([item(1), item(2)], cursor=2)  # unchanged: no change
    laptop.backbone.push([item(1, output="better")], cursor=2)
    vm.backbone.forget("1")
    vm.backbone.forget("1")  # already forgotten: no change
    feed = _feed(vm.backbone, start)
    assert [(c.site, c.source_id, c.episode is None) for c in feed] == [
        (laptop.site, "2", False),
        (laptop.site, "1", False),  # the edit moved it to the end; it appears once
        (vm.site, "1", True),
    ]
    edited = feed[1].episode
    assert edited is not None
    assert tuple(edited) == EXPORT_FIELDS
    assert (edited["output"], edited["sourceSite"], edited["sourceId"]) == ("better", laptop.site, "1")
    assert edited["contentHash"] == item(1, output="better").content_hash
    assert feed[0].point_id is None
    assert laptop.backbone.feed_end() == vm.backbone.feed_end() == feed[-1].seq
    paged = _feed(vm.backbone, start, limit=1)
    assert [c.seq for c in paged] == [c.seq for c in feed]
    assert _feed(laptop.backbone, feed[-1].seq) == []


def test_point_ids_are_recorded_for_the_current_content_only_and_are_not_changes(open_site: OpenSite) -> None:
    laptop, vm = open_site("laptop"), open_site("vm")
    laptop.backbone.push([item(1), item(2)], cursor=2)
    end = _feed_end(laptop.backbone)
    current, stale = item(1).content_hash, item(2, output="old").content_hash
    recorded = vm.backbone.record_point_ids(  # any site may record: point ids are deterministic
        [
            PointRecord(laptop.site, "1", "p-1", current),
            PointRecord(laptop.site, "2", "p-2", stale),
            PointRecord(laptop.site, "99", "p-99", current),
        ],
    )
    assert recorded == 1
    assert vm.backbone.record_point_ids([]) == 0
    assert _feed(laptop.backbone, end) == []
    by_key = {c.source_id: c for c in _feed(laptop.backbone, end - 2) if c.site == laptop.site}
    assert (by_key["1"].point_id, by_key["2"].point_id) == ("p-1", None)
    laptop.backbone.push([item(1, output="edited")], cursor=2)
    (edit,) = _feed(laptop.backbone, end)
    assert (edit.source_id, edit.point_id) == ("1", None)  # an edit waits for a new vector


def _source(instance: str, *, host: str = "laptop.lan", path: str = "/home/a/.agentdb/memory.db") -> SourceRecord:
    return SourceRecord(instance, f"machine-of-{instance}", host, path)


def _source_of(s: Opened) -> SourceRecord:
    found = s.backbone.source_of()
    assert found is not None
    return found


def test_the_first_claim_of_a_site_is_read_back(open_site: OpenSite) -> None:
    s = open_site("laptop")
    assert s.backbone.source_of() is None
    assert s.backbone.set_source(_source("i-1"), expected="i-0") is False  # nothing to compare with
    assert s.backbone.source_of() is None
    before = _now_ms()
    assert s.backbone.set_source(_source("i-1"), expected=None) is True
    found = _source_of(s)
    assert (found.instance, found.machine, found.host, found.agentdb_path) == (
        "i-1",
        "machine-of-i-1",
        "laptop.lan",
        "/home/a/.agentdb/memory.db",
    )
    assert before <= found.claimed_at == found.last_seen_at <= _now_ms()


def test_the_holder_renews_its_claim_and_keeps_its_claimed_at(open_site: OpenSite) -> None:
    s = open_site("laptop")
    assert s.backbone.set_source(_source("i-1"), expected=None) is True
    first = _source_of(s)
    time.sleep(0.01)  # the backbones' clocks count milliseconds: let last_seen_at move
    moved = _source("i-1", path="/home/a/moved.db")
    assert s.backbone.set_source(moved, expected="i-1") is True
    # expected=None from the holder itself: a retry whose first answer was lost still wins
    assert s.backbone.set_source(moved, expected=None) is True
    renewed = _source_of(s)
    assert renewed.claimed_at == first.claimed_at
    assert renewed.last_seen_at > first.last_seen_at
    assert renewed.agentdb_path == "/home/a/moved.db"


def test_another_instance_takes_the_site_only_by_naming_the_holder(open_site: OpenSite) -> None:
    s = open_site("laptop")
    assert s.backbone.set_source(_source("i-1"), expected=None) is True
    held = _source_of(s)
    clone = _source("i-2", host="clone.lan")
    assert s.backbone.set_source(clone, expected=None) is False
    assert s.backbone.set_source(clone, expected="i-9") is False
    assert s.backbone.source_of() == held
    time.sleep(0.01)  # a take-over in the same millisecond would leave claimed_at as it was
    assert s.backbone.set_source(clone, expected="i-1") is True
    taken = _source_of(s)
    assert (taken.instance, taken.machine, taken.host) == ("i-2", "machine-of-i-2", "clone.lan")
    assert taken.claimed_at > held.claimed_at
    assert taken.claimed_at == taken.last_seen_at
    # the old holder is now the outsider
    assert s.backbone.set_source(_source("i-1"), expected=None) is False
    assert s.backbone.set_source(_source("i-1"), expected="i-1") is False
    assert _source_of(s) == taken


def test_instances_racing_for_a_site_one_takes_it(open_site: OpenSite) -> None:
    clients = [open_site("laptop") for _ in range(4)]  # on the hub, four connections to one file
    first = clients[0]
    assert first.backbone.set_source(_source("i-0"), expected=None) is True
    barrier = threading.Barrier(len(clients))
    won: dict[str, bool] = {}

    def claim(client: Opened, instance: str) -> None:
        barrier.wait(30)
        won[instance] = client.backbone.set_source(_source(instance), expected="i-0")

    threads = [threading.Thread(target=claim, args=(c, f"i-{n}")) for n, c in enumerate(clients, start=1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(won) == len(clients)
    (winner,) = [instance for instance, ok in won.items() if ok]
    assert _source_of(first).instance == winner


def test_each_site_has_a_source_of_its_own(open_site: OpenSite) -> None:
    laptop, vm = open_site("laptop"), open_site("vm")
    assert laptop.backbone.set_source(_source("i-1"), expected=None) is True
    assert vm.backbone.source_of() is None  # laptop's record is not vm's
    assert vm.backbone.set_source(_source("i-2"), expected="i-1") is False
    assert vm.backbone.set_source(_source("i-2"), expected=None) is True
    assert (_source_of(laptop).instance, _source_of(vm).instance) == ("i-1", "i-2")
    assert vm.backbone.set_source(_source("i-3"), expected="i-2") is True
    assert _source_of(laptop).instance == "i-1"  # a take-over of one site leaves the others alone


# -- the fleet: job leases and runs, the registry, approvals by category, sync health, the digest,
# -- archiving. A shared Convex holds every test's sites and runs: each test picks out its own.

LEASE_MS = 60_000


def _job() -> str:
    """A job name of this test's own: runs are listed across every site."""
    return f"job-{uuid.uuid4().hex[:8]}"


def test_two_sites_racing_for_a_slot_one_runs_and_the_other_skips(open_site: OpenSite) -> None:
    laptop, vm = open_site("laptop"), open_site("vm")
    job, slot = _job(), "2026-11-21T10:05:00Z"
    barrier = threading.Barrier(2)
    claims: dict[str, Claim] = {}

    def claim(s: Opened) -> None:
        barrier.wait(30)
        claims[s.site] = s.backbone.claim_job(job, slot, LEASE_MS)

    threads = [threading.Thread(target=claim, args=(s,)) for s in (laptop, vm)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(claims.values()) == sorted([Claim.TAKE, Claim.SKIP])
    (holder,) = [s for s in (laptop, vm) if claims[s.site] is Claim.TAKE]
    other = vm if holder is laptop else laptop
    assert holder.backbone.claim_job(job, slot, LEASE_MS) is Claim.KEEP  # a retry, a restart in the slot
    assert other.backbone.claim_job(job, slot, LEASE_MS) is Claim.SKIP
    (running,) = laptop.backbone.job_runs(job)
    assert (running.site, running.slot, running.outcome, running.ended_at) == (holder.site, slot, "running", None)
    holder.backbone.finish_job(job, slot, "ok", "3 agents went offline")
    (done,) = vm.backbone.job_runs(job)
    assert (done.site, done.outcome, done.summary) == (holder.site, "ok", "3 agents went offline")
    assert done.ended_at is not None
    assert done.started_at <= done.ended_at


def test_an_expired_holder_is_taken_over_once_and_its_run_abandoned(open_site: OpenSite) -> None:
    laptop, vm, box = open_site("laptop"), open_site("vm"), open_site("box")
    job, slot = _job(), "2026-11-21T06:00:00Z"
    assert laptop.backbone.claim_job(job, slot, 0) is Claim.TAKE  # a lease that expires at once
    time.sleep(0.005)  # the backbones' clocks count milliseconds
    assert vm.backbone.claim_job(job, slot, LEASE_MS) is Claim.TAKE_OVER
    assert box.backbone.claim_job(job, slot, LEASE_MS) is Claim.SKIP  # taken over once
    assert laptop.backbone.claim_job(job, slot, LEASE_MS) is Claim.SKIP
    runs = {r.site: r for r in box.backbone.job_runs(job)}
    assert (runs[vm.site].outcome, runs[laptop.site].outcome) == ("running", "abandoned")
    assert runs[laptop.site].ended_at == runs[vm.site].started_at
    vm.backbone.finish_job(job, slot, "ok", "done")
    assert [(r.site, r.outcome) for r in laptop.backbone.job_runs(job)] == [
        (vm.site, "ok"),
        (laptop.site, "abandoned"),
    ]


def test_a_finished_slot_is_never_run_again(open_site: OpenSite) -> None:
    laptop, vm = open_site("laptop"), open_site("vm")
    job, slot = _job(), "2026-11-22T03:00:00Z"
    assert laptop.backbone.claim_job(job, slot, 0) is Claim.TAKE
    laptop.backbone.finish_job(job, slot, "failed", "OSError: disk full")  # whatever the outcome
    time.sleep(0.005)  # on purpose: the lease expires by the backbones' millisecond clocks, so only "finished" skips
    assert vm.backbone.claim_job(job, slot, LEASE_MS) is Claim.SKIP  # though the lease has expired
    assert laptop.backbone.claim_job(job, slot, LEASE_MS) is Claim.SKIP
    assert laptop.backbone.claim_job(job, "2026-11-29T03:00:00Z", LEASE_MS) is Claim.TAKE  # the next slot
    assert [(r.slot, r.outcome, r.summary) for r in vm.backbone.job_runs(job)] == [
        ("2026-11-29T03:00:00Z", "running", ""),
        (slot, "failed", "OSError: disk full"),
    ]
    with pytest.raises(BackboneRejected):
        laptop.backbone.finish_job(job, slot, "running", "not an end")


def test_runs_are_listed_newest_first_with_who_ran_them(open_site: OpenSite) -> None:
    laptop, vm = open_site("laptop"), open_site("vm")
    index, other = _job(), _job()
    laptop.backbone.record_run(index, "s1", "ok", "caught up", 1_000, 2_000)
    vm.backbone.record_run(index, "s1", "failed", "StoreUnavailable: refused", 3_000, 4_000)
    laptop.backbone.record_run(index, "s2", "ok", "caught up", 5_000, 6_000)
    vm.backbone.record_run(other, "s1", "ok", "", 7_000, 8_000)
    assert [(r.site, r.slot, r.outcome, r.started_at, r.ended_at) for r in vm.backbone.job_runs(index)] == [
        (laptop.site, "s2", "ok", 5_000, 6_000),
        (vm.site, "s1", "failed", 3_000, 4_000),
        (laptop.site, "s1", "ok", 1_000, 2_000),
    ]
    assert [r.slot for r in laptop.backbone.job_runs(index, limit=2)] == ["s2", "s1"]
    everything = [r for r in laptop.backbone.job_runs(None, 500) if r.job in (index, other)]
    assert [(r.job, r.started_at) for r in everything] == [(other, 7_000)] + [(index, t) for t in (5_000, 3_000, 1_000)]


def _beat(**changes: Any) -> SiteBeat:
    values: dict[str, Any] = {
        "version": "0.1.0",
        "host": "laptop.lan",
        "pid": 4242,
        "lag_s": 1.5,
        "backlog": 3,
        "index_state": "ready",
        "quarantined": 2,
        "conflicts": 1,
        "redacted": 4,
    }
    return SiteBeat(**{**values, **changes})


def _sites(s: Opened) -> dict[str, SiteState]:
    return {state.site: state for state in s.backbone.sites() if s.ours(state.site)}


def test_site_heartbeats_the_fleet_view_and_staleness(open_site: OpenSite) -> None:
    laptop, vm = open_site("laptop"), open_site("vm")
    before = _now_ms()
    laptop.backbone.heartbeat_site(_beat())
    vm.backbone.push([item(7)], cursor=7)
    fleet = _sites(vm)
    assert set(fleet) == {laptop.site, vm.site}
    mine = fleet[laptop.site]
    assert mine.last_heartbeat is not None
    assert before <= mine.last_heartbeat <= _now_ms()
    assert (mine.online, mine.version, mine.host, mine.pid, mine.lag_s, mine.backlog, mine.index_state) == (
        True,
        "0.1.0",
        "laptop.lan",
        4242,
        1.5,
        3,
        "ready",
    )
    assert (mine.quarantined, mine.conflicts, mine.cursor, mine.last_sync_at, mine.health) == (2, 1, None, None, None)
    assert mine.redacted == 4
    cursor = vm.backbone.site_cursor()
    assert cursor is not None
    synced = fleet[vm.site]  # a site that synced but never beat: known, not online
    assert (synced.online, synced.last_heartbeat, synced.cursor, synced.last_sync_at) == (
        False,
        None,
        7,
        cursor.last_synced_at,
    )
    assert (synced.quarantined, synced.conflicts) == (0, 0)

    laptop.backbone.heartbeat("coder", "claude-code", "cli", 5_000)
    laptop.backbone.heartbeat("coder", "claude-code")  # a hook's beat: keeps what the episodes told
    laptop.backbone.heartbeat("coder", "claude-code", None, 4_000)  # never goes back
    vm.backbone.heartbeat("planner", "agentic-flow")
    (coder,) = laptop.backbone.agents()
    assert (coder.site, coder.agent_name, coder.interface, coder.last_episode_at) == (
        laptop.site,
        "coder",
        "cli",
        5_000,
    )
    everyone = [a for a in vm.backbone.agents(all_sites=True) if laptop.ours(a.site)]
    assert [(a.site, a.agent_name, a.status) for a in everyone] == [
        (laptop.site, "coder", "online"),
        (vm.site, "planner", "online"),
    ]
    assert [a.agent_name for a in vm.backbone.agents()] == ["planner"]

    assert laptop.sweeps.mark_stale(_now_ms() + 60_000, STALE_AFTER_MS) == 0
    assert laptop.sweeps.mark_stale(_now_ms() + STALE_AFTER_MS + 1_000, STALE_AFTER_MS) == 3  # two agents, a site
    assert _sites(vm)[laptop.site].online is False
    assert {a.status for a in vm.backbone.agents(all_sites=True) if laptop.ours(a.site)} == {"offline"}
    laptop.backbone.heartbeat_site(_beat(quarantined=0))
    again = _sites(laptop)[laptop.site]
    assert (again.online, again.quarantined) == (True, 0)


def test_a_site_beat_carries_its_agents_the_silent_go_offline_and_the_long_silent_are_pruned(
    open_site: OpenSite,
) -> None:
    laptop, vm = open_site("laptop"), open_site("vm")
    now, day = _now_ms(), 86_400_000
    laptop.backbone.heartbeat_site(
        _beat(),
        [
            AgentBeat("coder", "claude-code", now - 1_000, "cli", now - 1_000),  # a new episode
            AgentBeat("cc-sub-1", "claude-code", now - STALE_AFTER_MS - 60_000),  # its hook, 4 min ago
            AgentBeat("cc-sub-0", "claude-code", now - 40 * day, None, now - 40 * day),  # an old episode
            AgentBeat("ahead", "claude-code", now + 3_600_000),  # a clock ahead: never seen after now
        ],
    )
    vm.backbone.heartbeat_site(_beat(), [AgentBeat("planner", "agentic-flow", now)])
    laptop.backbone.heartbeat_site(_beat(), [AgentBeat("coder", "claude-code", now - 60_000)])  # older: moves nothing
    seen = {a.agent_name: a for a in laptop.backbone.agents()}
    assert {n: (a.last_heartbeat, a.interface, a.last_episode_at) for n, a in seen.items() if n != "ahead"} == {
        "coder": (now - 1_000, "cli", now - 1_000),
        "cc-sub-1": (now - STALE_AFTER_MS - 60_000, None, None),
        "cc-sub-0": (now - 40 * day, None, now - 40 * day),
    }
    assert now <= seen["ahead"].last_heartbeat <= _now_ms()

    # The daemon beats (its site is online), yet the agents silent past stale_after go offline.
    assert laptop.sweeps.mark_stale(now, STALE_AFTER_MS) == 2
    assert _sites(vm)[laptop.site].online
    after = {a.agent_name: a.status for a in laptop.backbone.agents()}
    assert after == {"ahead": "online", "cc-sub-0": "offline", "cc-sub-1": "offline", "coder": "online"}
    assert {a.agent_name: liveness(a.last_heartbeat, now, STALE_AFTER_MS) for a in laptop.backbone.agents()} == after

    # Past the retention an agent leaves the registry; the offline ones within it stay, last seen kept.
    assert laptop.sweeps.prune_agents(now, 30 * day) == 1
    left = [(a.agent_name, a.status, a.last_heartbeat) for a in laptop.backbone.agents()][1:]
    assert left == [("cc-sub-1", "offline", now - STALE_AFTER_MS - 60_000), ("coder", "online", now - 1_000)]
    assert [a.agent_name for a in vm.backbone.agents()] == ["planner"]


def test_approvals_expire_by_category_and_a_zero_minute_category_is_approved_at_once(open_site: OpenSite) -> None:
    laptop = open_site("laptop")
    far = _now_ms() + 86_400_000

    def create(category: str, timeout_ms: int | None = None) -> str:
        return laptop.backbone.create_approval(
            agent_name="coder",
            action_type=category,
            priority="normal",
            reviewers=[],
            expires_at=far,
            timeout_ms=timeout_ms,
        )

    research = create("research")  # 0 minutes in the design's table
    chosen = create("deploy", timeout_ms=0)  # 0 under the caller's policy
    message, destructive, other = create("send_message"), create("destructive"), create("deploy")
    by_id = {a.approval_id: a for a in laptop.backbone.approvals()}
    for approval_id in (research, chosen):
        assert (by_id[approval_id].status, by_id[approval_id].resolved_by) == ("approved", "policy")
    assert {by_id[i].status for i in (message, destructive, other)} == {"pending"}

    minute = 60_000
    timeouts = {"send_message": 60 * minute, "destructive": 30 * minute}
    now = _now_ms()
    expired = laptop.sweeps.expire_approvals
    assert expired(now + 29 * minute, timeouts, 45 * minute) == 0
    assert expired(now + 30 * minute + 1_000, timeouts, 45 * minute) == 1
    assert [a.approval_id for a in laptop.backbone.approvals("expired")] == [destructive]
    assert expired(now + 45 * minute + 1_000, timeouts, 45 * minute) == 1  # not in the table: the default
    assert expired(now + 60 * minute + 1_000, timeouts, 45 * minute) == 1
    assert sorted(a.approval_id for a in laptop.backbone.approvals("expired")) == sorted([destructive, other, message])
    assert expired(now + 600 * minute, timeouts, 45 * minute) == 0
    with pytest.raises(BackboneConflict):
        laptop.backbone.resolve_approval(message, "approved", "alice")


def test_external_api_under_ten_cents_and_code_commit_with_passing_tests_are_approved_at_once(
    open_site: OpenSite,
) -> None:
    laptop = open_site("laptop")
    far = _now_ms() + 86_400_000

    def create(category: str, cost_usd: float | None = None, tests_passed: bool | None = None) -> str:
        return laptop.backbone.create_approval(
            agent_name="coder",
            action_type=category,
            priority="normal",
            reviewers=["alice"],
            expires_at=far,
            cost_usd=cost_usd,
            tests_passed=tests_passed,
        )

    cheap, dear, unpriced = create("external_api", 0.05), create("external_api", 0.50), create("external_api")
    passed, failed = create("code_commit", tests_passed=True), create("code_commit", tests_passed=False)
    untested = create("code_commit")
    by_id = {a.approval_id: a for a in laptop.backbone.approvals()}
    for approval_id in (cheap, passed):
        assert (by_id[approval_id].status, by_id[approval_id].resolved_by) == ("approved", "policy")
    for approval_id in (dear, unpriced, failed, untested):
        assert (by_id[approval_id].status, by_id[approval_id].resolved_by) == ("pending", None)
    # What the request said of itself is kept, and read back as it was said.
    assert [(by_id[i].cost_usd, by_id[i].tests_passed) for i in (cheap, dear, unpriced, passed, failed)] == [
        (0.05, None),
        (0.50, None),
        (None, None),
        (None, True),
        (None, False),
    ]
    assert [a.approval_id for a in laptop.backbone.approvals("pending")] == [dear, unpriced, failed, untested]
    # Still a person's to resolve: the policy approved nothing else.
    assert laptop.backbone.resolve_approval(dear, "approved", "alice") == "approved"
    with pytest.raises(BackboneConflict):
        laptop.backbone.resolve_approval(cheap, "rejected", "alice")  # the policy settled it
    for bad in (-0.01, float("nan"), float("inf")):
        with pytest.raises(BackboneRejected):
            create("external_api", bad)


def test_sync_health_goes_down_after_silence_and_up_again_after_a_sync(open_site: OpenSite) -> None:
    laptop, vm = open_site("laptop"), open_site("vm")
    silent_after = 1_000  # ms: generous, so that a slow machine's calls stay inside it
    laptop.backbone.push([item(1)], cursor=1)
    vm.backbone.push([item(1)], cursor=1)
    start = _now_ms()
    assert laptop.sweeps.sync_health(_now_ms(), silent_after) == []  # first judged healthy: no news
    time.sleep(1.2)  # on purpose: silent_after passes on both servers' clocks (Convex's is not ours to set)
    went_down = laptop.sweeps.sync_health(_now_ms(), silent_after)
    assert [(t.site, t.state) for t in went_down] == [(laptop.site, "down"), (vm.site, "down")]
    assert all(t.silent_for_s >= 1.0 for t in went_down)
    assert laptop.sweeps.sync_health(_now_ms(), silent_after) == []  # unchanged: nothing
    laptop.backbone.push([item(2)], cursor=2)
    (came_back,) = laptop.sweeps.sync_health(_now_ms(), silent_after)
    assert (came_back.site, came_back.state) == (laptop.site, "up")
    assert came_back.silent_for_s < 1.0
    seen = [(t.site, t.state) for t in vm.backbone.health_transitions(start) if laptop.ours(t.site)]
    assert seen == [(laptop.site, "down"), (vm.site, "down"), (laptop.site, "up")]
    assert [t for t in vm.backbone.health_transitions(came_back.at + 1) if laptop.ours(t.site)] == []
    fleet = _sites(laptop)
    assert (fleet[laptop.site].health, fleet[vm.site].health) == ("up", "down")


def test_the_digest_figures_on_a_known_set_of_episodes(open_site: OpenSite) -> None:
    laptop, vm = open_site("laptop"), open_site("vm")
    now = _now_ms()
    day = datetime.fromtimestamp(now / 1000, UTC).strftime("%Y-%m-%d")
    midnight = int(datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC).timestamp())  # seconds

    def at(minute: int) -> int:
        return midnight + minute * 60

    laptop.backbone.push(
        [
            item(1, at=at(1), task="fix", tags=("py", "bug"), success=True, reward=1.0),
            item(2, at=at(2), task="fix", tags=("py",), success=False, reward=0.0),
            item(3, at=at(3), task="test", tags=("py", "py"), success=True, reward=None),
            item(4, at=at(4), task="plan", tags=(), success=True, reward=0.25, agent=None),
            item(5, at=at(-1), task="the day before"),
            item(6, at=at(24 * 60), task="the day after"),
        ],
        cursor=6,
    )
    vm.backbone.push([item(1, at=at(5), task="plan", tags=("ops",), success=False, reward=0.5, agent="planner")], 1)
    laptop.backbone.heartbeat_site(_beat(quarantined=3, conflicts=2, redacted=5))
    laptop.sweeps.sync_health(_now_ms(), 3_600_000)  # both judged "up"
    for category in ("digest-waits", "digest-quick"):
        laptop.backbone.create_approval(
            agent_name="coder", action_type=category, priority="low", reviewers=[], expires_at=now + 86_400_000
        )
    laptop.sweeps.expire_approvals(_now_ms() + 5, {"digest-quick": 1}, 3_600_000)

    built = laptop.sweeps.build_digest(day, now)
    since = midnight * 1000
    assert {k: built[k] for k in ("day", "since", "until", "builtAt", "truncated")} == {
        "day": day,
        "since": since,
        "until": since + 86_400_000,
        "builtAt": now,
        "truncated": False,
    }
    entries = {e["site"]: e for e in built["sites"] if laptop.ours(e["site"])}
    laptop_cursor, vm_cursor = laptop.backbone.site_cursor(), vm.backbone.site_cursor()
    assert laptop_cursor is not None
    assert vm_cursor is not None
    assert entries == {
        laptop.site: {
            "site": laptop.site,
            "episodes": 4,
            "successRate": 0.75,
            "meanReward": 1.25 / 3,
            "topTasks": ["fix", "plan", "test"],
            "topTags": ["py", "bug"],
            "agents": [
                {
                    "agent": "coder",
                    "episodes": 3,
                    "successRate": 2 / 3,
                    "meanReward": 0.5,
                    "topTasks": ["fix", "test"],
                    "topTags": ["py", "bug"],
                },
                {
                    "agent": "unknown",
                    "episodes": 1,
                    "successRate": 1.0,
                    "meanReward": 0.25,
                    "topTasks": ["plan"],
                    "topTags": [],
                },
            ],
            "health": "up",
            "lastSyncAt": laptop_cursor.last_synced_at,
            "quarantined": 3,
            "conflicts": 2,
            "redacted": 5,
            "approvals": {"pending": 1, "expired": 1},
        },
        vm.site: {
            "site": vm.site,
            "episodes": 1,
            "successRate": 0.0,
            "meanReward": 0.5,
            "topTasks": ["plan"],
            "topTags": ["ops"],
            "agents": [
                {
                    "agent": "planner",
                    "episodes": 1,
                    "successRate": 0.0,
                    "meanReward": 0.5,
                    "topTasks": ["plan"],
                    "topTags": ["ops"],
                }
            ],
            "health": "up",
            "lastSyncAt": vm_cursor.last_synced_at,
            "quarantined": 0,
            "conflicts": 0,
            "redacted": 0,
            "approvals": {"pending": 0, "expired": 0},
        },
    }
    assert vm.backbone.digest(day) == built  # stored, and any site reads it
    rebuilt = laptop.sweeps.build_digest(day, now + 1)  # building again replaces it
    assert laptop.backbone.digest(day) == rebuilt
    assert rebuilt["builtAt"] == now + 1
    assert laptop.backbone.digest("1999-01-01") is None
    with pytest.raises(BackboneRejected):
        laptop.backbone.digest("yesterday")
    # Today's, on demand, with a site's own credential (`memsync digest --date <today>`): built now
    # from the same episodes, stored in the scheduled one's place; only today.
    today = vm.backbone.build_today_digest(day)
    assert (today["day"], today["episodes"], today["sites"]) == (day, built["episodes"], built["sites"])
    assert today["builtAt"] >= now
    assert laptop.backbone.digest(day) == today
    with pytest.raises((ValueError, BackboneRejected)):
        vm.backbone.build_today_digest("1999-01-01")


WEEK_S = 7 * 86400


def _split(
    sites: Sequence[Opened], keys: set[tuple[str, str]]
) -> tuple[set[tuple[str, str]], dict[tuple[str, str], dict[str, Any]]]:
    """(the hot keys, the archived episodes by key) among ``keys``, each site read by its own
    client (on Convex a site's secret reads only its own); asserts archive + hot = all, each once."""
    hot: list[tuple[str, str]] = []
    archived: list[dict[str, Any]] = []
    for opened in sites:
        hot += [(str(e["sourceSite"]), str(e["sourceId"])) for e in opened.backbone.episodes(opened.site)]
        archived += list(opened.backbone.archived_episodes(opened.site))
    hot_keys = {k for k in hot if k in keys}
    cold = {(str(e["sourceSite"]), str(e["sourceId"])): e for e in archived if (e["sourceSite"], e["sourceId"]) in keys}
    assert len(hot_keys) == sum(k in keys for k in hot), "a hot episode listed twice"
    assert len(cold) == sum((e["sourceSite"], e["sourceId"]) in keys for e in archived), "archived twice"
    assert not hot_keys & set(cold), "hot and archived at once"
    assert hot_keys | set(cold) == keys, "an episode is neither hot nor archived"
    return hot_keys, cold


def test_the_cold_archive_holds_what_left_the_hot_table_and_archive_plus_hot_is_everything(
    open_site: OpenSite,
) -> None:
    laptop, vm = open_site("laptop"), open_site("vm")
    start = _feed_end(laptop.backbone)
    # ts in 1970 (older than anything another test pushes into a shared Convex): two episodes in
    # each of the ISO weeks 1970-W01, W02 and W03, and one of today.
    at = {i: 1_000 + ((i - 1) // 2) * WEEK_S for i in range(1, 7)}
    laptop.backbone.push([item(i, at=at[i], output=f"secret-free text {i}") for i in at] + [item(7)], cursor=7)
    vm.backbone.push([item(1, at=1_000), item(2, at=1_001)], cursor=2)
    everything = {(laptop.site, str(i)) for i in range(1, 8)} | {(vm.site, "1"), (vm.site, "2")}
    _split([laptop, vm], everything)

    cutoff = (1_000 + 2 * WEEK_S) * 1000  # weeks W01 and W02
    assert laptop.sweeps.archive_older_than(cutoff, 1000) >= 6
    hot, cold = _split([laptop, vm], everything)
    assert hot == {(laptop.site, k) for k in ("5", "6", "7")}  # vm's two are archived too
    assert cold[(laptop.site, "3")]["output"] == "secret-free text 3"  # the whole episode, from the file
    assert all(e["archived"] is True for e in cold.values())
    assert tuple(cold[(laptop.site, "1")]) == (*EXPORT_FIELDS, "archived")
    files = {f.week: f for f in laptop.backbone.archive_files(laptop.site)}
    assert sorted(files) == ["1970-W01", "1970-W02"]
    assert (files["1970-W01"].count, files["1970-W01"].first_id, files["1970-W01"].last_id) == (2, "1", "2")
    assert [f.week for f in vm.backbone.archive_files(vm.site)] == ["1970-W01"]
    later = laptop.backbone.archive_files(laptop.site, since_ms=(1_000 + WEEK_S) * 1000)
    assert [f.week for f in later] == ["1970-W02"]
    assert all(c.problem is None for c in laptop.backbone.verify_archive(laptop.site))
    # Any site's index may fetch any site's archived records (it embeds those it never saw).
    fetched = vm.backbone.archived_records([(laptop.site, "3"), (laptop.site, "5"), (laptop.site, "nope")])
    assert list(fetched) == [(laptop.site, "3")]
    assert fetched[(laptop.site, "3")]["output"] == "secret-free text 3"
    run = laptop.backbone.last_archive_run()
    assert run is not None
    assert run.archived >= 6

    # The keys stay: the same episodes pushed again are unchanged (not pushed again every pass) ...
    again = laptop.backbone.push([item(i, at=at[i], output=f"secret-free text {i}") for i in (1, 2, 3, 4)], cursor=7)
    assert {r.outcome for r in again} == {Outcome.UNCHANGED}
    # ... and an edited one is hot again with its new text.
    (edited,) = laptop.backbone.push([item(1, at=at[1], output="edited")], cursor=7)
    assert edited.outcome is Outcome.UPDATED
    hot, cold = _split([laptop, vm], everything)
    assert (laptop.site, "1") in hot

    # Archiving is a change: every index marks the point archived (and keeps it).
    feed = {c.source_id: c for c in _feed(laptop.backbone, start) if c.site == laptop.site}
    assert feed["3"].archived is True
    assert feed["3"].episode is None
    assert feed["1"].archived is False
    assert feed["1"].episode is not None

    # The edited episode is archived again into its week's file, which is rewritten.
    laptop.sweeps.archive_older_than(cutoff, 1000)
    hot, cold = _split([laptop, vm], everything)
    assert cold[(laptop.site, "1")]["output"] == "edited"
    assert {f.week: f.count for f in laptop.backbone.archive_files(laptop.site)} == {"1970-W01": 2, "1970-W02": 2}

    # Forgetting an archived episode rewrites its file without it; the key stays refused.
    assert laptop.backbone.forget("2") == Forgotten(True, "1970-W01")
    everything.discard((laptop.site, "2"))
    hot, cold = _split([laptop, vm], everything)
    assert {f.week: f.count for f in laptop.backbone.archive_files(laptop.site)} == {"1970-W01": 1, "1970-W02": 2}
    weeks = [(laptop.site, "1970-W01"), (laptop.site, "1970-W02")]
    counts = laptop.backbone.archived_counts(laptop.site)
    assert counts is not None
    assert [counts.get(w, 0) for w in weeks] == [1, 2]
    (refused,) = laptop.backbone.push([item(2, at=at[2])], cursor=7)
    assert (refused.outcome, refused.reason) == (Outcome.REJECTED, "forgotten")
    assert all(c.problem is None for c in laptop.backbone.verify_archive(laptop.site))

    # Restore brings them back, once; the files stay.
    assert laptop.backbone.restore_archive(laptop.site) == 3
    assert laptop.backbone.restore_archive(laptop.site) == 0
    hot, cold = _split([laptop, vm], everything)
    assert not {k for k in cold if k[0] == laptop.site}
    restored = {e["sourceId"]: e for e in laptop.backbone.episodes(laptop.site)}
    assert restored["1"]["output"] == "edited"
    assert restored["3"]["output"] == "secret-free text 3"
    assert tuple(restored["3"]) == EXPORT_FIELDS
    assert [f.week for f in laptop.backbone.archive_files(laptop.site)] == ["1970-W01", "1970-W02"]
    # The files keep their counts; what is archived now is none of them (archive list shows both).
    assert [f.count for f in laptop.backbone.archive_files(laptop.site)] == [1, 2]
    counts = laptop.backbone.archived_counts(laptop.site)
    assert counts is not None
    assert [counts.get(w, 0) for w in weeks] == [0, 0]


def test_every_stored_episode_reads_back_with_its_type_entities_and_task_key(open_site: OpenSite) -> None:
    """The type, the entities and the task key are functions of the stored fields (no column, no
    migration): what either backbone gives back yields the same ones as the episode that was pushed,
    a type given by ``metadata.memory_type`` or a ``type:`` tag staying given."""
    s = open_site("laptop")
    items = [
        item(1, task="Pick the queue", output="We chose Redis streams", tags=("x",), meta={"memory_type": "decision"}),
        item(2, task="Never run migrations by hand", output="ok", tags=("type:warning",), meta={}),
        item(
            3,
            task="Fix E11000 duplicate key in src/users/repo.py",
            output="Fixed: the upsert in UserRepository.save now uses JIRA-4521's unique index",
            tags=(),
        ),
    ]
    s.backbone.push(items, cursor=3)
    stored = {e["sourceId"]: e for e in s.backbone.episodes(s.site)}
    assert sorted(stored) == ["1", "2", "3"]
    got = {
        k: (memory_type(e).name, memory_type(e).given, entities(e), task_key(e.get("task"))) for k, e in stored.items()
    }
    pushed = {
        i.source_id: (
            memory_type(i.fields).name,
            memory_type(i.fields).given,
            entities(i.fields),
            task_key(i.fields.get("task")),
        )
        for i in items
    }
    assert got == pushed
    assert [got[k][:2] for k in ("1", "2")] == [("decision", True), ("warning", True)]
    assert got["3"][:2] == ("error_fix", False)
    assert {"e11000", "jira-4521", "src/users/repo.py"} <= set(got["3"][2])
    assert got["3"][3] == task_key("fix e11000 duplicate key in src/users/repo.py.")
