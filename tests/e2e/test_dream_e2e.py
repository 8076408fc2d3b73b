"""The dream job with real daemons: two sites on one hub, each with its search index on, run the
dream once a slot between them (the backbone's lease), and what it hid is hidden for both; the
planted duplicate written on the other site is folded, its look-alike is not."""

from __future__ import annotations

import json
import signal
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import wait_for, wait_started, warm_section, write_config
from harness.dream_store import push_texts

from sync.backbone.dreams import DREAM_FIELD
from sync.backbone.hub import HubBackbone

Daemons = Callable[..., subprocess.Popen[bytes]]
T0 = 1_735_689_600  # seconds: the planted memories' time, long settled


def _runs(hub: Path) -> list[Any]:
    backbone = HubBackbone(hub, "reader", create=False)
    try:
        return backbone.job_runs("dream", 500)
    finally:
        backbone.close()


def _plant(hub: Path) -> None:
    """Two memories a third site (a journal, say) pushed: the same fix in other words, and a
    look-alike of it with another identifier."""
    texts = [
        "Fixed E11000 duplicate key in users.insert by adding a unique index check",
        "E11000 duplicate key on users.insert: fixed it with a unique index check",
        "Fixed E11001 duplicate key in users.insert by adding a unique index check",
    ]
    push_texts(hub, "notes", texts, T0)


def test_two_daemons_run_the_dream_once_a_slot_and_fold_the_planted_duplicate(
    tmp_path: Path, make_agentdb: Callable[..., Path], daemons: Daemons, short_dir: Path
) -> None:
    hub = tmp_path / "hub.db"
    _plant(hub)
    jobs = "[jobs]\nheartbeat_interval = 1\n[jobs.dream]\nevery = 3\nlease = 60\n"
    sites = [
        write_config(
            tmp_path / name,
            name,
            make_agentdb(5, seed=seed, name=f"{name}.db"),
            hub,
            extra=jobs,
            warm=warm_section(tmp_path / name, short_dir, name),
        )
        for name, seed in (("laptop", 1), ("vm", 3))
    ]
    procs = [daemons(s.config, tmp_path / f"{s.name}.log") for s in sites]
    for site, proc in zip(sites, procs, strict=True):
        wait_started(site, proc, tmp_path / f"{site.name}.log")

    def two_slots() -> bool:
        return len({r.slot for r in _runs(hub) if r.outcome == "ok"}) >= 2

    wait_for(two_slots, timeout=240, what="two slots of the dream job")
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    every = _runs(hub)
    per_slot = Counter(r.slot for r in every if r.outcome in ("ok", "running", "failed"))
    assert max(per_slot.values()) == 1, per_slot
    assert all(r.outcome == "ok" for r in every), [r for r in every if r.outcome != "ok"]

    backbone = HubBackbone(hub, "reader", create=False)
    try:
        marks = {e["sourceId"]: e.get(DREAM_FIELD) for e in backbone.episodes(site="notes")}
        steps = backbone.dream_steps()
    finally:
        backbone.close()
    assert set(marks) == {"1", "2", "3"}  # nothing deleted
    hidden = [sid for sid, mark in marks.items() if mark is not None]
    assert len(hidden) == 1, marks
    assert hidden[0] in {"1", "2"}, marks  # the duplicate, never the look-alike "3"
    assert marks["3"] is None
    folding = [s for s in steps if s.canonical[0] == "notes"]
    assert len(folding) == 1
    assert folding[0].run.startswith("dream@")  # by one scheduled run, named with its slot and site


def test_the_commands_dry_run_run_list_and_unmerge(tmp_path: Path, site_files: Callable[..., Any]) -> None:
    """memsync dream --dry-run changes nothing; memsync dream records; dream steps lists; unmerge
    undoes it and export is as before; a second unmerge of it says so in one sentence."""
    from conftest import memsync

    site = site_files("laptop")
    _plant(site.hub)
    config = ("--config", str(site.config))
    before = memsync("export", *config).stdout

    dry = memsync("dream", "--dry-run", "--json", *config)
    assert dry.returncode == 0, dry.stderr
    planned = json.loads(dry.stdout)
    assert [f["members"] for f in planned["folds"]] in ([["notes:1"]], [["notes:2"]])
    assert memsync("export", *config).stdout == before

    ran = memsync("dream", *config)
    assert ran.returncode == 0, ran.stderr
    assert "folded 1 of 3 memories into 1 canonical one" in ran.stdout + ran.stderr  # said on stderr, as every command
    listed = json.loads(memsync("dream", "steps", "--json", *config).stdout)
    assert [(s["kind"], s["undoneAt"]) for s in listed] == [("consolidates", None)]
    assert memsync("export", *config).stdout != before

    undone = memsync("unmerge", listed[0]["id"], *config)
    assert undone.returncode == 0, undone.stderr
    assert memsync("export", *config).stdout == before
    again = memsync("unmerge", listed[0]["id"], *config)
    assert again.returncode != 0
    assert "undone already" in again.stderr
    assert "Traceback" not in again.stderr
