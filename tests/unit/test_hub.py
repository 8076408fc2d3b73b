"""The embedded hub keeps the backbone contract (sync/backbone/base.py), on a real SQLite file."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from sync.backbone.base import Outcome, PushItem, SiteBeat, SourceRecord, UseEvent
from sync.backbone.hub import HubBackbone
from sync.backbone.hub.connection import classify, current_ms
from sync.backbone.hub.schema import SCHEMA_VERSION
from sync.episode import EXPORT_FIELDS, canonical_json
from sync.errors import BackboneBroken, BackboneConflict, BackboneUnavailable, MemsyncError, PathProblem
from sync.policy.leases import Claim


def item(source_id: str, identity: str = "id", content: str = "c1", **fields: Any) -> PushItem:
    body = {"sessionId": "s", "task": "t", "ts": 1000, "createdAt": 1000, "output": content, **fields}
    local_id = int(source_id.split("~", maxsplit=1)[0])
    return PushItem(source_id, local_id, f"identity-{identity}-{source_id}", content, body, canonical_json(body))


@pytest.fixture
def hub(tmp_path: Path) -> Any:
    backbone = HubBackbone(tmp_path / "hub.db", "laptop")
    yield backbone
    backbone.close()


def test_insert_then_unchanged_then_update_keeps_first_synced_at(hub: HubBackbone) -> None:
    first = hub.push([item("1"), item("2")], cursor=2)
    assert [r.outcome for r in first] == [Outcome.INSERTED, Outcome.INSERTED]
    assert all(r.remote_id and r.synced_at for r in first)
    again = hub.push([item("1"), item("2")], cursor=2)
    assert [r.outcome for r in again] == [Outcome.UNCHANGED, Outcome.UNCHANGED]
    assert [(r.remote_id, r.synced_at) for r in again] == [(r.remote_id, r.synced_at) for r in first]
    edited = hub.push([item("1", content="c2")], cursor=2)
    assert edited[0].outcome is Outcome.UPDATED
    assert (edited[0].remote_id, edited[0].synced_at) == (first[0].remote_id, first[0].synced_at)
    rows = {e["sourceId"]: e for e in hub.episodes()}
    assert rows["1"]["output"] == "c2"
    assert rows["1"]["contentHash"] == "c2"
    assert len(rows) == 2


def test_a_key_holding_another_episode_is_a_conflict_and_is_left_alone(hub: HubBackbone) -> None:
    hub.push([item("5", identity="a")], cursor=5)
    result = hub.push([item("5", identity="b", content="other")], cursor=5)
    assert result[0].outcome is Outcome.CONFLICT
    (kept,) = list(hub.episodes())
    assert kept["output"] == "c1"
    assert hub.push([item("5~1", identity="b", content="other")], cursor=5)[0].outcome is Outcome.INSERTED


def test_sites_are_separate_keyspaces(hub: HubBackbone, tmp_path: Path) -> None:
    vm = HubBackbone(tmp_path / "hub.db", "vm")  # each site opens its own, on the shared file
    try:
        hub.push([item("1")], cursor=1)
        assert vm.push([item("1")], cursor=1)[0].outcome is Outcome.INSERTED
        assert {e["sourceSite"] for e in hub.episodes()} == {"laptop", "vm"}
        assert [e["sourceSite"] for e in hub.episodes("vm")] == ["vm"]
        assert [e["sourceSite"] for e in vm.episodes()] == ["laptop", "vm"]  # export reads every site's
    finally:
        vm.close()


def test_the_cursor_moves_with_the_rows_and_never_backwards(hub: HubBackbone) -> None:
    assert hub.site_cursor() is None
    hub.push([item("1"), item("2")], cursor=2)
    cursor = hub.site_cursor()
    assert cursor is not None
    assert (cursor.last_synced_id, cursor.total_synced) == (2, 2)
    hub.push([item("1")], cursor=1)  # a re-push after a lost sidecar
    cursor = hub.site_cursor()
    assert cursor is not None
    assert (cursor.last_synced_id, cursor.total_synced) == (2, 2)


def test_a_failed_push_leaves_neither_rows_nor_cursor(tmp_path: Path) -> None:
    path = tmp_path / "hub.db"
    hub = HubBackbone(path, "laptop", busy_timeout_ms=50)
    hub.push([item("1")], cursor=1)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    with pytest.raises(BackboneUnavailable, match="locked"):
        hub.push([item("2"), item("3")], cursor=3)
    holder.execute("ROLLBACK")
    holder.close()
    cursor = hub.site_cursor()
    assert cursor is not None
    assert cursor.last_synced_id == 1
    assert [e["sourceId"] for e in hub.episodes()] == ["1"]
    hub.close()


def test_export_has_the_documented_fields_in_order(hub: HubBackbone) -> None:
    hub.push([item("1", tags=["x"], metadata={"k": 1})], cursor=1)
    (exported,) = list(hub.episodes())
    assert tuple(exported) == EXPORT_FIELDS
    assert exported["sourceSite"] == "laptop"
    assert exported["tags"] == ["x"]
    assert exported["metadata"] == {"k": 1}


def _sqlite_error(kind: type[sqlite3.Error], message: str, code: int | None) -> sqlite3.Error:
    error = kind(message)
    if code is not None:
        error.sqlite_errorcode = code  # what sqlite3 sets on the errors it raises
    return error


@pytest.mark.parametrize(
    ("error", "kind", "says"),
    [
        (_sqlite_error(sqlite3.DatabaseError, "file is not a database", 26), BackboneBroken, "is damaged"),
        (_sqlite_error(sqlite3.DatabaseError, "file is not a database", None), BackboneBroken, "backup"),
        (_sqlite_error(sqlite3.DatabaseError, "database disk image is malformed", 11), BackboneBroken, "damaged"),
        (_sqlite_error(sqlite3.DatabaseError, "database disk image is malformed", None), BackboneBroken, "damaged"),
        (_sqlite_error(sqlite3.OperationalError, "attempt to write a readonly database", 8), PathProblem, "write"),
        (_sqlite_error(sqlite3.OperationalError, "attempt to write a readonly database", None), PathProblem, "write"),
        (_sqlite_error(sqlite3.OperationalError, "database is locked", 5), BackboneUnavailable, "locked"),
        (_sqlite_error(sqlite3.OperationalError, "disk I/O error", 10), BackboneUnavailable, "I/O"),
        (_sqlite_error(sqlite3.OperationalError, "database or disk is full", 13), BackboneUnavailable, "full"),
        # unable to open, with the folder writable: a passing problem (descriptors, a remount)
        (_sqlite_error(sqlite3.OperationalError, "unable to open database file", 14), BackboneUnavailable, "open"),
    ],
)
def test_sqlite_errors_are_classified_once(
    error: sqlite3.Error, kind: type[MemsyncError], says: str, tmp_path: Path
) -> None:
    path = tmp_path / "hub.db"
    classified = classify(error, path)
    assert type(classified) is kind
    assert says in str(classified)
    assert str(path) in str(classified)


def test_a_hub_it_cannot_create_or_open_is_a_path_problem(tmp_path: Path) -> None:
    cannot_open = _sqlite_error(sqlite3.OperationalError, "unable to open database file", 14)
    (tmp_path / "hub.db").mkdir()  # a folder where the file should be
    with pytest.raises(PathProblem, match="is a folder"):
        HubBackbone(tmp_path / "hub.db", "laptop")
    assert isinstance(classify(cannot_open, tmp_path / "hub.db"), PathProblem)
    # A folder it cannot write (root may write anywhere, so this one cannot exist at all).
    unwritable = Path("/proc/1/memsync-hub/hub.db")
    problem = classify(cannot_open, unwritable)
    assert isinstance(problem, PathProblem)
    assert "write access to the folder" in str(problem)
    assert isinstance(classify(PermissionError(13, "Permission denied"), unwritable), PathProblem)


def test_a_corrupt_hub_file_is_a_permanent_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "hub.db"
    path.write_bytes(b"this is not SQLite, " * 1000)
    with pytest.raises(BackboneBroken, match=f"the embedded hub {path} is damaged") as raised:
        HubBackbone(path, "laptop")
    assert "restore it from a backup" in str(raised.value)
    assert not isinstance(raised.value, BackboneUnavailable)  # never retried


def test_a_version_2_hub_gets_the_change_feed_in_place(tmp_path: Path) -> None:
    """Hubs written before the change feed: their episodes enter it in id order, tombstones after."""
    path = tmp_path / "hub.db"
    conn = sqlite3.connect(path)
    conn.executescript(
        """CREATE TABLE episodes (id INTEGER PRIMARY KEY, source_site TEXT NOT NULL, source_id TEXT NOT NULL,
             identity_hash TEXT NOT NULL, content_hash TEXT NOT NULL, body TEXT NOT NULL, ts INTEGER,
             created_at INTEGER, synced_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
             UNIQUE (source_site, source_id));
           CREATE TABLE tombstones (source_site TEXT NOT NULL, source_id TEXT NOT NULL, deleted_at INTEGER NOT NULL,
             PRIMARY KEY (source_site, source_id));
           CREATE TABLE schema_info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
           INSERT INTO schema_info VALUES ('version', '2');
           INSERT INTO episodes VALUES (7, 'laptop', '1', 'i1', 'c1', '{"task": "a"}', 1, 1, 5, 5);
           INSERT INTO episodes VALUES (9, 'vm', '4', 'i4', 'c4', '{"task": "b"}', 2, 2, 6, 6);
           INSERT INTO tombstones VALUES ('laptop', '3', 8);"""
    )
    conn.close()
    hub = HubBackbone(path, "laptop")
    try:
        feed = hub.changes(0, 10)
        assert [(c.seq, c.site, c.source_id, c.episode is None) for c in feed] == [
            (7, "laptop", "1", False),
            (9, "vm", "4", False),
            (10, "laptop", "3", True),
        ]
        assert feed[0].episode is not None
        assert feed[0].episode["task"] == "a"
        hub.push([item("5")], cursor=5)
        (new,) = hub.changes(10, 10)
        assert (new.seq, new.source_id) == (11, "5")
    finally:
        hub.close()
    hub = HubBackbone(path, "laptop")  # reopening does not migrate twice
    try:
        assert [c.seq for c in hub.changes(0, 10)] == [7, 9, 10, 11]
        assert hub.source_of() is None  # and on through version 3 to 4, and 5
    finally:
        hub.close()
    assert _schema_version(path) == SCHEMA_VERSION


def _schema_version(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        (version,) = conn.execute("SELECT value FROM schema_info WHERE key = 'version'").fetchone()
        return str(version)
    finally:
        conn.close()


def test_a_version_3_hub_gets_site_sources_in_place(tmp_path: Path) -> None:
    """Hubs written before site sources: the table is added, everything else is kept as it was."""
    path = tmp_path / "hub.db"
    hub = HubBackbone(path, "laptop")
    hub.push([item("1"), item("2")], cursor=2)
    hub.forget("2")
    hub.close()
    # Version 3 was today's schema without site_sources.
    conn = sqlite3.connect(path)
    conn.executescript("DROP TABLE site_sources; UPDATE schema_info SET value = '3' WHERE key = 'version';")
    conn.close()
    hub = HubBackbone(path, "laptop")
    try:
        assert _schema_version(path) == SCHEMA_VERSION
        assert hub.source_of() is None
        assert hub.set_source(SourceRecord("i-1", "m-1", "laptop.lan", "/a.db"), expected=None) is True
        assert [e["sourceId"] for e in hub.episodes()] == ["1"]
        assert [(c.seq, c.source_id) for c in hub.changes(0, 10)] == [(1, "1"), (3, "2")]
        assert hub.push([item("2")], cursor=2)[0].reason == "forgotten"
    finally:
        hub.close()
    hub = HubBackbone(path, "laptop")  # reopening keeps the record and the version
    try:
        found = hub.source_of()
        assert found is not None
        assert found.instance == "i-1"
    finally:
        hub.close()
    assert _schema_version(path) == SCHEMA_VERSION


# Version 5 was today's schema without what an approval's request says of itself.
_APPROVALS_OF_VERSION_5 = """
ALTER TABLE approvals DROP COLUMN cost_usd;
ALTER TABLE approvals DROP COLUMN tests_passed;
"""
_TO_VERSION_5 = _APPROVALS_OF_VERSION_5 + "UPDATE schema_info SET value = '5' WHERE key = 'version';"


def test_a_version_5_hub_gets_approvals_cost_and_tests_in_place(tmp_path: Path) -> None:
    """Hubs written before approvals kept their cost and tests: the columns are added, empty for
    the approvals already there, and everything else is kept."""
    path = tmp_path / "hub.db"
    hub = HubBackbone(path, "laptop")
    hub.push([item("1")], cursor=1)
    far = current_ms() + 86_400_000
    old = hub.create_approval(
        agent_name="coder", action_type="external_api", priority="normal", reviewers=["alice"], expires_at=far
    )
    hub.close()
    conn = sqlite3.connect(path)
    conn.executescript(_TO_VERSION_5)
    conn.close()
    hub = HubBackbone(path, "laptop")
    try:
        assert _schema_version(path) == SCHEMA_VERSION
        (before,) = hub.approvals()
        assert (before.approval_id, before.status, before.cost_usd, before.tests_passed) == (old, "pending", None, None)
        cheap = hub.create_approval(
            agent_name="coder",
            action_type="external_api",
            priority="normal",
            reviewers=[],
            expires_at=far,
            cost_usd=0.05,
        )
        passed = hub.create_approval(
            agent_name="coder",
            action_type="code_commit",
            priority="normal",
            reviewers=[],
            expires_at=far,
            tests_passed=True,
        )
        by_id = {a.approval_id: a for a in hub.approvals()}
        assert (by_id[cheap].status, by_id[cheap].resolved_by, by_id[cheap].cost_usd) == ("approved", "policy", 0.05)
        assert (by_id[passed].status, by_id[passed].tests_passed) == ("approved", True)
        assert [e["sourceId"] for e in hub.episodes()] == ["1"]
    finally:
        hub.close()
    hub = HubBackbone(path, "laptop")  # reopening keeps everything and the version
    try:
        assert [a.cost_usd for a in hub.approvals()] == [None, 0.05, None]
    finally:
        hub.close()
    assert _schema_version(path) == SCHEMA_VERSION


# Version 4 was today's schema without the fleet: no registry of sites, leases (job_claims instead),
# runs, health or digests; agents without interface and last episode; episodes without archived.
_TO_VERSION_4 = (
    _APPROVALS_OF_VERSION_5
    + """
DROP INDEX episodes_by_archived_ts;
ALTER TABLE episodes DROP COLUMN archived;
ALTER TABLE agents DROP COLUMN interface;
ALTER TABLE agents DROP COLUMN last_episode_at;
DROP INDEX approvals_by_status_resolved;
DROP TABLE site_states; DROP TABLE job_leases; DROP TABLE job_runs; DROP TABLE health_states;
DROP TABLE health_transitions; DROP TABLE digests;
CREATE TABLE job_claims (job TEXT NOT NULL, slot TEXT NOT NULL, claimant TEXT NOT NULL,
  claimed_at INTEGER NOT NULL, PRIMARY KEY (job, slot));
INSERT INTO job_claims VALUES ('daily-digest', '2026-11-21T06:00', 'vm', 1);
INSERT INTO agents VALUES ('laptop', 'coder', 'claude-code', 'online', 1000);
UPDATE schema_info SET value = '4' WHERE key = 'version';
"""
)


def test_a_version_4_hub_gets_the_fleet_in_place(tmp_path: Path) -> None:
    """Hubs written before the fleet: its tables and columns are added, everything else is kept;
    the old job claims go (a slot's lease replaced "first claimant owns it forever")."""
    path = tmp_path / "hub.db"
    hub = HubBackbone(path, "laptop")
    hub.push([item("1"), item("2")], cursor=2)
    hub.close()
    conn = sqlite3.connect(path)
    conn.executescript(_TO_VERSION_4)
    conn.close()
    hub = HubBackbone(path, "laptop")
    try:
        assert _schema_version(path) == SCHEMA_VERSION
        (coder,) = hub.agents()
        assert (coder.agent_name, coder.site, coder.interface, coder.last_episode_at) == ("coder", "laptop", None, None)
        hub.heartbeat("coder", "claude-code", "cli", 1500)
        assert hub.agents()[0].interface == "cli"
        exported = list(hub.episodes())
        assert [tuple(e) for e in exported] == [EXPORT_FIELDS, EXPORT_FIELDS]  # none archived
        assert hub.claim_job("daily-digest", "2026-11-21T06:00", 60_000) is Claim.TAKE
        hub.heartbeat_site(SiteBeat("0.1.0", "laptop.lan", 1, None, None, None, 0, 0))
        assert [s.site for s in hub.sites()] == ["laptop"]
        assert hub.archive_older_than(1_001_000, 10) == 2  # item()'s ts is 1000 s
        # Archiving is a change (every index marks the points archived)
        assert [(c.seq, c.source_id, c.archived) for c in hub.changes(0, 10)] == [(3, "1", True), (4, "2", True)]
    finally:
        hub.close()
    conn = sqlite3.connect(path)
    try:
        assert not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'job_claims'").fetchall()
    finally:
        conn.close()
    hub = HubBackbone(path, "laptop")  # reopening keeps everything and the version
    try:
        assert list(hub.episodes()) == []
        assert [e.get("archived") for e in hub.archived_episodes()] == [True, True]
        assert hub.agents()[0].interface == "cli"
        assert hub.job_runs("daily-digest")[0].outcome == "running"
    finally:
        hub.close()
    assert _schema_version(path) == SCHEMA_VERSION


def test_a_version_8_hubs_archive_marks_become_hot_again_for_the_cold_archive(tmp_path: Path) -> None:
    """Version 8's ``archived`` only marked rows (their bodies stayed in the hot table): version 9
    makes them hot again, and the next cleanup run moves them to the archive for real."""
    path = tmp_path / "hub.db"
    hub = HubBackbone(path, "laptop")
    hub.push([item("1"), item("2")], cursor=2)
    hub.close()
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.executescript(
            "DROP TABLE archive_files; DROP TABLE archive_forgets; DROP TABLE archive_runs;"
            "ALTER TABLE episodes DROP COLUMN archive_week;"
            "UPDATE episodes SET archived = 1 WHERE source_id = '1';"
            "UPDATE schema_info SET value = '8' WHERE key = 'version';"
        )
    hub = HubBackbone(path, "laptop")
    try:
        assert _schema_version(path) == SCHEMA_VERSION
        assert [e["sourceId"] for e in hub.episodes()] == ["1", "2"]  # both hot, bodies intact
        assert hub.archive_files() == []
        assert hub.archive_older_than(1_001_000, 10) == 2
        assert [e["sourceId"] for e in hub.archived_episodes()] == ["1", "2"]
    finally:
        hub.close()


def test_a_version_9_hub_gains_the_tasks_table_and_keeps_its_approvals(tmp_path: Path) -> None:
    """Version 10 added tasks: a version 9 file gets the table in the migration's transaction, its
    approvals kept, and a task can then wait on one of them."""
    path = tmp_path / "hub.db"
    hub = HubBackbone(path, "laptop")
    asked = hub.create_approval(
        agent_name="coder", action_type="deploy", priority="low", reviewers=[], expires_at=current_ms() + 3_600_000
    )
    hub.close()
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.executescript("DROP TABLE tasks; UPDATE schema_info SET value = '9' WHERE key = 'version';")
    hub = HubBackbone(path, "laptop")
    try:
        assert _schema_version(path) == SCHEMA_VERSION == "14"
        task_id = hub.create_task(title="t", agent_name="coder", approval_id=asked)
        assert hub.tasks() == [hub.task(task_id)]
        hub.resolve_approval(asked, "approved", "ann")
        assert [t.status for t in hub.tasks()] == ["in_progress"]
    finally:
        hub.close()


def test_a_version_12_hub_gains_the_uses_tables_in_the_migrations_transaction(tmp_path: Path) -> None:
    """Version 13 added the fleet's use of its memories: a version 12 file gets both tables and
    records "13" in one step (then the dream's 14), its episodes kept, and their uses then count."""
    path = tmp_path / "hub.db"
    hub = HubBackbone(path, "laptop")
    hub.push([item("1")], cursor=1)
    hub.close()
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.executescript(
            "DROP TABLE uses; DROP TABLE use_totals; UPDATE schema_info SET value = '12' WHERE key = 'version'"
        )
    hub = HubBackbone(path, "laptop")
    try:
        assert _schema_version(path) == SCHEMA_VERSION == "14"
        assert hub.record_uses([UseEvent("u-1", "context", 1_000, (("laptop", "1"),))]) == 1
        assert hub.use_totals()[("laptop", "1")].access_count == 1
    finally:
        hub.close()


def test_a_version_2_hub_without_registry_tables_migrates_to_the_current_version(tmp_path: Path) -> None:
    """A hub so old it has no agents table: the migration adds columns only to tables that exist,
    and the schema creates the rest whole."""
    path = tmp_path / "hub.db"
    conn = sqlite3.connect(path)
    conn.executescript(
        """CREATE TABLE episodes (id INTEGER PRIMARY KEY, source_site TEXT NOT NULL, source_id TEXT NOT NULL,
             identity_hash TEXT NOT NULL, content_hash TEXT NOT NULL, body TEXT NOT NULL, ts INTEGER,
             created_at INTEGER, synced_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
             UNIQUE (source_site, source_id));
           CREATE TABLE tombstones (source_site TEXT NOT NULL, source_id TEXT NOT NULL, deleted_at INTEGER NOT NULL,
             PRIMARY KEY (source_site, source_id));
           CREATE TABLE schema_info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
           INSERT INTO schema_info VALUES ('version', '2');"""
    )
    conn.close()
    hub = HubBackbone(path, "laptop")
    try:
        hub.heartbeat("coder", "claude-code", "ide", 5)
        assert hub.agents()[0].interface == "ide"
        assert _schema_version(path) == SCHEMA_VERSION
    finally:
        hub.close()


def test_runs_and_done_leases_older_than_two_weeks_are_forgotten(hub: HubBackbone) -> None:
    """The alerts job alone runs 1,440 times a day: finishing a slot prunes what is two weeks old."""
    from sync.backbone.hub.fleet.jobs import RUNS_KEPT_MS

    old = current_ms() - RUNS_KEPT_MS - 1
    hub.record_run("qdrant-episode-sync", "old", "ok", "long ago", old, old)
    with closing(sqlite3.connect(hub.path)) as conn, conn:
        conn.execute("INSERT INTO job_leases VALUES ('alerts', 'old', 'laptop', ?, 1)", (old,))
        conn.execute("INSERT INTO job_leases VALUES ('alerts', 'held', 'laptop', ?, 0)", (old,))
    assert hub.claim_job("alerts", "new", 60_000) is Claim.TAKE
    hub.finish_job("alerts", "new", "ok", "fine")
    assert [r.slot for r in hub.job_runs()] == ["new"]
    with closing(sqlite3.connect(hub.path)) as conn:
        assert sorted(r[0] for r in conn.execute("SELECT slot FROM job_leases")) == ["held", "new"]


def test_every_time_the_hub_records_comes_from_its_clock(tmp_path: Path) -> None:
    """The hub takes its clock as an argument: heartbeats, approvals, tombstones and pushes are
    stamped by it, so a test can put the hub at any instant (a Sunday 03:00, a new year)."""
    instant = 1_798_761_540_000  # 2026-12-31 23:59 UTC
    hub = HubBackbone(tmp_path / "hub.db", "laptop", clock=lambda: instant)
    try:
        hub.push([item("1"), item("2")], cursor=2)
        hub.heartbeat_site(SiteBeat("0.1", "h", 1, 0.0, 0, "ready", 0, 0, 0))
        hub.heartbeat("coder", "claude-code")
        approval = hub.create_approval(
            agent_name="coder", action_type="deploy", priority="low", reviewers=[], expires_at=instant + 60_000
        )
        hub.forget("2")
    finally:
        hub.close()
    with closing(sqlite3.connect(tmp_path / "hub.db")) as conn:
        stamps = {
            "synced": conn.execute("SELECT synced_at FROM episodes").fetchall(),
            "site": conn.execute("SELECT last_heartbeat FROM site_states").fetchall(),
            "agent": conn.execute("SELECT last_heartbeat FROM agents").fetchall(),
            "approval": conn.execute("SELECT created_at FROM approvals WHERE id = ?", (int(approval),)).fetchall(),
            "tombstone": conn.execute("SELECT deleted_at FROM tombstones").fetchall(),
        }
    assert stamps == {name: [(instant,)] for name in stamps}


def test_the_hub_decides_by_its_clock_leases_runs_approvals_sources_the_archive_and_the_digest(
    tmp_path: Path,
) -> None:
    """Where the hub decides by time (a lease lapsed, an approval expired, which day is today) it asks
    the clock it was given, never the machine's."""
    start = 1_798_761_540_000  # 2026-12-31 23:59 UTC
    now = [start]
    laptop = HubBackbone(tmp_path / "hub.db", "laptop", clock=lambda: now[0])
    vm = HubBackbone(tmp_path / "hub.db", "vm", clock=lambda: now[0])
    try:
        # A job's lease lapses by the clock: held off while it runs, taken over after.
        assert laptop.claim_job("alerts", "slot", 60_000) is Claim.TAKE
        now[0] = start + 59_999
        assert vm.claim_job("alerts", "slot", 60_000) is Claim.SKIP
        now[0] = start + 60_000
        assert vm.claim_job("alerts", "slot", 60_000) is Claim.TAKE_OVER
        now[0] = start + 61_000
        vm.finish_job("alerts", "slot", "ok", "fine")
        runs = {(r.site, r.outcome): (r.started_at, r.ended_at) for r in laptop.job_runs("alerts")}
        assert runs == {
            ("laptop", "abandoned"): (start, start + 60_000),
            ("vm", "ok"): (start + 60_000, start + 61_000),
        }

        # An approval is resolved at the clock's time, and expires by it.
        def ask() -> str:
            return laptop.create_approval(
                agent_name="coder", action_type="deploy", priority="low", reviewers=[], expires_at=now[0] + 60_000
            )

        now[0] = start
        answered, lapsing = ask(), ask()
        now[0] = start + 30_000
        assert laptop.resolve_approval(answered, "approved", "alice") == "approved"
        found = laptop.approval(answered)
        assert found is not None
        assert (found.created_at, found.resolved_at) == (start, start + 30_000)
        now[0] = start + 60_000
        with pytest.raises(BackboneConflict, match="expired"):
            laptop.defer_approval(lapsing, "alice", 60_000)
        with pytest.raises(BackboneConflict, match="expired"):
            laptop.resolve_approval(lapsing, "approved", "alice")

        # The source's claim and last sight, the archive's run: stamped at the clock's time.
        record = SourceRecord("instance", "machine", "host", "/agentdb.db")
        assert laptop.set_source(record, expected=None)
        now[0] = start + 90_000
        assert laptop.set_source(record, expected="instance")
        source = laptop.source_of()
        assert source is not None
        assert (source.claimed_at, source.last_seen_at) == (start + 60_000, start + 90_000)
        laptop.push([item("1")], cursor=1)
        assert laptop.archive_older_than(cutoff_ms=start, limit=10) == 1
        last = laptop.last_archive_run()
        assert last is not None
        assert last.at == start + 90_000

        # Today is the clock's day: the digest of 2027-01-01 is on demand only once the clock is past midnight.
        now[0] = start
        with pytest.raises(ValueError, match=r"only today's digest \(2026-12-31\)"):
            laptop.build_today_digest("2027-01-01")
        assert laptop.build_today_digest("2026-12-31")["builtAt"] == start
        now[0] = start + 120_000
        assert laptop.build_today_digest("2027-01-01")["builtAt"] == start + 120_000
    finally:
        vm.close()
        laptop.close()


def test_a_version_13_hub_gains_the_dream_tables_and_mark_and_keeps_its_episodes(tmp_path: Path) -> None:
    """Version 14 added the dream cycle: a version 13 file gets its tables and the episodes' mark
    column in the migration's transaction, its episodes kept and unmarked."""
    path = tmp_path / "hub.db"
    hub = HubBackbone(path, "laptop")
    hub.push([item("1"), item("2", identity="id2")], cursor=2)
    hub.close()
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.executescript(
            "DROP TABLE dream_steps; DROP TABLE dream_links; ALTER TABLE episodes DROP COLUMN dream_state;"
            "UPDATE schema_info SET value = '13' WHERE key = 'version';"
        )
    hub = HubBackbone(path, "laptop")
    try:
        assert _schema_version(path) == SCHEMA_VERSION == "14"
        assert [e["sourceId"] for e in hub.episodes()] == ["1", "2"]
        assert all("dream" not in e for e in hub.episodes())
        assert hub.dream_steps() == []
    finally:
        hub.close()
