"""The dream job with real daemons, on the embedded hub and on Convex (a local deployment of the
test's own): two sites, each with its search index on, run the dream once a slot between them
under the backbone's lease, and what it hid is hidden for both; the planted duplicate written on
another site is folded, its look-alike is not. A third site, stopped while the dream runs, sees
the fold when it comes back: its index takes the step's mark from the change feed, so the hidden
memory leaves its default search and its context block and stays there with ``--include-merged``.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import SiteFiles, memsync, wait_for, wait_started, warm_section, write_config
from harness.dream_store import push_texts, push_texts_to

from sync.backbone.dreams import DREAM_FIELD
from sync.backbone.hub import HubBackbone

Daemons = Callable[..., subprocess.Popen[bytes]]
T0 = 1_735_689_600  # seconds: the planted memories' time, long settled
TEXTS = (
    "Fixed E11000 duplicate key in users.insert by adding a unique index check",
    "E11000 duplicate key on users.insert: fixed it with a unique index check",
    "Fixed E11001 duplicate key in users.insert by adding a unique index check",
)
QUERY = "E11000 duplicate key in users.insert unique index check"
REF = re.compile(r"\[(\w+#\d+) ·")  # a memory's reference in a context block
DREAM_EVERY = "[jobs]\nheartbeat_interval = 1\n[jobs.dream]\nevery = 3\nlease = 60\n"


class Fleet:
    """The backbone the sites share: the embedded hub under ``tmp_path``, or a Convex deployment of
    the test's own (a search index on the shared one would catch up every other test's episodes).
    ``open(site)`` is a client acting for a site, as the tests read what the daemons wrote."""

    def __init__(self, request: pytest.FixtureRequest, tmp_path: Path) -> None:
        self.kind = str(request.param)
        self.hub = tmp_path / "hub.db"
        self.secrets: dict[str, str] = {}
        if self.kind == "convex":
            self.convex = request.getfixturevalue("own_convex")

    def env(self, name: str) -> dict[str, str]:
        if self.kind != "convex":
            return {}
        if name not in self.secrets:
            self.secrets[name] = self.convex.register_site(name)
        return {"MEMSYNC_BACKBONE__SITE_SECRET": self.secrets[name]}

    def site(self, root: Path, name: str, agentdb: Path, *, extra: str, warm: str) -> SiteFiles:
        self.env(name)
        if self.kind == "convex":
            backbone = f'url = "{self.convex.url}"\n'
            return write_config(root, name, agentdb, self.hub, kind="convex", backbone=backbone, extra=extra, warm=warm)
        return write_config(root, name, agentdb, self.hub, extra=extra, warm=warm)

    @contextmanager
    def open(self, name: str) -> Iterator[Any]:
        if self.kind == "convex":
            from sync.backbone.convex import ConvexBackbone

            self.env(name)
            backbone: Any = ConvexBackbone(self.convex.url, name, self.secrets[name])
        else:
            backbone = HubBackbone(self.hub, name)
        try:
            yield backbone
        finally:
            backbone.close()


@pytest.fixture(params=["local", "convex"])
def fleet(request: pytest.FixtureRequest, tmp_path: Path) -> Fleet:
    return Fleet(request, tmp_path)


def _plant(backbone: Any) -> None:
    """Three memories a third site (a journal, say) pushes: the same fix in other words, and a
    look-alike of it with another identifier."""
    push_texts_to(backbone, "notes", TEXTS, T0)


def _found(site: SiteFiles, env: dict[str, str], *flags: str) -> dict[str, Any]:
    """The planted memories a site's search finds (every result shown, none collapsed), by id."""
    done = memsync("search", QUERY, "--json", "--all", "--floor", "0", *flags, "--config", str(site.config), env=env)
    assert done.returncode == 0, done.stderr
    return {str(r["sourceId"]): r for r in json.loads(done.stdout)["results"] if r["sourceSite"] == "notes"}


def _context_refs(site: SiteFiles, env: dict[str, str]) -> set[str]:
    done = memsync("context", QUERY, "--json", "--timeout", "60", "--config", str(site.config), env=env)
    assert done.returncode == 0, done.stderr
    return set(REF.findall(json.loads(done.stdout)["block"]))


def test_two_daemons_run_the_dream_once_a_slot_and_an_offline_site_sees_it(
    fleet: Fleet, tmp_path: Path, make_agentdb: Callable[..., Path], daemons: Daemons, short_dir: Path
) -> None:
    with fleet.open("notes") as notes:
        _plant(notes)
    tag = uuid.uuid4().hex[:6]  # socket names of this test's own

    def site(name: str, seed: int, extra: str) -> SiteFiles:
        warm = warm_section(tmp_path / name, short_dir, f"{name}-{tag}")
        return fleet.site(tmp_path / name, name, make_agentdb(5, seed=seed, name=f"{name}.db"), extra=extra, warm=warm)

    def start(s: SiteFiles) -> subprocess.Popen[bytes]:
        proc = daemons(s.config, s.log, env=fleet.env(s.name))
        wait_started(s, proc, s.log)
        return proc

    def stop(proc: subprocess.Popen[bytes]) -> None:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0

    # The desk runs no dream of its own (its index would have the fold at once): it indexes the
    # three memories, then is offline for the night.
    desk = site("desk", 5, "[jobs]\nheartbeat_interval = 1\n")
    desk_env = fleet.env("desk")
    desk_proc = start(desk)
    wait_for(lambda: len(_found(desk, desk_env)) == 3, timeout=180, what="the desk's index of the planted memories")
    stop(desk_proc)

    sites = [site(name, seed, DREAM_EVERY) for name, seed in (("laptop", 1), ("vm", 3))]
    procs = [start(s) for s in sites]

    def runs() -> list[Any]:
        with fleet.open("laptop") as backbone:
            return list(backbone.job_runs("dream", 500))

    wait_for(lambda: len({r.slot for r in runs() if r.outcome == "ok"}) >= 2, timeout=240, what="two dream slots")
    for proc in procs:
        stop(proc)
    every = runs()
    per_slot = Counter(r.slot for r in every if r.outcome in ("ok", "running", "failed"))
    assert max(per_slot.values()) == 1, per_slot
    assert all(r.outcome == "ok" for r in every), [r for r in every if r.outcome != "ok"]
    assert {r.site for r in every} <= {"laptop", "vm"}

    with fleet.open("notes") as backbone:
        marks = {e["sourceId"]: e.get(DREAM_FIELD) for e in backbone.episodes(site="notes")}
        steps = backbone.dream_steps()
    assert set(marks) == {"1", "2", "3"}  # nothing deleted
    hidden = [sid for sid, mark in marks.items() if mark is not None]
    assert len(hidden) == 1, marks
    assert hidden[0] in {"1", "2"}, marks  # the duplicate, never the look-alike "3"
    assert marks["3"] is None
    folding = [s for s in steps if s.canonical[0] == "notes"]
    assert len(folding) == 1
    assert folding[0].run.startswith("dream@")  # by one scheduled run, named with its slot and site
    assert folding[0].run.endswith((" on laptop", " on vm"))

    # The desk comes back: its index catches up from the feed and hides what the night folded.
    (gone,) = hidden
    desk_proc = start(desk)
    wait_for(lambda: set(_found(desk, desk_env)) == {"1", "2", "3"} - {gone}, timeout=180, what="the desk's catch-up")
    merged = _found(desk, desk_env, "--include-merged")
    assert set(merged) == {"1", "2", "3"}
    assert merged[gone]["dream"] == "merged"
    assert all("dream" not in r or r["dream"] is None for k, r in merged.items() if k != gone)
    refs = _context_refs(desk, desk_env)
    assert f"notes#{gone}" not in refs
    assert refs & {f"notes#{k}" for k in {"1", "2"} - {gone}}, refs
    stop(desk_proc)


def test_the_commands_dry_run_run_list_and_unmerge(tmp_path: Path, site_files: Callable[..., Any]) -> None:
    """memsync dream --dry-run changes nothing; memsync dream records; dream steps lists; unmerge
    undoes it and export is as before; a second unmerge of it says so in one sentence."""
    site = site_files("laptop")
    push_texts(site.hub, "notes", TEXTS, T0)
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
