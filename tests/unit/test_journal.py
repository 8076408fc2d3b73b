"""The journal of saved memories (``sync.source.journal``): its file, its keys, and the engine
pushing it to a real hub as the site's second source, exactly once, with its own cursor."""

from __future__ import annotations

from pathlib import Path

import pytest

from sync.backbone.hub import HubBackbone
from sync.push.engine import SyncEngine
from sync.push.sidecar import Sidecar
from sync.source.agentdb.source import agentdb_source
from sync.source.journal.source import journal_id, journal_source, local_id_of
from sync.source.journal.store import Entry, Journal, content_key
from sync.source.redaction import Redactor

SECRET = "ghp_" + "a1B2" * 9  # a GitHub token's shape


def entry(text: str, at: int = 1_700_000_000_000) -> Entry:
    return Entry(session_id="memories:agent", task=text, created_ms=at, tags=("project:x",), metadata={"a": 1})


def engine(tmp_path: Path, hub: HubBackbone, state: str = "j.state.db") -> SyncEngine:
    sidecar = Sidecar(tmp_path / state)
    sidecar.bind(hub.site, hub.description)
    return SyncEngine(
        source=journal_source(tmp_path / "laptop.journal.db"),
        sidecar=sidecar,
        backbone=hub,
        redactor=Redactor.configured({}, []),
    )


@pytest.fixture
def hub(tmp_path: Path) -> HubBackbone:
    return HubBackbone(tmp_path / "hub.db", "laptop")


@pytest.mark.parametrize(
    ("local_id", "generation", "key"), [(1, 0, "m1"), (17, 0, "m17"), (17, 1, "m17~1"), (3, 12, "m3~12")]
)
def test_keys_are_m_n_and_read_back(local_id: int, generation: int, key: str) -> None:
    assert journal_id(local_id, generation) == key
    assert local_id_of(key) == local_id


@pytest.mark.parametrize("other", ["17", "17~1", "m", "m0", "mx", "m17x", "M17", ""])
def test_other_sources_keys_are_not_the_journals(other: str) -> None:
    assert local_id_of(other) is None


def test_ids_are_never_reused_after_a_forget(tmp_path: Path) -> None:
    with Journal(tmp_path / "laptop.journal.db") as journal:
        first, second = journal.append(entry("one")), journal.append(entry("two"))
        assert journal.delete([second]) == 1
        assert journal.append(entry("three")) == second + 1
        assert first == 1


def test_the_same_text_is_found_whatever_its_spacing_and_case(tmp_path: Path) -> None:
    with Journal(tmp_path / "laptop.journal.db") as journal:
        saved = journal.append(entry("Pool size  is 20\n on prod"))
        assert journal.same_content("pool size is 20 on PROD") == saved
        assert journal.same_content("pool size is 30 on prod") is None
    assert content_key("a  b") == content_key("A b")


def test_forget_text_deletes_the_memories_that_hold_it(tmp_path: Path) -> None:
    path = tmp_path / "laptop.journal.db"
    with Journal(path) as journal:
        journal.append(entry("keep this"))
        gone = journal.append(entry("the codename BLUEBIRD-7 leaked"))
        assert journal.forget_text("BLUEBIRD-7") == 1
        assert journal.get(gone) is None
        assert journal.count() == 1
    assert b"BLUEBIRD-7" not in path.read_bytes()


def test_the_engine_pushes_the_journal_under_its_own_keys_exactly_once(tmp_path: Path, hub: HubBackbone) -> None:
    with Journal(tmp_path / "laptop.journal.db") as journal:
        for n in range(5):
            journal.append(entry(f"memory {n} token {SECRET}" if n == 2 else f"memory {n}"))
    first = engine(tmp_path, hub).run_pass()
    assert (first.inserted, first.backlog) == (5, 0)
    again = engine(tmp_path, hub).run_pass()  # the same sidecar: nothing to do
    assert again.inserted == again.updated == 0
    # A lost sidecar costs one idempotent re-push, never a duplicate.
    lost = engine(tmp_path, hub, state="fresh.state.db").run_pass()
    assert (lost.inserted, lost.updated, lost.unchanged) == (0, 0, 5)
    exported = list(hub.episodes("laptop"))
    assert [e["sourceId"] for e in exported] == ["m1", "m2", "m3", "m4", "m5"]
    assert SECRET not in str(exported)
    assert "[redacted:" in exported[2]["task"]
    assert exported[0]["tags"] == ["project:x"]
    # The journal pushes with cursor 0: the site's cursor stays the AgentDB file's.
    cursor = hub.site_cursor()
    assert cursor is not None
    assert cursor.last_synced_id == 0


def test_the_agentdb_file_and_the_journal_are_two_key_spaces(tmp_path: Path, hub: HubBackbone) -> None:
    import sqlite3

    agentdb = tmp_path / "agent.db"
    with sqlite3.connect(agentdb) as conn:  # the AgentDB shape, as the journal's
        conn.executescript(
            "CREATE TABLE episodes (id INTEGER PRIMARY KEY, ts INTEGER, session_id TEXT, task TEXT, input TEXT,"
            " output TEXT, critique TEXT, reward REAL, success INTEGER, latency_ms INTEGER, tokens_used INTEGER,"
            " tags TEXT, metadata TEXT, created_at INTEGER);"
            "INSERT INTO episodes (id, ts, session_id, task, created_at)"
            " VALUES (1, 1700000000, 's', 'agent one', 1700000000);"
        )
    conn.close()
    sidecar = Sidecar(tmp_path / "a.state.db")
    sidecar.bind(hub.site, hub.description)
    SyncEngine(source=agentdb_source(agentdb), sidecar=sidecar, backbone=hub).run_pass()
    with Journal(tmp_path / "laptop.journal.db") as journal:
        journal.append(entry("saved one"))
    engine(tmp_path, hub).run_pass()
    assert sorted(e["sourceId"] for e in hub.episodes("laptop")) == ["1", "m1"]
    cursor = hub.site_cursor()
    assert cursor is not None
    assert cursor.last_synced_id == 1
