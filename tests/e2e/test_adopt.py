"""``memsync adopt`` end to end: a local Convex (tests/convex_local) holding the seed design's
documents (tests/data/seed), the command run as a child process with the deploy key, then two
sites' syncs from real AgentDB files holding the seed's episodes for their site plus new ones:
every episode once, the seed's found unchanged (one edited since: updated), the new inserted; and
the rollback back to the seed's shape."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    AgentProcess,
    SiteFiles,
    episode,
    memsync,
    start_daemon,
    status_json,
    stop_daemon,
    wait_for,
    wait_started,
    write_config,
)
from convex_fixtures import LocalConvex, running_local_convex
from harness.daemon import log_tail, logged

from daemon.duties import OPERATOR_KEY_ENV
from daemon.usecases.fleet.adopt import NOT_CONVEX

SEED = Path(__file__).parents[1] / "data" / "seed"
SEED_EPISODES: list[dict[str, Any]] = json.loads((SEED / "episodes.json").read_text(encoding="utf-8"))
EDITED = ("laptop", "4")  # its AgentDB row was edited after the seed's script last pushed it

pytestmark = pytest.mark.slow


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def convex() -> Iterator[LocalConvex]:
    """A deployment of its own: the seed's documents must not meet other tests' sites."""
    with running_local_convex() as server:
        assert server.load_seed() == {
            "episodes": 7,
            "approvals": 2,
            "tasks": 4,
            "agents": 2,
            "syncCursors": 2,
            "collaborators": 2,
        }
        yield server


def tables(convex: LocalConvex) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = json.loads(convex.dump().split(b"\n", 1)[0])
    return found


def agentdb_for(site: str, path: Path, agents: Callable[[Path], AgentProcess], new: int) -> None:
    """The AgentDB file the seed's script read for ``site`` (its episodes, by the same ids and
    times), then ``new`` episodes the seed never saw; the edited one changed after the seed's push."""
    agent = agents(path)
    mine = [e for e in SEED_EPISODES if e["sourceSite"] == site]
    for seed in mine:
        fields = {k: seed[k] for k in ("sessionId", "task", "input", "output", "critique", "reward", "success", "tags")}
        local_id = agent.store(episode(0, **fields, metadata=seed["metadata"]), save=False)
        assert str(local_id) == seed["sourceId"]
        # The package stamps now; the seed's script pushed the row's own times.
        agent.exec(
            f"UPDATE episodes SET ts = {seed['ts']}, created_at = {seed['createdAt'] // 1000} WHERE id = {local_id}",
            save=False,
        )
    if site == EDITED[0]:
        agent.exec(f"UPDATE episodes SET output = 'edited after the seed pushed it' WHERE id = {EDITED[1]}", save=False)
    for i in range(new):
        agent.store(episode(100 + i, sessionId=f"{site}-new", task=f"new work {i} on {site}"), save=False)
    agent.save()
    agent.close()


def site_config(
    root: Path, site: str, convex: LocalConvex, agents: Callable[[Path], AgentProcess], new: int
) -> SiteFiles:
    agentdb = root / f"{site}.agentdb.db"
    agentdb_for(site, agentdb, agents, new)
    return write_config(
        root / "sites", site, agentdb, root / "unused-hub.db", kind="convex", backbone=f'url = "{convex.url}"\n'
    )


def as_site(secret: str) -> dict[str, str]:
    return {"MEMSYNC_BACKBONE__SITE_SECRET": secret}


def summary_counts(stderr: str) -> dict[str, int]:
    found = re.search(r"(\d+) new, (\d+) updated, (\d+) already there", flat(stderr))
    assert found is not None, stderr
    return dict(zip(("new", "updated", "unchanged"), map(int, found.groups()), strict=True))


def test_adopt_then_two_sites_sync_every_episode_once(
    convex: LocalConvex, agents: Callable[[Path], AgentProcess], tmp_path: Path
) -> None:
    laptop = site_config(tmp_path, "laptop", convex, agents, new=2)
    vm = site_config(tmp_path, "vm", convex, agents, new=1)
    operator = {OPERATOR_KEY_ENV: convex.admin_key}

    # --check runs on a site (laptop, registered); it says which others need a secret, and changes nothing.
    before = tables(convex)
    secrets = {"laptop": convex.register_site("laptop")}
    env = {**operator, "MEMSYNC_BACKBONE__SITE_SECRET": secrets["laptop"]}
    check = memsync("adopt", "--check", "-c", str(laptop.config), env=env)
    assert check.returncode == 0, check.stderr
    said = flat(check.stderr)
    assert "episodes: 7 seed" in said
    assert "would adopt 7 seed episodes into memsync's shape, 3 of them keeping their Qdrant point id" in said
    assert "would give 4 tasks their site" in said
    assert "site 'vm' has seed episodes but no memsync secret yet" in said
    assert "site 'laptop' has" not in said
    after_check = tables(convex)
    assert after_check["episodes"] == before["episodes"]
    assert after_check["tasks"] == before["tasks"]

    # A push before adoption is refused with the step to take, not taken as new.
    early = memsync(
        "sync", "--once", "--config", str(laptop.config), env={"MEMSYNC_BACKBONE__SITE_SECRET": secrets["laptop"]}
    )
    assert early.returncode == 78, early.stderr
    assert "run `memsync adopt`" in flat(early.stderr)

    adopted = memsync("adopt", "-c", str(laptop.config), "--batch", "3", env=env)
    assert adopted.returncode == 0, adopted.stderr
    said = flat(adopted.stderr)
    assert "adopted 7 of 7 episodes" in said
    assert "adopted 7 seed episodes; 3 tasks given their site, 1 with no site to give" in said
    again = memsync("adopt", "-c", str(laptop.config), env=env)
    assert again.returncode == 0, again.stderr
    assert "adopted 0 seed episodes" in flat(again.stderr)

    secrets["vm"] = convex.register_site("vm")
    counts = {}
    for site in (laptop, vm):
        done = memsync(
            "sync", "--once", "--config", str(site.config), env={"MEMSYNC_BACKBONE__SITE_SECRET": secrets[site.name]}
        )
        assert done.returncode == 0, done.stderr
        counts[site.name] = summary_counts(done.stderr)
    assert counts == {
        "laptop": {"new": 2, "updated": 1, "unchanged": 3},
        "vm": {"new": 1, "updated": 0, "unchanged": 3},
    }

    episodes = tables(convex)["episodes"]
    keys = [(e["sourceSite"], e["sourceId"]) for e in episodes]
    assert len(keys) == len(set(keys)) == 7 + 3
    assert all(len(e["contentHash"]) == 64 and "adopted" not in e for e in episodes)
    by_key = {(e["sourceSite"], e["sourceId"]): e for e in episodes}
    for seed in SEED_EPISODES:
        doc = by_key[seed["sourceSite"], seed["sourceId"]]
        assert json.loads(doc["metadataJson"]) == seed["metadata"]
        assert doc["createdAt"] == seed["createdAt"]
        if (seed["sourceSite"], seed["sourceId"]) != EDITED:
            assert doc.get("qdrantPointId") == seed.get("qdrantPointId")
    assert by_key[EDITED]["output"] == "edited after the seed pushed it"

    # A second pass finds nothing to send: the hashes the first pass recorded are memsync's.
    for site in (laptop, vm):
        done = memsync(
            "sync", "--once", "--config", str(site.config), env={"MEMSYNC_BACKBONE__SITE_SECRET": secrets[site.name]}
        )
        assert done.returncode == 0, done.stderr
        assert summary_counts(done.stderr)["new"] == 0

    # The rollback: every episode in the seed's shape again, tasks without memsync's site.
    undone = memsync("adopt", "--undo", "-c", str(laptop.config), env=env)
    assert undone.returncode == 0, undone.stderr
    assert "returned 10 episodes and 3 tasks to the seed's shape" in flat(undone.stderr)
    after = tables(convex)
    seed_fields = {"sourceSite", "sourceId", "sessionId", "task", "input", "output", "critique", "reward", "success"}
    seed_fields |= {"tags", "metadata", "ts", "createdAt", "agentName", "qdrantPointId", "_id", "_creationTime"}
    assert all(set(e) <= seed_fields for e in after["episodes"]), after["episodes"]
    assert all("site" not in t for t in after["tasks"])


def test_adopt_says_what_is_wrong_in_one_sentence(convex: LocalConvex, tmp_path: Path) -> None:
    agentdb = tmp_path / "agentdb.db"
    hub_site = write_config(tmp_path / "hub", "hubsite", agentdb, tmp_path / "hub.db")
    on_hub = memsync("adopt", "--check", "-c", str(hub_site.config), env={OPERATOR_KEY_ENV: "k"})
    assert on_hub.returncode == 78, on_hub.stderr
    assert flat(on_hub.stderr) == f"memsync: {NOT_CONVEX}"

    secret = convex.register_site("lonely")
    site = write_config(
        tmp_path / "c", "lonely", agentdb, tmp_path / "x.db", kind="convex", backbone=f'url = "{convex.url}"\n'
    )
    env = {"MEMSYNC_BACKBONE__SITE_SECRET": secret, OPERATOR_KEY_ENV: ""}
    no_key = memsync("adopt", "--check", "-c", str(site.config), env=env)
    assert no_key.returncode == 78, no_key.stderr
    assert f"set {OPERATOR_KEY_ENV}" in flat(no_key.stderr)
    wrong = memsync("adopt", "--check", "-c", str(site.config), env={**env, OPERATOR_KEY_ENV: "not-the-key"})
    assert wrong.returncode == 78, wrong.stderr
    assert "refused the deploy key" in flat(wrong.stderr)
    assert "not-the-key" not in wrong.stderr + wrong.stdout
    both = memsync("adopt", "--check", "--undo", "-c", str(site.config), env=env)
    assert both.returncode == 2
    batch = memsync("adopt", "--batch", "0", "-c", str(site.config), env=env)
    assert batch.returncode == 2
    assert flat(batch.stderr) == "memsync: --batch must be from 1 to 500, not 0"
    for done in (on_hub, no_key, wrong, both, batch):
        assert "Traceback" not in done.stderr


@pytest.fixture
def fresh_convex() -> Iterator[LocalConvex]:
    """A deployment of this test's own, loaded with the seed: the module's is rolled back by the test above."""
    with running_local_convex() as server:
        server.load_seed()
        yield server


def synced(log: Path) -> dict[str, int]:
    """What a daemon's log says its passes sent: episodes new and updated ("synced" events)."""
    events = logged(log, "synced")
    return {"new": sum(e["inserted"] for e in events), "updated": sum(e["updated"] for e in events)}


def test_adopt_then_two_sites_daemons_send_every_episode_once(
    fresh_convex: LocalConvex, agents: Callable[[Path], AgentProcess], tmp_path: Path
) -> None:
    """After `memsync adopt`, two real `memsync run` daemons (one per site) sync their AgentDB files:
    each site's cursor reaches its last row, every key is in Convex once, the seed's episodes are
    not sent as new (only the one edited since the seed pushed it is sent, as an update), and they
    keep their Qdrant point and creation time."""
    convex = fresh_convex
    laptop = site_config(tmp_path, "laptop", convex, agents, new=2)
    vm = site_config(tmp_path, "vm", convex, agents, new=1)
    secrets = {"laptop": convex.register_site("laptop"), "vm": convex.register_site("vm")}
    adopted = memsync(
        "adopt", "-c", str(laptop.config), env={OPERATOR_KEY_ENV: convex.admin_key, **as_site(secrets["laptop"])}
    )
    assert adopted.returncode == 0, adopted.stderr
    assert "adopted 7 seed episodes" in flat(adopted.stderr)

    rows = {"laptop": 4 + 2, "vm": 3 + 1}  # the seed's episodes for the site, then the new ones
    logs = {site.name: tmp_path / f"{site.name}.log" for site in (laptop, vm)}
    procs = {
        site.name: start_daemon(site.config, logs[site.name], env=as_site(secrets[site.name])) for site in (laptop, vm)
    }
    try:
        for site in (laptop, vm):
            wait_started(site, procs[site.name], logs[site.name])

        def caught_up(site: SiteFiles) -> Callable[[], bool]:
            def reached() -> bool:
                if procs[site.name].poll() is not None:
                    raise AssertionError(f"{site.name}'s daemon exited: {log_tail(logs[site.name], 40)}")
                _, report = status_json(site.config, env=as_site(secrets[site.name]))
                return report.get("cursor") == rows[site.name] and report.get("backlog") == 0

            return reached

        for site in (laptop, vm):
            wait_for(caught_up(site), timeout=120, interval=0.3, what=f"{site.name}'s daemon to sync its file")
    finally:
        codes = {name: stop_daemon(proc, timeout=30) for name, proc in procs.items()}
    assert codes == {"laptop": 0, "vm": 0}

    assert synced(logs["laptop"]) == {"new": 2, "updated": 1}  # so 3 of its 4 seed episodes unchanged
    assert synced(logs["vm"]) == {"new": 1, "updated": 0}  # its 3 seed episodes unchanged
    episodes = tables(convex)["episodes"]
    keys = [(e["sourceSite"], e["sourceId"]) for e in episodes]
    assert len(keys) == len(set(keys)) == 7 + 3
    by_key = {(e["sourceSite"], e["sourceId"]): e for e in episodes}
    for seed in SEED_EPISODES:
        doc = by_key[seed["sourceSite"], seed["sourceId"]]
        assert doc["createdAt"] == seed["createdAt"]
        assert len(doc["contentHash"]) == 64  # memsync's hash now: the next pass compares it
        if (seed["sourceSite"], seed["sourceId"]) != EDITED:
            assert doc.get("qdrantPointId") == seed.get("qdrantPointId")
