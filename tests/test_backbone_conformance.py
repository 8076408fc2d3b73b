"""One conformance suite, run against the embedded hub and against Convex (the real cloud_functions
in the local Convex server): both must give the same results for the same calls."""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import AgentProcess, episode, expected_episode, read_agentdb_rows
from convex_fixtures import LocalConvex

from sync.agentdb import AgentDBReader
from sync.backbone.base import Backbone, Change, ChangeFeed, Outcome, PointRecord, PushItem, SourceRecord
from sync.backbone.convex import ConvexBackbone
from sync.backbone.hub import HubBackbone
from sync.engine import SyncEngine
from sync.episode import EXPORT_FIELDS, Attribution, Episode, convert
from sync.errors import BackboneConflict, BackboneNotFound, BackboneRejected
from sync.sidecar import Sidecar


@dataclass
class Opened:
    backbone: Backbone
    # The periodic sweeps, as of a given time: the hub's own methods, or on Convex the cron's
    # internal functions run with the admin key.
    sweep_stale: Callable[[int], object]
    sweep_approvals: Callable[[int], object]

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
            return Opened(hub, hub.mark_stale, hub.expire_approvals)
        convex: LocalConvex = request.getfixturevalue("local_convex")
        site = f"{name}-{suffix}"
        if site not in registered:
            registered[site] = convex.register_site(site)
        client = ConvexBackbone(convex.url, site, registered[site])
        opened.append(client)
        return Opened(
            client,
            lambda now: convex.admin("mutation", "agents:markStale", {"now": now}),
            lambda now: convex.admin("mutation", "approvals:expirePending", {"now": now}),
        )

    yield make
    for backbone in opened:
        backbone.close()


def item(local_id: int, *, task: str = "t", output: str = "out", suffix: str = "") -> PushItem:
    row = {
        "id": local_id,
        "ts": 1735689600 + local_id,
        "created_at": 1735689600 + local_id,
        "session_id": b"s",
        "task": task.encode(),
        "input": f"in {local_id}".encode(),
        "output": output.encode(),
        "critique": None,
        "reward": 0.5,
        "success": 1,
        "latency_ms": 10,
        "tokens_used": 20,
        "tags": b'["a"]',
        "metadata": b'{"agent_name": "coder", "_private": 1}',
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
    return SyncEngine(reader=AgentDBReader(agentdb), sidecar=sidecar, backbone=s.backbone)


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
    laptop.sweep_stale(_now_ms() + 60_000)
    assert laptop.backbone.agents()[0].status == "online"
    laptop.sweep_stale(_now_ms() + 3 * 60_000 + 1_000)  # three minutes without a heartbeat
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
    with pytest.raises(BackboneNotFound):
        vm.backbone.resolve_approval(first, "rejected", "mallory")  # another site's approval
    soon = laptop.backbone.create_approval(
        agent_name="coder",
        action_type="rm -rf",
        priority="critical",
        reviewers=[],
        expires_at=_now_ms() + 60_000,
    )
    laptop.sweep_approvals(_now_ms() + 61_000)
    assert [a.approval_id for a in laptop.backbone.approvals("expired")] == [soon]
    with pytest.raises(BackboneConflict):
        laptop.backbone.resolve_approval(soon, "approved", "alice")
    with pytest.raises(BackboneRejected):
        laptop.backbone.create_approval(
            agent_name="coder", action_type="x", priority="urgent!", reviewers=[], expires_at=later
        )
    assert [a.status for a in laptop.backbone.approvals()] == ["approved", "expired"]


def test_a_job_slot_has_exactly_one_owner(open_site: OpenSite) -> None:
    laptop, vm = open_site("laptop"), open_site("vm")
    slot = f"2026-11-21T10:05-{uuid.uuid4().hex[:6]}"
    assert laptop.backbone.claim_slot("qdrant-episode-sync", slot) is True
    assert laptop.backbone.claim_slot("qdrant-episode-sync", slot) is True  # a retry still wins
    assert vm.backbone.claim_slot("qdrant-episode-sync", slot) is False
    assert vm.backbone.claim_slot("daily-digest", slot) is True


def test_forget_deletes_for_good(open_site: OpenSite) -> None:
    s = open_site("laptop")
    s.backbone.push([item(1), item(2)], cursor=2)
    assert s.backbone.forget("1") is True
    assert [e["sourceId"] for e in s.backbone.episodes(s.site)] == ["2"]
    (again,) = s.backbone.push([item(1)], cursor=2)
    assert (again.outcome, again.reason) == (Outcome.REJECTED, "forgotten")
    assert s.backbone.forget("1") is False
    assert [e["sourceId"] for e in s.backbone.episodes(s.site)] == ["2"]


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
