"""Tier: unit. The forget use case (``daemon.usecases.memory.forget``) in this process: its plan (what a
text matches, hot and archived, on every site) and its effects, against a real embedded hub file and
a real qdrant-edge index in a tmp dir: the backbone (episodes gone, keys refused, the archive week
rewritten), the index (searches and files), this site's own files, and the report. No child process:
with no daemon holding the site, forget purges the index itself."""

from __future__ import annotations

import gzip
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
from conftest import SiteFiles
from harness.hub import push_episode

from daemon.alerts.messages import Message
from daemon.alerts.store import AlertStore, Queued
from daemon.control.lock import SiteLock
from daemon.search_worker.wiring import offline_layer
from daemon.site import duties_of
from daemon.usecases.memory.forget import IndexReach, KeyOutcome, Match, TextTakenOut, forget, matching, parse_keys
from sync.backbone.base import Outcome
from sync.backbone.hub import HubBackbone
from sync.push.sidecar import Quarantined, Sidecar
from sync.search.request import SearchRequest

SECRET = "the-launch-codes-are-0000"
KEPT = "rotate the TLS certificate on the edge proxy"
RECENT_TS = 1_790_000_000_000
OLD_TS = 1_735_689_600_000  # a week long past: archived below


def push(hub: HubBackbone, source_id: str, task: str, output: str, ts: int = RECENT_TS) -> list[Outcome]:
    return push_episode(hub, source_id, task=task, output=output, ts=ts)


def all_bytes(paths: list[Path]) -> bytes:
    """The files' bytes, read around memsync; a gzip file's (an archive week) decompressed too."""
    found: list[bytes] = []
    for path in paths:
        data = path.read_bytes()
        found += [data, gzip.decompress(data) if data[:2] == b"\x1f\x8b" else b""]
    return b"".join(found)  # joined once: adding to one bytes object copies it every time


def files_under(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


def hub_files(hub: Path) -> list[Path]:
    """The hub, its -wal and -shm, its archive folder (``hub.archive/<site>/<week>...`` for
    ``hub.db``) and the alerts file beside it (``hub.alerts.db``)."""
    return [p for p in files_under(hub.parent) if p.relative_to(hub.parent).parts[0].startswith(f"{hub.stem}.")]


def hot_keys(hub: HubBackbone) -> set[str]:
    return {f"{e['sourceSite']}:{e['sourceId']}" for e in hub.episodes(None)}


@pytest.fixture
def site(site_files: Callable[..., SiteFiles], tmp_path: Path) -> SiteFiles:
    """This site (laptop) with its search index on, beside another site (vm) on the same hub; each
    has episodes that hold the secret, the vm's oldest one archived; the index caught up."""
    site = site_files(warm=f'path = "{tmp_path / "warm"}"\n')
    with closing(HubBackbone(site.hub, "vm")) as vm:
        push(vm, "1", "an old plan", f"plan for {SECRET}", ts=OLD_TS)
        push(vm, "2", "check the backups", "fine")
        assert vm.archive_older_than(1_750_000_000_000, 100) == 1  # vm:1 goes to its week's gzip file
    with closing(HubBackbone(site.hub, "laptop")) as laptop:
        push(laptop, "1", KEPT, "fine")
        push(laptop, "2", "brief the team", f"the launch is {SECRET}")
        push(laptop, "3", "write the release notes", "fine")
        with offline_layer(site.settings(), laptop, leases=laptop) as layer:
            assert layer.catch_up().embedded == 5  # the archived one too, marked archived
    return site


def test_the_plan_finds_the_text_hot_and_archived_on_every_site(site: SiteFiles) -> None:
    with closing(HubBackbone(site.hub, "laptop")) as hub:
        assert matching(hub, SECRET) == [Match("laptop", "2", "brief the team"), Match("vm", "1", "an old plan")]
        assert matching(hub, "nowhere-to-be-found") == []
        with pytest.raises(ValueError, match="at least 4 characters"):
            matching(hub, "the")


def test_keys_are_site_and_id() -> None:
    assert parse_keys(["laptop:12", "vm:a:b"]) == [("laptop", "12"), ("vm", "a:b")]
    for wrong in ("laptop", ":12", "laptop:"):
        with pytest.raises(ValueError, match="is not SITE:ID"):
            parse_keys([wrong])


def test_forgetting_what_the_plan_found_takes_it_out_of_every_file(site: SiteFiles) -> None:
    settings = site.settings()
    sidecar = Sidecar(settings.state_path)
    sidecar.record([], [Quarantined(9, "h9", "read", "bad row", {"output": f"draft of {SECRET}"})], [])
    sidecar.close()
    alerts = AlertStore(settings.alerts_path)
    alerts.enqueue(Queued("digest:2026-01-01", Message(f"top tasks: {SECRET}, ordinary work")))
    alerts.close()
    warm_files = settings.warm_dir
    # What forgetting must take away: the hub's and its archive week's bytes, the index's files.
    assert SECRET.encode() in all_bytes([p for p in hub_files(site.hub) if p.name.endswith(".jsonl.gz")])
    assert SECRET.encode() in all_bytes(files_under(warm_files))

    with closing(HubBackbone(site.hub, "laptop")) as hub:
        keys = [m.key for m in matching(hub, SECRET)] + [("laptop", "99")]
        report = forget(settings, hub, duties_of(settings, hub), keys, text=SECRET, now=time.time())

        assert report.where == "the hub file"
        assert report.forgotten == [KeyOutcome("laptop:2", None), KeyOutcome("vm:1", report.forgotten[1].archive_week)]
        assert report.forgotten[1].archive_week is not None  # the vm's week file, rewritten without it
        assert report.unknown == [KeyOutcome("laptop:99", None)]
        assert (report.refused, report.wal_left) == ([], None)
        assert sorted(report.elsewhere, key=lambda t: t.file) == sorted(
            [TextTakenOut(str(settings.state_path), 1), TextTakenOut(str(settings.alerts_path), 1)],
            key=lambda t: t.file,
        )
        # No daemon holds the site: forget caught the index up itself, which purged its files.
        assert report.indexes == [IndexReach("laptop", running=False, purged=True)]
        assert report.complete

        assert hot_keys(hub) == {"laptop:1", "laptop:3", "vm:2"}
        assert list(hub.archived_episodes(None)) == []
        assert push(hub, "2", "brief the team", "written again") == [Outcome.REJECTED]  # the tombstone
        with offline_layer(settings, hub, leases=hub) as layer:
            hits = layer.search(SearchRequest("launch brief team release notes", limit=10, mode="bm25"))
            assert {h.source_id for h in hits} <= {"1", "3"}
            assert layer.search(SearchRequest(KEPT, limit=1, mode="bm25"))[0].source_id == "1"

    assert SECRET.encode() not in all_bytes(hub_files(site.hub) + files_under(warm_files))
    assert b"fine" in all_bytes(files_under(warm_files))  # the index's files hold payload text in the clear
    assert SECRET.encode() not in all_bytes([settings.state_path, settings.alerts_path])


def test_forgetting_again_finds_nothing_new_and_reports_it(site: SiteFiles) -> None:
    settings = site.settings()
    with closing(HubBackbone(site.hub, "laptop")) as hub:
        first = forget(settings, hub, duties_of(settings, hub), [("laptop", "2")], now=time.time())
        again = forget(settings, hub, duties_of(settings, hub), [("laptop", "2")], now=time.time())
    assert first.forgotten == [KeyOutcome("laptop:2", None)]
    assert (again.forgotten, again.unknown, again.indexes) == ([], [KeyOutcome("laptop:2", None)], [])
    assert again.complete


def test_a_daemon_holding_the_site_but_not_answering_leaves_the_purge_owed(site: SiteFiles) -> None:
    settings = site.settings()
    with SiteLock(settings.lock_path, settings.site.name), closing(HubBackbone(site.hub, "laptop")) as hub:
        report = forget(settings, hub, duties_of(settings, hub), [("laptop", "2")], purge_timeout=1.0, now=time.time())
    [mine] = report.indexes
    assert (mine.site, mine.running, mine.purged) == ("laptop", True, False)
    assert mine.problem is not None
    assert "no daemon is listening" in mine.problem
    assert report.forgotten == [KeyOutcome("laptop:2", None)]
    assert not report.complete  # the CLI exits 1: its daemon finishes it, or a second forget
