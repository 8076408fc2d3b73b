"""Tier: e2e. The Convex backbone against the local Convex (the real cloud_functions): secrets,
paging, the coordination calls and the cold archive as the functions expect them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import memsync, write_config
from convex_fixtures import LocalConvex

from sync.backbone.base import Change, Forgotten, PointRecord, PushItem, SiteBeat
from sync.backbone.convex import MAX_PAGE, ConvexBackbone, ConvexOperator
from sync.episode import EXPORT_FIELDS, Attribution, Episode, convert
from sync.errors import (
    BackboneAuthError,
    BackboneRejected,
    MemsyncError,
)


def test_wrong_secrets_and_other_sites_are_refused(local_convex: LocalConvex) -> None:
    secret = local_convex.register_site("auth-a")
    local_convex.register_site("auth-b")
    for site, key in (("auth-a", "wrong" + secret[5:]), ("auth-a", ""), ("auth-b", secret), ("nobody", secret)):
        client = ConvexBackbone(local_convex.url, site, key)
        with pytest.raises(BackboneAuthError) as raised:
            client.ping()
        assert secret not in str(raised.value)
        client.close()
    client = ConvexBackbone(local_convex.url, "auth-a", secret)
    client.ping()
    client.close()


def test_the_site_secret_never_appears_in_logs_status_or_errors(
    local_convex: LocalConvex, make_agentdb: pytest.FixtureRequest, tmp_path: Path
) -> None:
    secret = local_convex.register_site("quiet")
    agentdb = make_agentdb(30)  # type: ignore[operator]
    site = write_config(
        tmp_path / "sites",
        "quiet",
        agentdb,
        tmp_path / "unused-hub.db",
        kind="convex",
        backbone=f'url = "{local_convex.url}"\n',
    )
    good = {"MEMSYNC_BACKBONE__SITE_SECRET": secret}
    synced = memsync("sync", "--once", "--config", str(site.config), env=good)
    assert synced.returncode == 0, synced.stderr
    assert "30 new" in " ".join(synced.stderr.split())
    status = memsync("status", "--json", "--config", str(site.config), env=good)
    assert json.loads(status.stdout)["backbone"]["reachable"] is True
    wrong = "0" * len(secret)
    refused = memsync("sync", "--once", "--config", str(site.config), env={"MEMSYNC_BACKBONE__SITE_SECRET": wrong})
    assert refused.returncode == 78, refused.stderr
    assert "refused this site's credentials" in " ".join(refused.stderr.split())
    for done in (synced, status, refused):
        for text in (done.stdout, done.stderr):
            assert secret not in text
            assert wrong not in text


def _item(local_id: int, output: str = "out", ts_s: int | None = None) -> PushItem:
    ts = 1735689600 + local_id if ts_s is None else ts_s
    row = {
        "id": local_id,
        "ts": ts,
        "created_at": ts,
        "session_id": b"s",
        "task": b"t",
        "input": f"in {local_id}".encode(),
        "output": output.encode(),
        "critique": None,
        "reward": 0.5,
        "success": 1,
        "latency_ms": 10,
        "tokens_used": 20,
        "tags": b'["a"]',
        "metadata": b'{"k": 1}',
    }
    ep = convert(row, Attribution())
    assert isinstance(ep, Episode)
    return PushItem(str(local_id), local_id, ep.identity_hash, ep.content_hash, ep.fields, ep.body)


def test_point_records_go_500_a_call_and_a_page_asks_for_500_at_most(
    local_convex: LocalConvex, request: pytest.FixtureRequest
) -> None:
    client = ConvexBackbone(local_convex.url, "points-a", local_convex.register_site("points-a"))
    request.addfinalizer(client.close)
    start = 0  # the feed's end so far: the local Convex is shared by the session's tests
    while page := client.changes(start, MAX_PAGE):
        start = page[-1].seq
    items = [_item(i) for i in range(1, 4)]
    client.push(items, cursor=3)
    # More than one call's worth: one call of 1,203 items would be refused as TOO_LARGE.
    records = [PointRecord("points-a", it.source_id, f"p-{it.source_id}", it.content_hash) for it in items] * 401
    assert len(records) > 2 * MAX_PAGE
    assert client.record_point_ids(records) == len(records)
    assert client.record_point_ids([]) == 0
    page = client.changes(start, 10_000)  # more than Convex's page: asks for 500, not an error
    assert [(c.site, c.source_id, c.point_id) for c in page] == [("points-a", i, f"p-{i}") for i in "123"]


def test_the_feed_and_points_need_the_secret(local_convex: LocalConvex, request: pytest.FixtureRequest) -> None:
    secret = local_convex.register_site("points-b")
    wrong = ConvexBackbone(local_convex.url, "points-b", "0" * len(secret))
    request.addfinalizer(wrong.close)
    with pytest.raises(BackboneAuthError):
        wrong.changes(0, 10)
    with pytest.raises(BackboneAuthError):
        wrong.record_point_ids([PointRecord("points-b", "1", "p", "h")])


def test_the_coordination_calls_travel_as_the_functions_expect(local_convex: LocalConvex) -> None:
    """Optional arguments left out stay out (Convex refuses null for an optional argument), and
    every answer comes back typed: the conformance suite checks the behaviour, this the wiring."""
    client = ConvexBackbone(local_convex.url, "wire-a", local_convex.register_site("wire-a"))
    try:
        client.heartbeat("coder", "claude-code")  # no interface, no last episode
        client.heartbeat("coder", "claude-code", "cli", 1_700_000_000_123)
        (coder,) = client.agents()
        assert (coder.interface, coder.last_episode_at, coder.site) == ("cli", 1_700_000_000_123, "wire-a")
        client.heartbeat_site(SiteBeat("0.1.0", "h", 7, None, None, None, 0, 0))
        (me,) = [s for s in client.sites() if s.site == "wire-a"]
        assert (me.online, me.pid, me.lag_s, me.backlog, me.index_state, me.cursor) == (True, 7, None, None, None, None)
        approval = client.create_approval(
            agent_name="coder", action_type="deploy", priority="low", reviewers=[], expires_at=2**52
        )
        assert [a.status for a in client.approvals() if a.approval_id == approval] == ["pending"]
        assert client.job_runs("no-such-job") == []
        assert client.digest("2001-01-01") is None
        assert [t for t in client.health_transitions(0) if t.site == "wire-a"] == []
    finally:
        client.close()


def _old_item(local_id: int, ts_s: int, output: str) -> PushItem:
    """An episode of 1970 (older than anything other tests push into the shared local Convex)."""
    return _item(local_id, output, ts_s)


def test_the_cold_archive_travels_as_the_functions_expect(local_convex: LocalConvex) -> None:
    """Archive, list, verify, read back, forget (the site's and the operator's), restore: the wiring;
    the conformance suite checks the behaviour."""
    site = f"cold-{id(local_convex) % 10_000}"
    client = ConvexBackbone(local_convex.url, site, local_convex.register_site(site))
    other = ConvexBackbone(local_convex.url, f"{site}-b", local_convex.register_site(f"{site}-b"))
    operator = ConvexOperator(local_convex.url, local_convex.admin_key)
    try:
        client.push([_old_item(i, 1_000 + i, f"cold text {i}") for i in (1, 2, 3)] + [_item(4)], cursor=4)
        other.push([_old_item(1, 1_000, "the other site's text")], cursor=1)
        start = 0
        local_convex.admin("action", "episodes:archiveOld", {"cutoff": 86_400_000, "limit": 1000, "orphanGraceMs": 0})
        (file,) = client.archive_files(site)
        assert (file.site, file.week, file.count, file.first_id, file.last_id) == (site, "1970-W01", 3, "1", "3")
        assert (file.from_ts, file.to_ts) == (1_001_000, 1_003_000)
        assert file.location
        assert [f.week for f in client.archive_files(site, since_ms=1_003_000)] == ["1970-W01"]
        assert client.archive_files(site, until_ms=1_001_000) == []
        assert [c.problem for c in client.verify_archive(site)] == [None]
        run = client.last_archive_run()
        assert run is not None
        assert run.archived >= 4
        cold = {e["sourceId"]: e for e in client.archived_episodes()}
        assert sorted(cold) == ["1", "2", "3"]
        assert cold["2"]["output"] == "cold text 2"
        assert tuple(cold["2"]) == (*EXPORT_FIELDS, "archived")
        assert [e["sourceId"] for e in client.episodes()] == ["4"]
        assert list(client.archived_episodes(f"{site}-b")) == []  # a site reads only its own
        feed = {c.source_id: c for c in _all_changes(client, start) if c.site == site}
        assert (feed["1"].archived, feed["1"].episode) == (True, None)
        assert feed["4"].archived is False

        # Any site's index fetches the records it never indexed, by key; hot or unknown keys are absent.
        got = other.archived_records([(site, "2"), (site, "1"), (site, "4"), (site, "nope"), (f"{site}-b", "1")])
        assert sorted(got) == [(site, "1"), (site, "2"), (f"{site}-b", "1")]
        assert got[(site, "2")] == cold["2"]
        assert got[(f"{site}-b", "1")]["output"] == "the other site's text"
        assert other.archived_records([]) == {}

        assert client.forget("1") == Forgotten(True, "1970-W01")
        assert client.forget("1") == Forgotten(False, None)
        assert client.forget("4") == Forgotten(True, None)
        # Another site's episode: only the operator's deploy key reaches it.
        assert client.forget("1") == Forgotten(False, None)
        assert operator.forget(f"{site}-b", "1") == Forgotten(True, "1970-W01")
        assert other.archive_files(f"{site}-b") == []

        assert client.restore_archive(site) == 2
        assert client.restore_archive(site) == 0
        assert sorted(e["sourceId"] for e in client.episodes()) == ["2", "3"]
        assert list(client.archived_episodes()) == []
    finally:
        client.close()
        other.close()
        operator.close()


def _all_changes(client: ConvexBackbone, after: int) -> list[Change]:
    out: list[Change] = []
    while page := client.changes(after, MAX_PAGE):
        out.extend(page)
        after = page[-1].seq
    return out


def test_the_operator_key_stays_out_of_errors_and_repr(local_convex: LocalConvex) -> None:
    key = "deploy-key-" + "x" * 24
    operator = ConvexOperator(local_convex.url, key)
    try:
        assert key not in repr(operator)
        with pytest.raises(MemsyncError) as raised:
            operator.forget("nobody", "1")
        assert key not in str(raised.value)
        assert "HTTP 401" in str(raised.value)
    finally:
        operator.close()
    site = ConvexBackbone(local_convex.url, "op-a", local_convex.register_site("op-a"))
    try:
        with pytest.raises(BackboneRejected):  # an internal function: not for a site's secret
            site.call("action", "episodes:forgetAny", {"sourceSite": "op-a", "sourceId": "1"})
    finally:
        site.close()
