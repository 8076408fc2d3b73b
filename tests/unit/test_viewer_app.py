"""The viewer's routes in process (Starlette's test client over a real embedded hub): the guard
refuses what it must on every route, and approvals are decided under Telegram's reviewer rules."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator

import pytest
from harness.site import SiteFiles
from starlette.testclient import TestClient

from daemon.config import Settings
from daemon.site import opened_backbone
from daemon.viewer.app import build_app
from daemon.viewer.auth import COOKIE, Sessions
from daemon.viewer.views import Views
from sync.errors import ConfigError

# Approvals expire an hour after this; the views read the real clock, as the hub they ask does (a
# digest of "today" is the hub's today).
NOW = time.time()
APPROVER = """
[ui]
user = "ana"

[[collaborators]]
name = "ana"
chat_id = "1001"
permissions = ["approve"]

[[collaborators]]
name = "bo"
chat_id = "1002"
"""


@pytest.fixture
def settings(site_files: Callable[..., SiteFiles]) -> Settings:
    return site_files(extra=APPROVER).settings()  # type: ignore[no-any-return]


@pytest.fixture
def sessions() -> Sessions:
    return Sessions()


@pytest.fixture
def client(settings: Settings, sessions: Sessions) -> Iterator[TestClient]:
    app = build_app(Views(settings), sessions, {"testserver"})
    with TestClient(app, follow_redirects=False) as c:
        yield c


def logged_in(client: TestClient, sessions: Sessions) -> str:
    answer = client.get("/login", params={"token": sessions.login_token})
    assert answer.status_code == 303
    return str(client.cookies[COOKIE])


def approval(settings: Settings, reviewers: tuple[str, ...] = ()) -> str:
    with opened_backbone(settings) as backbone:
        return backbone.create_approval(
            agent_name="coder",
            action_type="deploy",
            priority="high",
            reviewers=list(reviewers),
            expires_at=int(NOW * 1000) + 3_600_000,
            summary="ship <b>it</b>",
        )


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', html)
    assert found is not None, html
    return found[1]


@pytest.mark.parametrize("path", ["/", "/fleet", "/approvals", "/digest", "/memory/laptop/1", "/fleet/events"])
def test_every_page_wants_a_session(client: TestClient, path: str) -> None:
    answer = client.get(path)
    assert answer.status_code == 401
    assert "log in with the link" in answer.text
    client.cookies.set(COOKIE, "made-up")
    assert client.get(path).status_code == 401


def test_another_host_is_refused_before_anything(client: TestClient, sessions: Sessions) -> None:
    answer = client.get("/login", params={"token": sessions.login_token}, headers={"host": "evil.example:8766"})
    assert answer.status_code == 421
    assert sessions.login_token is not None  # not spent by a rebinding page


def test_login_sets_a_strict_http_only_cookie_once(client: TestClient, sessions: Sessions) -> None:
    token = sessions.login_token
    answer = client.get("/login", params={"token": token})
    assert answer.status_code == 303
    assert answer.headers["location"] == "/"
    cookie = answer.headers["set-cookie"]
    assert "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie
    again = TestClient(client.app, follow_redirects=False)
    assert again.get("/login", params={"token": token}).status_code == 401


def test_every_answer_carries_the_policy(client: TestClient, sessions: Sessions) -> None:
    for answer in (client.get("/"), client.get("/static/viewer.js")):
        assert answer.headers["content-security-policy"].startswith("default-src 'none'")
        assert answer.headers["x-frame-options"] == "DENY"
    logged_in(client, sessions)
    page = client.get("/")
    assert page.status_code == 200
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert client.get("/static/viewer.js").headers["content-type"].startswith("text/javascript")
    assert client.get("/static/other.js").status_code == 404


@pytest.mark.parametrize(
    "path",
    [
        "/memory/laptop/1/forget",
        "/memory/laptop/1/pin",
        "/memory/laptop/1/unmerge",
        "/memory/laptop/m1/retag",
        "/approvals/a1/approve",
        "/approvals/a1/reject",
        "/approvals/a1/defer",
    ],
)
def test_every_action_wants_the_sessions_csrf_value(client: TestClient, sessions: Sessions, path: str) -> None:
    logged_in(client, sessions)
    assert client.post(path, data={"confirm": "yes"}).status_code == 403
    assert client.post(path, data={"confirm": "yes", "csrf": "0" * 64}).status_code == 403
    other = Sessions(key=sessions.key)
    other_session = other.login(other.login_token, NOW)
    assert other_session is not None  # the same key, another session: its value is not this one's
    assert client.post(path, data={"csrf": other.csrf(other_session)}).status_code == 403


def test_forget_without_the_confirmation_forgets_nothing(client: TestClient, sessions: Sessions) -> None:
    logged_in(client, sessions)
    csrf = sessions.csrf(str(client.cookies[COOKIE]))
    answer = client.post("/memory/laptop/1/forget", data={"csrf": csrf})
    assert answer.status_code == 400
    assert "tick the box" in answer.text


def test_an_approver_decides_from_the_page(client: TestClient, sessions: Sessions, settings: Settings) -> None:
    approval_id = approval(settings)
    logged_in(client, sessions)
    page = client.get("/approvals")
    assert "ship &lt;b&gt;it&lt;/b&gt;" in page.text
    assert "you decide as ana" in page.text
    assert f'action="/approvals/{approval_id}/approve"' in page.text
    answer = client.post(f"/approvals/{approval_id}/approve", data={"csrf": csrf_of(page.text)})
    assert answer.status_code == 200
    assert f"{approval_id}: approved by ana" in answer.text
    with opened_backbone(settings) as backbone:
        decided = backbone.approval(approval_id)
    assert decided is not None
    assert decided.status == "approved"
    assert decided.resolved_by == "ana"


def test_a_collaborator_without_approve_may_not_decide(
    site_files: Callable[..., SiteFiles], sessions: Sessions
) -> None:
    settings = site_files(extra=APPROVER.replace('user = "ana"', 'user = "bo"')).settings()
    approval_id = approval(settings, reviewers=("1001",))
    app = build_app(Views(settings), sessions, {"testserver"})
    with TestClient(app, follow_redirects=False) as client:
        logged_in(client, sessions)
        page = client.get("/approvals")
        assert "you may not decide this one" in page.text
        answer = client.post(f"/approvals/{approval_id}/approve", data={"csrf": sessions.csrf(client.cookies[COOKIE])})
    assert answer.status_code == 403
    assert "bo may not decide approval" in answer.text
    with opened_backbone(settings) as backbone:
        still = backbone.approval(approval_id)
    assert still is not None
    assert still.status == "pending"


def test_ui_user_must_name_a_collaborator(site_files: Callable[..., SiteFiles]) -> None:
    with pytest.raises(ConfigError, match=r"ui.user .cy. is no collaborator.s name"):
        site_files(extra=APPROVER.replace('user = "ana"', 'user = "cy"')).settings()


def test_the_digest_and_fleet_pages_say_why_before_anything_synced_then_show_it(
    client: TestClient, sessions: Sessions, settings: Settings
) -> None:
    logged_in(client, sessions)
    digest = client.get("/digest")
    assert digest.status_code == 503
    assert "does not exist yet" in digest.text
    assert "does not exist yet" in client.get("/fleet").text
    approval(settings)  # the hub now exists, with one pending approval
    digest = client.get("/digest")
    assert digest.status_code == 200
    assert "<h2>today so far</h2>" in digest.text
    assert "1 pending" in digest.text
    assert client.get("/digest", params={"day": "tomorrow"}).status_code == 400
    fleet = client.get("/fleet")
    assert fleet.status_code == 200
    assert 'id="fleet-live"' in fleet.text
    assert "1 pending approvals" in fleet.text


def test_a_memorys_actions_answer_with_what_they_did_or_why_not(
    client: TestClient, sessions: Sessions, settings: Settings
) -> None:
    from daemon.usecases.memory.remember import Memory, remember

    approval(settings)  # the hub exists
    logged_in(client, sessions)
    csrf = sessions.csrf(str(client.cookies[COOKIE]))
    pinned = client.post("/memory/laptop/1/pin", data={"csrf": csrf, "pinned": "yes"})
    assert "not pinned: no memory laptop:1 in the backbone" in pinned.text
    unmerged = client.post("/memory/laptop/1/unmerge", data={"csrf": csrf, "step": " "})
    assert "not undone: no step given" in unmerged.text
    refused = client.post("/memory/laptop/1/retag", data={"csrf": csrf, "type": "decision", "tags": ""})
    assert "not corrected: laptop:1 is an agent&#x27;s own episode" in refused.text

    remember(settings, Memory("the okapi cron runs at 02:00", "warning", ["ops"]), now=NOW, nearest=lambda _: [])
    corrected = client.post("/memory/laptop/m1/retag", data={"csrf": csrf, "type": "", "tags": "billing, cron"})
    assert "corrected laptop:m1: tags billing, cron (were ops)" in corrected.text
    again = client.post("/memory/laptop/m1/retag", data={"csrf": csrf, "type": "", "tags": "cron,billing"})
    assert "already has that type and those tags: nothing changed" in again.text
