"""The hub file's tables, and the step-by-step migrations that bring an older file to them.

Version 5 added the fleet: the sites' registry rows, job leases and runs, sync health, digests, the
agents' interface and last episode, and episodes' ``archived`` flag. Version 6 added what an
approval's request says of itself (its cost, whether its tests passed), which the policy
(``sync.policy.approvals``) approves on. Version 7 added what people deciding an approval from Telegram
need (its summary, the episode it is about, how often it was deferred) and the decision on that
episode (``approval_status``). Version 8 added each site's count of redacted episodes. Version 9
added the cold archive: its files' manifests, forgets still to reach a file, the runs, and the week
an archived episode's body went to. Version 10 added tasks, some waiting on an approval
(``sync/backbone/hub/tasks``). Version 12 added the explicit links between memories
(``sync/backbone/hub/links``). Version 13 added the fleet's use of its memories and their pins
(``sync/backbone/hub/uses``). Version 14 added the dream cycle's steps and links and the mark on a
memory a standing step hides (``sync/backbone/hub/dreams``).

Also the change feed's counter, which the writers of episodes and of tombstones both advance
inside their own transactions.
"""

from __future__ import annotations

import sqlite3

from sync.sqlite_db import apply_schema, write_tx

_COUNTERS = "CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)"
_SITE_SOURCES = """CREATE TABLE IF NOT EXISTS site_sources (
  site TEXT PRIMARY KEY,
  instance TEXT NOT NULL,
  machine TEXT NOT NULL,
  host TEXT NOT NULL,
  agentdb_path TEXT NOT NULL,
  claimed_at INTEGER NOT NULL,      -- ms; when this instance took the site
  last_seen_at INTEGER NOT NULL     -- ms; its latest set_source
)"""
# Version 5's new tables: a migration from 4 creates them in the transaction that records "5".
_FLEET = (
    """CREATE TABLE IF NOT EXISTS site_states (
  site TEXT PRIMARY KEY,            -- the registry's sites: one row a site, written by its heartbeats
  status TEXT NOT NULL,             -- online | offline (the mark-stale sweep)
  last_heartbeat INTEGER NOT NULL,  -- ms
  version TEXT NOT NULL,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  lag_s REAL,
  backlog INTEGER,
  index_state TEXT,
  quarantined INTEGER NOT NULL,
  conflicts INTEGER NOT NULL,
  redacted INTEGER NOT NULL DEFAULT 0   -- episodes it synced with secrets replaced
)""",
    """CREATE TABLE IF NOT EXISTS job_leases (
  job TEXT NOT NULL,
  slot TEXT NOT NULL,
  holder TEXT NOT NULL,             -- the site running (or that ran) the slot
  expires_at INTEGER NOT NULL,      -- ms; another site may take the slot over after it
  done INTEGER NOT NULL DEFAULT 0,  -- finished, whatever the outcome: never run again
  PRIMARY KEY (job, slot)
)""",
    """CREATE TABLE IF NOT EXISTS job_runs (
  id INTEGER PRIMARY KEY,
  job TEXT NOT NULL,
  slot TEXT NOT NULL,
  site TEXT NOT NULL,               -- who ran it
  started_at INTEGER NOT NULL,
  ended_at INTEGER,
  outcome TEXT NOT NULL,            -- running | ok | failed | abandoned
  summary TEXT NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS job_runs_by_started ON job_runs (started_at)",
    "CREATE INDEX IF NOT EXISTS job_runs_by_job ON job_runs (job, started_at)",
    "CREATE INDEX IF NOT EXISTS job_runs_by_slot ON job_runs (job, slot, site)",
    """CREATE TABLE IF NOT EXISTS health_states (
  site TEXT PRIMARY KEY,
  state TEXT NOT NULL,              -- up | down, as the sync-health sweep last judged it
  since INTEGER NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS health_transitions (
  id INTEGER PRIMARY KEY,
  site TEXT NOT NULL,
  state TEXT NOT NULL,
  at INTEGER NOT NULL,
  silent_for_s REAL NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS health_transitions_by_at ON health_transitions (at)",
    """CREATE TABLE IF NOT EXISTS digests (
  day TEXT PRIMARY KEY,             -- the UTC day, YYYY-MM-DD
  built_at INTEGER NOT NULL,
  body TEXT NOT NULL                -- the digest as JSON
)""",
)
# Version 9: the cold archive (``sync/backbone/hub/archive``).
_ARCHIVE = (
    """CREATE TABLE IF NOT EXISTS archive_files (
  site TEXT NOT NULL,
  week TEXT NOT NULL,               -- ISO week of the episodes' ts, UTC
  location TEXT NOT NULL,           -- the file inside the archive folder beside the hub
  count INTEGER NOT NULL,
  sha256 TEXT NOT NULL,             -- of the compressed bytes
  bytes INTEGER NOT NULL,
  first_id TEXT NOT NULL,
  last_id TEXT NOT NULL,
  from_ts INTEGER NOT NULL,
  to_ts INTEGER NOT NULL,
  written_at INTEGER NOT NULL,
  PRIMARY KEY (site, week)
)""",
    """CREATE TABLE IF NOT EXISTS archive_forgets (
  site TEXT NOT NULL,               -- a copy this week's file must drop (forgotten, or re-archived
                                    -- into another week): rewritten by forget, else the next run
  week TEXT NOT NULL,
  source_id TEXT NOT NULL,
  PRIMARY KEY (site, week, source_id)
)""",
    """CREATE TABLE IF NOT EXISTS archive_runs (
  id INTEGER PRIMARY KEY,
  at INTEGER NOT NULL,
  archived INTEGER NOT NULL,
  files INTEGER NOT NULL
)""",
)
# Version 10: tasks (``sync/backbone/hub/tasks``); a migration from 9 creates them in the transaction
# that records "10".
_TASKS = (
    """CREATE TABLE IF NOT EXISTS tasks (
  id INTEGER PRIMARY KEY,
  site TEXT NOT NULL,               -- the site whose agent is to do it
  title TEXT NOT NULL,
  agent_name TEXT NOT NULL,
  status TEXT NOT NULL,             -- pending | in_progress | blocked | done | failed | cancelled
  assigned_to TEXT,
  approval_id INTEGER,              -- the approval (approvals.id, the same site's) it waits on, if any
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS tasks_by_approval ON tasks (approval_id)",
    "CREATE INDEX IF NOT EXISTS tasks_by_site_status ON tasks (site, status)",
)
# Version 12: the explicit links between memories (``sync/backbone/hub/links``, ``contracts/links.json``),
# and the index ``related`` reads a session by; a migration from 11 creates them in the transaction
# that records "12".
_LINKS = (
    """CREATE TABLE IF NOT EXISTS links (
  from_site TEXT NOT NULL,
  from_id TEXT NOT NULL,
  to_site TEXT NOT NULL,
  to_id TEXT NOT NULL,
  kind TEXT NOT NULL,               -- similar_to | about | updates (sync.policy.links.EXPLICIT)
  created_at INTEGER NOT NULL,
  PRIMARY KEY (from_site, from_id, to_site, to_id, kind)
)""",
    "CREATE INDEX IF NOT EXISTS links_by_to ON links (to_site, to_id)",
    "CREATE INDEX IF NOT EXISTS episodes_by_session ON episodes (source_site, json_extract(body, '$.sessionId'), ts)",
)

# Version 13: the fleet's use of its memories (``sync/backbone/hub/uses``); a migration from 12
# creates them in the transaction that records "13".
_USES = (
    """CREATE TABLE IF NOT EXISTS uses (
  use_id TEXT NOT NULL,             -- the event (its recording site made the id): counted once
  source_site TEXT NOT NULL,        -- the memory used
  source_id TEXT NOT NULL,
  kind TEXT NOT NULL,               -- sync.policy.salience.USE_KINDS
  by_site TEXT NOT NULL,            -- the site whose agent got it
  agent TEXT,                       -- the agent tool or MCP client, when known
  used_at INTEGER NOT NULL,         -- ms
  PRIMARY KEY (use_id, source_site, source_id)
)""",
    "CREATE INDEX IF NOT EXISTS uses_by_memory ON uses (source_site, source_id)",
    """CREATE TABLE IF NOT EXISTS use_totals (
  source_site TEXT NOT NULL,        -- one row a memory used or pinned: what its uses add up to
  source_id TEXT NOT NULL,
  access_count INTEGER NOT NULL DEFAULT 0,
  last_accessed INTEGER,            -- ms; NULL: pinned, never used
  by_kind TEXT NOT NULL DEFAULT '{}',  -- JSON: kind -> count
  pinned INTEGER NOT NULL DEFAULT 0,
  pinned_by TEXT,
  pinned_at INTEGER,
  PRIMARY KEY (source_site, source_id)
)""",
)
# Version 14: the dream cycle's steps and links (``sync/backbone/hub/dreams``), and the mark on a
# hidden episode; a migration from 13 creates them in the transaction that records "14".
_DREAMS = (
    """CREATE TABLE IF NOT EXISTS dream_steps (
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL,               -- consolidates | supersedes
  canonical_site TEXT NOT NULL,     -- the fold's canonical, or the newer memory
  canonical_id TEXT NOT NULL,
  members TEXT NOT NULL,            -- JSON [[site, sourceId], ...]: the fold's members, or the older memory
  at INTEGER NOT NULL,              -- ms
  run TEXT NOT NULL,                -- which run took it
  reason TEXT NOT NULL,
  synthesis TEXT,                   -- JSON: a model's summary of the fold, its prompt and model
  undone_at INTEGER,                -- ms; the step stays, undone
  undone_by TEXT
)""",
    """CREATE TABLE IF NOT EXISTS dream_links (
  from_site TEXT NOT NULL,
  from_id TEXT NOT NULL,
  to_site TEXT NOT NULL,
  to_id TEXT NOT NULL,
  kind TEXT NOT NULL,               -- consolidates | supersedes (issue 30's links table, once it is one)
  step_id INTEGER NOT NULL,
  PRIMARY KEY (from_site, from_id, to_site, to_id, kind)
)""",
    "CREATE INDEX IF NOT EXISTS dream_links_to ON dream_links (to_site, to_id)",
    "CREATE INDEX IF NOT EXISTS dream_links_by_step ON dream_links (step_id)",
)
_COLUMNS_14 = (("episodes", "dream_state", "TEXT"),)
SCHEMA = (
    """CREATE TABLE IF NOT EXISTS episodes (
  id INTEGER PRIMARY KEY,
  source_site TEXT NOT NULL,
  source_id TEXT NOT NULL,
  identity_hash TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  body TEXT NOT NULL,               -- the episode's camelCase fields as JSON
  ts INTEGER,
  created_at INTEGER,
  synced_at INTEGER NOT NULL,       -- ms; first receipt, never changed after
  updated_at INTEGER NOT NULL,
  change_seq INTEGER,               -- the change feed's position of the latest insert or edit
  point_id TEXT,                    -- qdrantPointId for the current content; cleared by an edit
  archived INTEGER NOT NULL DEFAULT 0,  -- 1: the body is in the cold archive (body keeps no text)
  archive_week TEXT,                -- the week ("2026-W08") whose archive file holds a copy of it:
                                    -- the episode while archived; an older copy once hot again
  approval_status TEXT,             -- the decision on an approval about this episode, if any
  dream_state TEXT,                 -- JSON: the standing dream step that hides it, if any
  UNIQUE (source_site, source_id)
)""",
    """CREATE INDEX IF NOT EXISTS episodes_by_created ON episodes (created_at)""",
    """CREATE TABLE IF NOT EXISTS agents (
  site TEXT NOT NULL,
  agent_name TEXT NOT NULL,
  platform TEXT NOT NULL,
  status TEXT NOT NULL,
  last_heartbeat INTEGER NOT NULL,
  interface TEXT,
  last_episode_at INTEGER,
  PRIMARY KEY (site, agent_name)
)""",
    """CREATE TABLE IF NOT EXISTS approvals (
  id INTEGER PRIMARY KEY,
  site TEXT NOT NULL,
  agent_name TEXT NOT NULL,
  action_type TEXT NOT NULL,
  status TEXT NOT NULL,
  priority TEXT NOT NULL,
  reviewers TEXT NOT NULL,
  expires_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  resolved_at INTEGER,
  resolved_by TEXT,
  cost_usd REAL,                    -- what the request said it costs, if it said
  tests_passed INTEGER,             -- 1 | 0: whether the request said its tests pass, if it said
  summary TEXT,                     -- what the agent wants to do, for the person deciding
  source_site TEXT,                 -- the episode it is about, if any (the requesting site's)
  source_id TEXT,
  defer_count INTEGER NOT NULL DEFAULT 0
)""",
    """CREATE INDEX IF NOT EXISTS approvals_by_status_expires ON approvals (status, expires_at)""",
    """CREATE TABLE IF NOT EXISTS tombstones (
  source_site TEXT NOT NULL,
  source_id TEXT NOT NULL,
  deleted_at INTEGER NOT NULL,
  change_seq INTEGER,
  PRIMARY KEY (source_site, source_id)
)""",
    _COUNTERS,
    """CREATE TABLE IF NOT EXISTS sync_cursors (
  site TEXT PRIMARY KEY,
  last_synced_id INTEGER NOT NULL,
  last_synced_at INTEGER NOT NULL,
  total_synced INTEGER NOT NULL
)""",
    _SITE_SOURCES,
    *_FLEET,
    *_ARCHIVE,
    *_TASKS,
    *_LINKS,
    *_USES,
    *_DREAMS,
)
SCHEMA_VERSION = "14"
# Version 2 hubs predate the change feed: their rows get a seq in id order, tombstones after them.
_MIGRATE_TO_3 = (
    "ALTER TABLE episodes ADD COLUMN change_seq INTEGER",
    "ALTER TABLE episodes ADD COLUMN point_id TEXT",
    "ALTER TABLE tombstones ADD COLUMN change_seq INTEGER",
    "UPDATE episodes SET change_seq = id",
    "UPDATE tombstones SET change_seq = (SELECT coalesce(max(id), 0) FROM episodes) + rowid",
)
_INDEXES_3 = (
    "CREATE INDEX IF NOT EXISTS episodes_by_change ON episodes (change_seq)",
    "CREATE INDEX IF NOT EXISTS tombstones_by_change ON tombstones (change_seq)",
)
# On columns that version 5 added: created after the migration has added them.
_INDEXES_5 = (
    "CREATE INDEX IF NOT EXISTS episodes_by_archived_ts ON episodes (archived, ts)",
    "CREATE INDEX IF NOT EXISTS approvals_by_status_resolved ON approvals (status, resolved_at)",
)
# Version 4 to 5: columns on tables that exist (a table a hub never had is created whole by
# apply_schema), and job_claims goes: leases (job_leases) replaced "first claimant owns it forever".
_COLUMNS_5 = (
    ("agents", "interface", "TEXT"),
    ("agents", "last_episode_at", "INTEGER"),
    ("episodes", "archived", "INTEGER NOT NULL DEFAULT 0"),
)
# Version 5 to 6: what an approval's request says of itself; NULL (it said nothing) for the old ones.
_COLUMNS_6 = (
    ("approvals", "cost_usd", "REAL"),
    ("approvals", "tests_passed", "INTEGER"),
)

# Version 6 to 7: approvals people decide from Telegram: what they are about, and deferrals; the
# decision on the episode an approval is about.
_COLUMNS_7 = (
    ("approvals", "summary", "TEXT"),
    ("approvals", "source_site", "TEXT"),
    ("approvals", "source_id", "TEXT"),
    ("approvals", "defer_count", "INTEGER NOT NULL DEFAULT 0"),
    ("episodes", "approval_status", "TEXT"),
)
# Version 7 to 8: how many episodes a site synced with secrets redacted, from its heartbeats.
_COLUMNS_8 = (("site_states", "redacted", "INTEGER NOT NULL DEFAULT 0"),)
# Version 8 to 9: the cold archive. Version 8's ``archived`` only marked rows (their bodies stayed):
# they become hot again, and the next cleanup run archives them for real.
_COLUMNS_9 = (("episodes", "archive_week", "TEXT"),)
_AFTER_COLUMNS_9 = ("UPDATE episodes SET archived = 0 WHERE archive_week IS NULL",)
# The steps that add columns (and then run statements: new tables), by the version they start from.
# Version 9 to 10 adds no column, only the tasks table; 10 to 11 nothing (the memory types are read,
# not stored); 11 to 12 only the links table and an index; 12 to 13 only the uses tables.
_COLUMN_STEPS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "5": _COLUMNS_6,
    "6": _COLUMNS_7,
    "7": _COLUMNS_8,
    "8": _COLUMNS_9,
    "9": (),
    # 10 -> 11 is the episode's type and identifiers' step, left empty: the type is read from the
    # stored fields, never stored. 11 to 12: links; 12 to 13: uses; 13 to 14: the dream cycle.
    "10": (),
    "11": (),
    "12": (),
    "13": _COLUMNS_14,
}
_AFTER_COLUMNS: dict[str, tuple[str, ...]] = {
    "8": _AFTER_COLUMNS_9,
    "9": _TASKS,
    "11": _LINKS,
    "12": _USES,
    "13": _DREAMS,
}


def create_or_migrate(conn: sqlite3.Connection) -> None:
    """Bring the file to the current schema: migrate an older hub, then create what is missing."""
    _migrate(conn)
    apply_schema(conn, SCHEMA + _INDEXES_3 + _INDEXES_5, SCHEMA_VERSION)


def _migrate(conn: sqlite3.Connection) -> None:
    """Bring an older hub to the current version in place, step by step, in one transaction:
    version 2 (before the change feed) to 3, version 3 (before site sources) to 4, version 4
    (before the fleet: registry, leases, runs, health, digests, archiving) to 5, version 5 (before
    approvals' cost and tests) to 6, version 6 (before approvals from Telegram) to 7, version 7
    (before redaction counts) to 8, version 8 (before the cold archive) to 9, version 9 (before
    tasks) to 10, ..., version 11 (before links) to 12, version 12 (before uses) to 13, version 13
    (before the dream cycle) to 14."""
    with write_tx(conn) as tx:
        if not tx.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_info'").fetchone():
            return
        row = tx.execute("SELECT value FROM schema_info WHERE key = 'version'").fetchone()
        version = None if row is None else row[0]
        if version == "2":
            for statement in _MIGRATE_TO_3:
                tx.execute(statement)
            tx.execute(_COUNTERS)
            tx.execute(
                "INSERT OR REPLACE INTO counters VALUES ('change_seq', max("
                " coalesce((SELECT max(change_seq) FROM episodes), 0),"
                " coalesce((SELECT max(change_seq) FROM tombstones), 0)))"
            )
            version = "3"
        if version == "3":
            # apply_schema would create the table as well, but it never changes a recorded
            # version; here the file says "4" only once the table exists, in one transaction.
            tx.execute(_SITE_SOURCES)
            version = "4"
        if version == "4":
            for table, column, declaration in _COLUMNS_5:
                _add_column(tx, table, column, declaration)
            tx.execute("DROP TABLE IF EXISTS job_claims")
            for statement in _FLEET:
                tx.execute(statement)
            version = "5"
        while version in _COLUMN_STEPS:  # 5 -> 6 -> ... -> 13: new columns, then statements
            for table, column, declaration in _COLUMN_STEPS[version]:
                _add_column(tx, table, column, declaration)
            for statement in _AFTER_COLUMNS.get(version, ()):
                tx.execute(statement)
            version = str(int(version) + 1)
        if row is not None and version != row[0]:
            tx.execute("UPDATE schema_info SET value = ? WHERE key = 'version'", (version,))


def _add_column(conn: sqlite3.Connection, table: str, column: str, declaration: str) -> None:
    columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
    if columns and column not in columns:
        conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")


def change_seq(conn: sqlite3.Connection) -> int:
    """The change feed's latest seq; read and advanced only under the write lock."""
    row = conn.execute("SELECT value FROM counters WHERE name = 'change_seq'").fetchone()
    return 0 if row is None else int(row[0])


def set_change_seq(conn: sqlite3.Connection, seq: int) -> None:
    conn.execute("INSERT OR REPLACE INTO counters VALUES ('change_seq', ?)", (seq,))
