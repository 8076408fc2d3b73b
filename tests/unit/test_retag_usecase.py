"""``daemon.usecases.memory.retag``: a saved memory's type or tags corrected in its site's journal,
as an edit the engine pushes under the same key (same identity, new content); what cannot be
corrected here (another site's memory, an agent's episode, one not in the journal) is said."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from conftest import SiteFiles

from daemon.usecases.memory.remember import Memory, remember
from daemon.usecases.memory.retag import NotCorrectable, correctable, retag
from sync.episode import Attribution, Episode
from sync.source.agentdb.rows import convert
from sync.source.journal.store import Journal
from sync.source.types import memory_type

NOW = 1_800_000_000.0


@pytest.fixture
def site(site_files: Callable[..., SiteFiles]) -> SiteFiles:
    return site_files("laptop", extra='[site.defaults]\nagent_name = "coder"\n')


def saved(site: SiteFiles, text: str = "the billing cron runs at 02:00 UTC", **fields: object) -> str:
    done = remember(site.settings(), Memory(text, **fields), now=NOW, nearest=lambda _: [])  # type: ignore[arg-type]
    return done.key


def episode(site: SiteFiles, local_id: int) -> Episode:
    with Journal(site.settings().journal_path) as journal:
        row = journal.get(local_id)
    assert row is not None
    converted = convert(row, Attribution())
    assert isinstance(converted, Episode)
    return converted


def test_a_correction_is_an_edit_of_the_same_memory(site: SiteFiles) -> None:
    key = saved(site, tags=["ops"], project="shop")
    before = episode(site, 1)
    done = retag(site.settings(), key, memory_type="decision", tags=["billing", "cron"], by="ana", clock=lambda: NOW)
    assert done.changed
    assert (done.memory_type, done.was_type) == ("decision", None)
    assert done.tags == ("billing", "cron", "project:shop")
    assert "corrected laptop:m1: type decision (was inferred); tags billing, cron, project:shop" in done.message
    after = episode(site, 1)
    assert after.identity_hash == before.identity_hash, "the same memory: pushed as an edit of laptop:m1"
    assert after.content_hash != before.content_hash, "new content: the engine pushes it again"
    assert after.fields["tags"] == ["billing", "cron", "project:shop"]
    assert memory_type(after.fields).name == "decision"
    assert memory_type(after.fields).given
    assert after.fields["metadata"]["corrections"][0]["by"] == "ana"


def test_a_bare_id_and_site_hash_id_name_this_sites_memory(site: SiteFiles) -> None:
    saved(site)
    assert retag(site.settings(), "m1", memory_type="warning", tags=None, by="a", clock=lambda: NOW).changed
    again = retag(site.settings(), "laptop#m1", memory_type="warning", tags=None, by="a", clock=lambda: NOW)
    assert not again.changed
    assert "nothing changed" in again.message
    with Journal(site.settings().journal_path) as journal:
        row = journal.get(1)
    assert row is not None
    assert len(json.loads(row["metadata"])["corrections"]) == 1


@pytest.mark.parametrize(
    ("key", "error", "said"),
    [
        ("laptop:12", NotCorrectable, "an agent's own episode"),
        ("vm:m1", NotCorrectable, "was saved on vm"),
        ("laptop:m9", LookupError, "not in this site's journal"),
    ],
)
def test_what_this_site_cannot_correct_is_said(site: SiteFiles, key: str, error: type[Exception], said: str) -> None:
    saved(site)
    with pytest.raises(error, match=said):
        retag(site.settings(), key, memory_type="warning", tags=None, by="a", clock=lambda: NOW)


def test_correctable_says_why_not_or_nothing(site: SiteFiles) -> None:
    saved(site)
    assert correctable(site.settings(), "laptop", "m1") is None
    assert "was saved on vm" in str(correctable(site.settings(), "vm", "m1"))
    assert "agent's own episode" in str(correctable(site.settings(), "laptop", "3"))
