"""The dream cycle's records (``sync.backbone.dreams.Dreams``) through the backbone conformance
suite's sites: on the embedded hub and on Convex (the real cloud_functions in the local server), a
step hides its members everywhere (export, the feed), keeps every episode, and its undo restores
export exactly."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

import pytest
from test_backbone_conformance import OpenSite, _now_ms, item, open_site

from sync.backbone.dreams import CONSOLIDATES, DREAM_FIELD, SUPERSEDES, DreamLink, Dreams, DreamStep, NewStep
from sync.errors import BackboneConflict, BackboneNotFound, BackboneRejected

__all__ = ["open_site"]  # the suite's fixture, one site a backbone


def _steps(opened: Any, *, standing_only: bool = False) -> list[DreamStep]:
    """This test's steps (a shared Convex holds every test's)."""
    steps = cast(Dreams, opened.backbone).dream_steps(standing_only=standing_only)
    return [s for s in steps if opened.ours(s.canonical[0])]


def _export(*opened: Any) -> list[dict[str, Any]]:
    """Each site's export (on Convex a site exports its own), one after the other."""
    return [e for o in opened for e in o.backbone.episodes(site=o.site)]


def test_a_fold_and_a_supersede_hide_keep_and_undo_exactly(open_site: OpenSite) -> None:
    laptop, vm = open_site("laptop"), open_site("vm")
    laptop.backbone.push([item(1, task="E11000 fix"), item(2, task="E11000 fix again")], cursor=2)
    vm.backbone.push([item(1, task="E11000 retry"), item(2, task="pool_size 20"), item(3, task="pool_size 30")], 3)
    dreams = cast(Dreams, laptop.backbone)
    before = _export(laptop, vm)
    feed_before = laptop.backbone.feed_end()
    today = datetime.fromtimestamp(_now_ms() / 1000, UTC).strftime("%Y-%m-%d")
    digest_before = laptop.sweeps.build_digest(today, _now_ms())["dream"]

    a, b, c = (laptop.site, "1"), (laptop.site, "2"), (vm.site, "1")
    old, new = (vm.site, "2"), (vm.site, "3")
    steps = dreams.record_dream(
        [
            NewStep(CONSOLIDATES, c, (a, b), "3 alike"),
            NewStep(SUPERSEDES, new, (old,), "pool_size: 20 -> 30"),
        ],
        run="dream@2026-01-01T02:00:00Z on laptop",
    )
    assert [(s.kind, s.canonical, s.members, s.standing) for s in steps] == [
        (CONSOLIDATES, c, (a, b), True),
        (SUPERSEDES, new, (old,), True),
    ]
    fold, supersede = steps
    # The digest of the day says what the dream folded and superseded (a shared Convex: the change).
    digest_after = laptop.sweeps.build_digest(today, _now_ms())["dream"]
    assert {k: digest_after[k] - digest_before[k] for k in digest_after} == {"folds": 1, "folded": 2, "superseded": 1}

    after = _export(laptop, vm)
    assert len(after) == len(before)  # nothing deleted
    marks = {(e["sourceSite"], e["sourceId"]): e.get(DREAM_FIELD) for e in after}
    assert marks[a] == {"role": "merged", "by": f"{c[0]}:{c[1]}", "step": fold.step_id}
    assert marks[old] == {"role": "superseded", "by": f"{new[0]}:{new[1]}", "step": supersede.step_id}
    assert marks[c] is None
    assert marks[new] is None
    assert [{k: v for k, v in e.items() if k != DREAM_FIELD} for e in after] == before  # only the mark
    # Every index sees the marks: a change each in the feed.
    changed = {(ch.site, ch.source_id): ch for ch in laptop.backbone.changes(feed_before, 500)}
    assert {a, b, old} <= set(changed)
    assert changed[b].episode is not None
    assert dict(changed[b].episode or {})[DREAM_FIELD]["role"] == "merged"

    assert dreams.dream_links(c) == [
        DreamLink(c, a, CONSOLIDATES, fold.step_id),
        DreamLink(c, b, CONSOLIDATES, fold.step_id),
    ]
    assert dreams.dream_links(old) == [DreamLink(new, old, SUPERSEDES, supersede.step_id)]
    listed = _steps(vm)
    assert [s.step_id for s in listed] == [supersede.step_id, fold.step_id]  # newest first, any site's

    # A memory already hidden is not folded again; the step is left out.
    assert dreams.record_dream([NewStep(CONSOLIDATES, new, (a,), "again")], run="r") == []

    undone = cast(Dreams, vm.backbone).undo_dream_step(fold.step_id, by="ann")
    assert (undone.standing, undone.undone_by) == (False, "ann")
    with pytest.raises(BackboneConflict):
        dreams.undo_dream_step(fold.step_id, by="ann")
    with pytest.raises(BackboneNotFound):
        dreams.undo_dream_step("999999", by="ann")
    dreams.undo_dream_step(supersede.step_id, by="ann")
    assert _export(laptop, vm) == before  # exactly as it was
    assert dreams.dream_links(c) == []
    assert [s.standing for s in _steps(laptop)] == [False, False]  # the records stay
    assert _steps(laptop, standing_only=True) == []


def test_bad_steps_are_refused_whole(open_site: OpenSite) -> None:
    laptop = open_site("laptop")
    laptop.backbone.push([item(1), item(2)], cursor=2)
    dreams = cast(Dreams, laptop.backbone)
    a, b = (laptop.site, "1"), (laptop.site, "2")
    with pytest.raises(BackboneRejected, match="members other than its canonical"):
        dreams.record_dream([NewStep(CONSOLIDATES, a, (a,), "self")], run="r")
    with pytest.raises(BackboneRejected, match="unknown dream step kind"):
        dreams.record_dream([NewStep("merges", a, (b,), "?")], run="r")
    # A memory the backbone does not hold (forgotten meanwhile) leaves its step out.
    assert dreams.record_dream([NewStep(CONSOLIDATES, a, ((laptop.site, "404"),), "gone")], run="r") == []
    assert _steps(laptop) == []


def test_forgetting_a_canonical_shows_its_members_again(open_site: OpenSite) -> None:
    laptop = open_site("laptop")
    laptop.backbone.push([item(1), item(2)], cursor=2)
    dreams = cast(Dreams, laptop.backbone)
    a, b = (laptop.site, "1"), (laptop.site, "2")
    (step,) = dreams.record_dream([NewStep(CONSOLIDATES, a, (b,), "2 alike")], run="r")
    laptop.backbone.forget("1")
    (left,) = list(laptop.backbone.episodes(site=laptop.site))
    assert left["sourceId"] == "2"
    assert DREAM_FIELD not in left
    assert dreams.dream_links(b) == []
    assert [(s.step_id, s.undone_by) for s in _steps(laptop)] == [(step.step_id, "forget")]
