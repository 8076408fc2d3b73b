"""An episode's approval status where people and agents read episodes: ``memsync export`` (a field
after the documented ones) and ``memsync search --json`` (a field on each result), on the embedded
hub and on Convex. The search index carries it in its payload, rewritten from the change feed when
the decision comes (no extra read per search, nothing embedded again), so an approval decided after
the episode was indexed shows its new status, and an expiry too."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import AgentProcess, episode, memsync, write_config


class Site:
    def __init__(self, request: pytest.FixtureRequest, tmp_path: Path, short_dir: Path) -> None:
        self.agentdb = tmp_path / "agentdb.db"
        self.env: dict[str, str] = {}
        tag = uuid.uuid4().hex[:8]
        warm = f'path = "{tmp_path / "warm"}"\nsocket = "{short_dir / f"{tag}.sock"}"\ncatch_up_interval = 30\n'
        if request.param == "local":
            self.name = "laptop"
            self.files = write_config(tmp_path / "site", self.name, self.agentdb, tmp_path / "hub.db", warm=warm)
            self.expire: Callable[[int], None] = self._expire_on_hub
        else:
            self.convex = request.getfixturevalue("own_convex")
            self.name = f"status-{tag}"
            self.env = {"MEMSYNC_BACKBONE__SITE_SECRET": self.convex.register_site(self.name)}
            self.files = write_config(
                tmp_path / "site",
                self.name,
                self.agentdb,
                tmp_path / "unused-hub.db",
                kind="convex",
                backbone=f'url = "{self.convex.url}"\n',
                warm=warm,
            )
            self.expire = self._expire_on_convex
        self.hub = tmp_path / "hub.db"

    def _expire_on_hub(self, now_ms: int) -> None:
        from sync.backbone.hub import HubBackbone

        hub = HubBackbone(self.hub, self.name)
        try:
            hub.expire_approvals(now_ms, {}, 1)
        finally:
            hub.close()

    def _expire_on_convex(self, now_ms: int) -> None:
        # The expire-pending-approvals cron's function, as the deployment runs it, as of a later time.
        self.convex.admin("mutation", "approvals:expirePending", {"now": now_ms, "timeoutsMs": {}, "defaultMs": 1})

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        done = memsync(*args, "--config", str(self.files.config), env=self.env, timeout=timeout)
        assert done.returncode == 0, (args, done.stderr)
        return done

    def ask(self, source_id: int) -> str:
        asked = self.run("approval", "request", "--category", "deploy", "--summary", "s", "--episode", str(source_id))
        return asked.stdout.strip()

    def results(self) -> dict[str, dict[str, Any]]:
        # Pushes, and indexes what the index has not seen; the Convex is this test's own, so that is
        # this site's episodes only (on the shared one it would be every other test's too).
        self.run("sync", "--once")
        found = json.loads(self.run("search", "rotate", "--json", "-n", "10", "--site", self.name).stdout)["results"]
        return {str(r["sourceId"]): r for r in found}

    def exported(self) -> dict[str, dict[str, Any]]:
        return {str(r["sourceId"]): r for r in map(json.loads, self.run("export").stdout.splitlines())}


@pytest.fixture(params=["local", "convex"])
def site(request: pytest.FixtureRequest, tmp_path: Path, short_dir: Path) -> Site:
    return Site(request, tmp_path, short_dir)


def test_export_and_search_json_show_an_approval_status_decided_after_indexing(
    site: Site, agents: Callable[[Path], AgentProcess]
) -> None:
    agent = agents(site.agentdb)
    approved = agent.store(episode(1, task="rotate the TLS certificate on the edge proxy"))
    expired = agent.store(episode(2, task="rotate the database password"))
    untouched = agent.store(episode(3, task="rotate the API keys of the billing service"))
    agent.close()
    keys = [str(approved), str(expired), str(untouched)]

    before = site.results()
    assert [before[k]["approvalStatus"] for k in keys] == [None, None, None]
    assert all("approvalStatus" not in r for r in site.exported().values())

    first, second = site.ask(approved), site.ask(expired)
    pending = site.results()
    assert [pending[k]["approvalStatus"] for k in keys] == ["pending", "pending", None]

    site.run("approvals", "approve", first, "--by", "ann")
    listed = json.loads(site.run("approvals", "--site-only", "--json").stdout)
    (later,) = [a["expiresAt"] for a in listed if a["approvalId"] == second]
    site.expire(int(later) + 1)

    after = site.results()
    assert [after[k]["approvalStatus"] for k in keys] == ["approved", "expired", None]
    exported = site.exported()
    assert [exported[k].get("approvalStatus") for k in keys] == ["approved", "expired", None]
    assert list(exported[keys[0]])[-1] == "approvalStatus"
    # A payload rewrite: the same text and episode, only the status moved.
    moved = ("approvalStatus", "score", "similarity")
    assert {k: v for k, v in after[keys[0]].items() if k not in moved} == {
        k: v for k, v in before[keys[0]].items() if k not in moved
    }
