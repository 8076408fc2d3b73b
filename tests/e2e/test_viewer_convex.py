"""The viewer on Convex: the same routes as on the hub (tests/unit/test_viewer_app.py), in process
over the local Convex with the real cloud_functions, for a site whose episodes were synced there.
Fleet shows the site, Digest today's count, an approval is decided from the page under the
reviewer rules and the deployment records who decided; memory text and a summary stay text."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import AgentProcess, episode, memsync, write_config
from convex_fixtures import LocalConvex
from starlette.testclient import TestClient

from daemon.config import Settings
from daemon.site import opened_backbone
from daemon.viewer.app import build_app
from daemon.viewer.auth import COOKIE, Sessions
from daemon.viewer.views import Views

SECRET_VARIABLE = "MEMSYNC_BACKBONE__SITE_SECRET"
APPROVER = """
[ui]
user = "ana"

[[collaborators]]
name = "ana"
chat_id = "1001"
permissions = ["approve"]
"""


@pytest.fixture
def convex_site(
    tmp_path: Path, own_convex: LocalConvex, agents: Callable[[Path], AgentProcess], monkeypatch: pytest.MonkeyPatch
) -> Settings:
    convex = own_convex
    name = "viewer-convex"
    secret = convex.register_site(name)
    agentdb = tmp_path / "agentdb.db"
    agent = agents(agentdb)
    agent.store(episode(1, task="rotate the <script>alert(1)</script> certificate"))
    agent.store(episode(2, task="raise the build container's memory after exit 137"))
    agent.close()
    files = write_config(
        tmp_path / "site",
        name,
        agentdb,
        tmp_path / "unused-hub.db",
        kind="convex",
        backbone=f'url = "{convex.url}"\n',
        extra=APPROVER,
    )
    synced = memsync("sync", "--once", "--config", str(files.config), env={SECRET_VARIABLE: secret}, timeout=120)
    assert synced.returncode == 0, synced.stderr
    monkeypatch.setenv(SECRET_VARIABLE, secret)  # the environment the site's settings read it from
    return files.settings()  # type: ignore[no-any-return]


@pytest.fixture
def client(convex_site: Settings) -> Iterator[tuple[TestClient, Sessions]]:
    sessions = Sessions()
    with TestClient(build_app(Views(convex_site), sessions, {"testserver"}), follow_redirects=False) as c:
        answer = c.get("/login", params={"token": sessions.login_token})
        assert answer.status_code == 303
        assert c.cookies[COOKIE]
        yield c, sessions


def test_fleet_and_digest_read_the_deployment(client: tuple[TestClient, Sessions]) -> None:
    c, _ = client
    fleet = c.get("/fleet")
    assert fleet.status_code == 200
    assert "viewer-convex" in fleet.text
    digest = c.get("/digest")
    assert digest.status_code == 200
    assert "viewer-convex" in digest.text


def test_an_approval_is_decided_from_the_page_on_convex(
    client: tuple[TestClient, Sessions], convex_site: Settings
) -> None:
    c, _ = client
    with opened_backbone(convex_site) as backbone:
        approval_id = backbone.create_approval(
            agent_name="coder",
            action_type="deploy",
            priority="high",
            reviewers=[],
            expires_at=int(time.time() * 1000) + 3_600_000,
            summary="ship <b>it</b>",
        )
    page = c.get("/approvals")
    assert page.status_code == 200
    assert "ship &lt;b&gt;it&lt;/b&gt;" in page.text  # a summary is text, never markup
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page.text)
    assert found is not None
    assert c.post(f"/approvals/{approval_id}/approve", data={}).status_code == 403  # no CSRF value
    answer = c.post(f"/approvals/{approval_id}/approve", data={"csrf": found[1]})
    assert answer.status_code in (200, 303), answer.text
    with opened_backbone(convex_site) as backbone:
        decided = backbone.approval(approval_id)
    assert decided is not None
    assert decided.status == "approved"
