"""``daemon.usecases.memory.remember``: what a save writes into the journal, and what the gate's answer
makes of it (the nearest memories given, as the search index would give them)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import SiteFiles

from daemon.usecases.memory.remember import Memory, remember
from sync.errors import MemsyncError
from sync.source.journal.gate import Candidate
from sync.source.journal.store import Journal

NOW = 1_800_000_000.0
SECRET = "ghp_" + "a1B2" * 9


@pytest.fixture
def site(site_files: Callable[..., SiteFiles]) -> SiteFiles:
    return site_files("laptop", extra='[site.defaults]\nagent_name = "coder"\n')


def test_a_save_is_one_row_with_memsyncs_metadata_keys(site: SiteFiles) -> None:
    memory = Memory(
        f"Rotate the deploy token {SECRET} monthly",
        "warning",
        ["ops", " ops ", ""],
        ["deploy/rotate.sh"],
        "shop",
        "laptop:12",
        None,
        None,
        "cli",
    )
    done = remember(site.settings(), memory, now=NOW, nearest=lambda text: [])
    assert (done.status, done.key) == ("saved", "laptop:m1")
    with Journal(site.settings().journal_path) as journal:
        row = journal.get(1)
    assert row is not None
    assert SECRET not in row["task"], "redacted before it is written"
    assert row["session_id"] == "memories:coder"
    assert row["agent_name"] == "coder"
    assert row["created_at"] == int(NOW * 1000)
    assert json.loads(row["tags"]) == ["ops", "project:shop"]
    assert json.loads(row["metadata"]) == {
        "memory_type": "warning",
        "project": "shop",
        "related_files": ["deploy/rotate.sh"],
        "about": "laptop:12",
        "agentName": "coder",
        "platform": "cli",
    }


def test_a_near_duplicate_returns_the_existing_memory_and_saves_nothing(site: SiteFiles) -> None:
    near = [Candidate("vm:m4", "pool_size is 20 on the prod db", 0.97)]
    done = remember(site.settings(), Memory("The prod db: pool_size is 20"), now=NOW, nearest=lambda text: near)
    assert (done.status, done.key, done.existing) == ("duplicate", "vm:m4", "vm:m4")
    assert "already remembered as vm:m4" in done.message
    assert not site.settings().journal_path.exists() or Journal(site.settings().journal_path).count() == 0


def test_a_value_update_is_saved_as_newer_naming_the_older(site: SiteFiles) -> None:
    near = [Candidate("vm:m4", "pool_size is 20 on the prod db", 0.97)]
    done = remember(site.settings(), Memory("pool_size is 30 on the prod db"), now=NOW, nearest=lambda text: near)
    assert (done.status, done.key, done.existing, done.differs) == ("updated", "laptop:m1", "vm:m4", ("20", "30"))
    with Journal(site.settings().journal_path) as journal:
        row = journal.get(1)
    assert row is not None
    assert json.loads(row["metadata"])["updates"] == "vm:m4"


def test_without_a_search_index_the_journal_check_still_runs_and_says_so(site: SiteFiles) -> None:
    def down(text: str) -> list[Candidate]:
        raise MemsyncError("the daemon is busy")

    first = remember(site.settings(), Memory("a fact"), now=NOW, nearest=down)
    assert first.status == "saved"
    assert "not checked for near-duplicates (the daemon is busy)" in first.message
    again = remember(site.settings(), Memory("  A   FACT "), now=NOW, nearest=down)
    assert (again.status, again.key) == ("duplicate", "laptop:m1")


@pytest.mark.parametrize(
    ("memory", "says"),
    [
        (Memory("   "), "content is empty"),
        (Memory("x" * 20_001), "at most 20000"),
        (Memory("x", "gossip"), "unknown memory type 'gossip'"),
        (Memory("x", about="laptop"), "is not SITE:ID"),
        (Memory("x", tags=[f"t{i}" for i in range(40)]), "at most 32 tags"),
    ],
)
def test_bad_arguments_are_one_sentence(site: SiteFiles, memory: Memory, says: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=says):
        remember(site.settings(), memory, now=NOW, nearest=lambda text: [])
    assert not site.settings().journal_path.exists(), "nothing written"


def test_an_agent_that_only_saves_memories_is_in_the_sites_beat(site: SiteFiles) -> None:
    from daemon.schedule.beats import site_beat
    from sync.backbone.hub import HubBackbone
    from sync.push.engine import SyncEngine
    from sync.push.sidecar import Sidecar
    from sync.source.journal.source import journal_source

    settings = site.settings()
    remember(settings, Memory("a fact worth keeping", agent="saver"), now=NOW, nearest=lambda text: [])
    hub = HubBackbone(settings.hub_path, "laptop")
    Sidecar(settings.state_path).close()  # the AgentDB file's, which names no agent
    journal_sidecar = Sidecar(settings.journal_state_path)
    journal_sidecar.bind("laptop", hub.description)
    try:
        SyncEngine(source=journal_source(settings.journal_path), sidecar=journal_sidecar, backbone=hub).run_pass()
    finally:
        journal_sidecar.close()
        hub.close()
    _, agents = site_beat(settings, NOW)
    assert agents["saver"]["lastEpisodeAt"] == int(NOW * 1000)
