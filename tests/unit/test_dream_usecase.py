"""The dream cycle as it runs (daemon/usecases/memory/dream.py): a real hub, the real local embedder, the
same fix in other words by two agents on two sites, a look-alike, an update; a dry run changes
nothing, a run hides and keeps, unmerge restores export exactly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.dream_store import push_items

from daemon.usecases.memory.dream import dream, unmerge
from sync.backbone.dreams import CONSOLIDATES, DREAM_FIELD, SUPERSEDES
from sync.backbone.hub import HubBackbone
from sync.search.embedders.local import LocalEmbedder

DAY_S = 86_400
T0 = 1_735_689_600  # seconds: the items' ts (fixed; the clock is an argument)
NOW_MS = (T0 + 30 * DAY_S) * 1000


def _push(hub: HubBackbone, rows: list[tuple[int, str, int]]) -> None:
    memories = [
        {
            "site": hub.site,
            "id": str(i),
            "text": text,
            "ts_s": T0 + day * DAY_S,
            "agent": "coder",
            "success": True,
            "reward": 0.5,
        }
        for i, text, day in rows
    ]
    hub.push(list(push_items(memories)), cursor=max(r[0] for r in rows))


def _export(hub: HubBackbone) -> list[dict[str, Any]]:
    return list(hub.episodes())


def test_a_night_folds_supersedes_keeps_and_unmerges(tmp_path: Path, local: LocalEmbedder) -> None:
    laptop, vm = HubBackbone(tmp_path / "hub.db", "laptop"), HubBackbone(tmp_path / "hub.db", "vm")
    try:
        _push(
            laptop,
            [
                (1, "Fixed E11000 duplicate key in users.insert by adding a unique index check", 1),
                (2, "ZQX_7781_A must stay disabled in production", 2),
                (3, "set pool_size to 20 for the api service", 3),
            ],
        )
        _push(
            vm,
            [
                (1, "E11000 duplicate key on users.insert: fixed it with a unique index check", 4),
                (2, "ZQX_7781_B must stay disabled in production", 5),
                (3, "raised pool_size from 20 to 30 for the api service", 9),
            ],
        )
        before = _export(laptop)

        dry = dream(laptop, local, now_ms=NOW_MS, run="test", dry_run=True)
        assert [(f.canonical, f.members) for f in dry.plan.folds] == [(("vm", "1"), (("laptop", "1"),))]
        assert [(s.newer, s.older) for s in dry.plan.supersedes] == [(("vm", "3"), ("laptop", "3"))]
        assert dry.recorded == ()
        assert _export(laptop) == before  # a dry run changes nothing
        assert dry.summary == "would fold 1 of 6 memories into 1 canonical one; would supersede 1"

        night = dream(laptop, local, now_ms=NOW_MS, run="dream@test on laptop")
        assert [(s.kind, s.canonical, s.members) for s in night.recorded] == [
            (CONSOLIDATES, ("vm", "1"), (("laptop", "1"),)),
            (SUPERSEDES, ("vm", "3"), (("laptop", "3"),)),
        ]
        marks = {(e["sourceSite"], e["sourceId"]): e.get(DREAM_FIELD, {}).get("role") for e in _export(vm)}
        assert marks == {
            ("laptop", "1"): "merged",
            ("laptop", "2"): None,
            ("laptop", "3"): "superseded",
            ("vm", "1"): None,
            ("vm", "2"): None,
            ("vm", "3"): None,
        }
        # A second night finds nothing new to do.
        again = dream(vm, local, now_ms=NOW_MS + DAY_S * 1000, run="next")
        assert again.recorded == ()

        for step in night.recorded:
            unmerge(vm, step.step_id, by="ann")
        assert _export(laptop) == before
        # What a person pulled apart stays apart.
        assert dream(laptop, local, now_ms=NOW_MS, run="after").recorded == ()
    finally:
        laptop.close()
        vm.close()
