"""The journal of saved memories as a site's second source, through the backbone conformance
suite's sites: the same engine over the journal gives the same results on the embedded hub and on
Convex (the real cloud_functions in the local server): keys ``m<n>`` beside the AgentDB file's,
each once, the site's cursor the AgentDB file's, a forgotten memory refused when pushed again."""

from __future__ import annotations

from pathlib import Path

from test_backbone_conformance import Opened, OpenSite, open_site

from sync.push.engine import SyncEngine
from sync.push.sidecar import Sidecar
from sync.source.journal.source import journal_source
from sync.source.journal.store import Entry, Journal

__all__ = ["open_site"]  # the suite's fixture, one site a backbone

AT = 1_800_000_000_000


def _engine(journal: Path, state: Path, site: Opened) -> SyncEngine:
    backbone = site.backbone
    sidecar = Sidecar(state)
    sidecar.bind(backbone.site, backbone.description)
    return SyncEngine(source=journal_source(journal), sidecar=sidecar, backbone=backbone)


def test_the_journal_is_pushed_under_its_own_keys_once_on_both(open_site: OpenSite, tmp_path: Path) -> None:
    laptop = open_site("laptop")
    journal = tmp_path / "laptop.journal.db"
    with Journal(journal) as saved:
        for n in range(3):
            saved.append(Entry(session_id="memories:coder", task=f"memory {n}", created_ms=AT + n, tags=("t",)))
    first = _engine(journal, tmp_path / "a.state.db", laptop).run_pass()
    assert (first.inserted, first.backlog) == (3, 0)
    # A lost sidecar: one idempotent re-push, nothing twice.
    again = _engine(journal, tmp_path / "b.state.db", laptop).run_pass()
    assert (again.inserted, again.updated, again.unchanged) == (0, 0, 3)
    stored = {e["sourceId"]: e for e in laptop.backbone.episodes(laptop.site)}
    assert sorted(stored) == ["m1", "m2", "m3"]
    assert stored["m2"]["task"] == "memory 1"
    assert stored["m2"]["tags"] == ["t"]
    cursor = laptop.backbone.site_cursor()
    assert cursor is not None
    assert cursor.last_synced_id == 0, "the site's cursor stays the AgentDB file's"
    assert cursor.total_synced == 3

    # Forgotten on the backbone while the journal still holds it (a restored backup, a journal
    # another process had not yet emptied): the key is refused, the memory quarantined, not back.
    laptop.backbone.forget("m2")
    report = _engine(journal, tmp_path / "c.state.db", laptop).run_pass()
    assert (report.inserted, report.quarantined) == (0, 1)
    assert sorted(e["sourceId"] for e in laptop.backbone.episodes(laptop.site)) == ["m1", "m3"]
