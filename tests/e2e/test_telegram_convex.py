"""Approvals on Convex from Python: the CLI against the local Convex server (the real functions),
which sends its own Telegram messages to a fake Bot API and receives button presses on its
``/telegram`` HTTP action, as Telegram's webhook would call it. No daemon is needed: the
deployment asks, hears the answer and edits the message itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import memsync, start_daemon, stop_daemon, wait_for, wait_started, write_config
from convex_fixtures import LocalConvex, running_local_convex
from fake_telegram import FakeTelegram

TOKEN = "777000:CONVEX-bot-token_secret"
CHAT = "-1007"
HOOK_SECRET = "webhook-secret-value-1234"
REVIEWER = 42


@pytest.fixture(scope="module")
def tg() -> Iterator[FakeTelegram]:
    with FakeTelegram(token=TOKEN) as fake:
        yield fake


@pytest.fixture(scope="module")
def convex(tg: FakeTelegram) -> Iterator[LocalConvex]:
    env = {
        "TELEGRAM_BOT_TOKEN": TOKEN,
        "TELEGRAM_CHAT_ID": CHAT,
        "TELEGRAM_API_BASE": tg.api_base,
        "TELEGRAM_WEBHOOK_SECRET": HOOK_SECRET,
    }
    with running_local_convex(env=env) as server:
        yield server


class Site:
    def __init__(self, convex: LocalConvex, tmp_path: Path, make_agentdb: Callable[..., Path]) -> None:
        self.name = f"convex-approvals-{tmp_path.name[-12:]}".replace("_", "-")
        self.secret = convex.register_site(self.name)
        self.files = write_config(
            tmp_path / "site",
            self.name,
            make_agentdb(2),
            tmp_path / "unused-hub.db",
            kind="convex",
            backbone=f'url = "{convex.url}"\n',
            extra=f"[telegram]\nreviewers = [{REVIEWER}]\n",
        )
        self.env = {"MEMSYNC_BACKBONE__SITE_SECRET": self.secret}

    def run(self, *args: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return memsync(*args, "--config", str(self.files.config), env={**self.env, **(env_extra or {})})

    def ask(self, category: str, *more: str) -> str:
        done = self.run("approval", "request", "--category", category, "--summary", f"do {category}", *more)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()


@pytest.fixture
def site(convex: LocalConvex, tmp_path: Path, make_agentdb: Callable[..., Path]) -> Site:
    return Site(convex, tmp_path, make_agentdb)


def message_of(tg: FakeTelegram, approval_id: str) -> tuple[int, dict[str, Any]]:
    found: list[tuple[int, dict[str, Any]]] = []

    def sent() -> bool:
        found[:] = [(i, m) for i, m in enumerate(tg.messages(), start=1) if f"{approval_id}" in json.dumps(m)]
        return bool(found)

    wait_for(sent, timeout=20, what=f"the deployment's message for approval {approval_id}")
    assert len(found) == 1, found
    return found[0]


def press(
    convex: LocalConvex, tg: FakeTelegram, message_id: int, data: str, from_id: int, *, secret: str = HOOK_SECRET
) -> int:
    """What Telegram does with a button press when the deployment's /telegram is the bot's webhook."""
    update = tg.callback_update(message_id, data, from_id, "Ann" if from_id == REVIEWER else "Mallory")
    headers = {"X-Telegram-Bot-Api-Secret-Token": secret} if secret else {}
    return httpx.post(f"{convex.url}/telegram", json=update, headers=headers, timeout=30).status_code


def test_request_press_and_wait_on_convex(site: Site, convex: LocalConvex, tg: FakeTelegram) -> None:
    # An approval is about one of the site's episodes that the deployment holds: an id it does not
    # hold is refused (exit 64, one sentence), and nothing is sent.
    unknown = site.run("approval", "request", "--category", "send_message", "--summary", "x", "--episode", "1")
    assert unknown.returncode == 64, unknown.stderr
    assert "no episode '1' from site" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    synced = site.run("sync", "--once")
    assert synced.returncode == 0, synced.stderr
    first = site.ask("send_message", "--episode", "1")
    message_id, message = message_of(tg, first)
    buttons = [b["callback_data"] for b in message["reply_markup"]["inline_keyboard"][0]]
    assert buttons == [f"a:{first}", f"r:{first}", f"d:{first}"]
    waiting = subprocess.Popen(
        [sys.executable, "-m", "daemon", "approval", "wait", first, "--config", str(site.files.config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **site.env},
    )
    assert press(convex, tg, message_id, f"a:{first}", REVIEWER, secret="wrong") == 401
    assert press(convex, tg, message_id, f"a:{first}", REVIEWER, secret="") == 401
    assert press(convex, tg, message_id, f"a:{first}", 7) == 200  # not a reviewer: refused
    assert site.run("approvals", "list", "--status", "pending", "--site-only", "--json").stdout.count(first) == 1
    assert press(convex, tg, message_id, f"a:{first}", REVIEWER) == 200
    assert press(convex, tg, message_id, f"a:{first}", REVIEWER) == 200  # a double tap
    _out, err = waiting.communicate(timeout=30)
    assert waiting.returncode == 0, err
    assert "approved by Ann" in err
    wait_for(lambda: tg.current(message_id)["text"].startswith("✅ Approved by Ann"), timeout=20, what="the edit")
    answers = [a.get("text") for a in tg.answers()]
    assert "You are not a reviewer of this approval." in answers
    assert any(a and "already approved" in a for a in answers)
    approved = json.loads(site.run("approvals", "list", "--status", "approved", "--site-only", "--json").stdout)
    assert [(a["approvalId"], a["resolvedBy"], a["episode"]) for a in approved] == [(first, "Ann", f"{site.name}:1")]
    stored = convex.admin("query", "episodes:approvalStatusOf", {"site": site.name, "sourceId": "1"})
    assert stored == "approved"
    # export shows the decision on that episode only.
    exported = [json.loads(line) for line in site.run("export").stdout.splitlines()]
    assert [(e["sourceId"], e.get("approvalStatus")) for e in exported] == [("1", "approved"), ("2", None)]


def test_reject_expiry_and_policy_on_convex(site: Site, convex: LocalConvex, tg: FakeTelegram) -> None:
    second = site.ask("financial", "--cost", "40")
    message_id, _ = message_of(tg, second)
    assert press(convex, tg, message_id, f"r:{second}", REVIEWER) == 200
    assert site.run("approval", "wait", second, "--timeout", "30").returncode == 1

    third = site.ask("destructive")
    third_message, _ = message_of(tg, third)
    convex.admin("mutation", "approvals:expirePending", {"timeoutsMs": {"destructive": 1}})  # as the cron, later
    assert site.run("approval", "wait", third, "--timeout", "30").returncode == 2
    wait_for(lambda: tg.current(third_message)["text"].startswith("⌛ Expired unanswered"), timeout=20, what="the edit")

    fourth = json.loads(site.ask("code_commit", "--tests-passed", "--json"))
    assert (fourth["status"], fourth["resolvedBy"]) == ("approved", "policy")
    assert site.run("approval", "wait", fourth["approvalId"]).returncode == 0
    time.sleep(1)  # on purpose: a message about the policy's approval would have been sent by now
    assert not any(fourth["approvalId"] in json.dumps(m) for m in tg.messages())
    assert all(f"/bot{TOKEN}/" in path for path in tg.requests_log)


def test_convex_says_a_stopped_site_itself_with_no_daemon_running(
    site: Site, convex: LocalConvex, tg: FakeTelegram, tmp_path: Path
) -> None:
    """Every daemon of the fleet is down: the deployment's own crons (run here with the admin key,
    as the local server runs no crons) find the site stopped and tell Telegram, once."""
    log = tmp_path / "daemon.log"
    proc = start_daemon(site.files.config, log, env=site.env)
    try:
        wait_started(site.files, proc, log)

        def synced_and_online() -> bool:
            fleet = json.loads(site.run("status", "--fleet", "--json").stdout or "{}")
            return any(s["site"] == site.name and s["online"] and s.get("cursor") for s in fleet.get("sites", []))

        wait_for(synced_and_online, timeout=30, what="the site's heartbeat and first sync in Convex")
    finally:
        assert stop_daemon(proc, timeout=30) == 0
    # Later: the crons find its heartbeat stale and its sync silent (thresholds of 1 ms stand for the time).
    convex.admin("mutation", "agents:markStale", {"staleAfterMs": 1})
    convex.admin("mutation", "health:syncHealthAlert", {"silentAfterMs": 1})
    for _ in range(3):  # the alerts cron runs every minute: a stopped site is said once, not once a run
        convex.admin("mutation", "alerts:sweep", {})

    def about_site() -> list[str]:
        return [m["text"] for m in tg.messages() if m["text"].split(" ", 2)[1:2] == [site.name]]

    wait_for(lambda: len(about_site()) >= 2, timeout=20, what="the deployment's alerts")
    time.sleep(1)  # on purpose: a third message (the same alert said again) would have come by now
    said = about_site()
    assert sorted(t.split(" ", 2)[0] for t in said) == sorted(["🟠", "🔴"]), said
    assert any("daemon silent" in t for t in said)
    assert any("has not synced" in t for t in said)


def test_collaborators_pushed_from_the_config_hear_their_categories_and_decide(
    site: Site, convex: LocalConvex, tg: FakeTelegram
) -> None:
    """``memsync collaborators sync`` makes the deployment's table the config's list (with the deploy
    key only); the deployment then sends a category to the chats that asked for it, and takes a
    collaborator's Approve while refusing one without the permission."""
    ada, bob_chat, bob = 111, "-100333", 333
    with site.files.config.open("a", encoding="utf-8") as config:
        config.write(
            f'\n[[collaborators]]\nname = "ada"\nchat_id = {ada}\npermissions = ["approve"]\n'
            'notify_on = ["approval:financial"]\n'
            f'[[collaborators]]\nname = "bob"\nchat_id = "{bob_chat}"\nuser_id = {bob}\nnotify_on = ["approvals"]\n'
        )
    keyless = site.run("collaborators", "sync", env_extra={"CONVEX_DEPLOY_KEY": ""})
    assert keyless.returncode == 78, keyless.stderr
    needs = "pushing collaborators to the Convex deployment needs the deployment's deploy key: set CONVEX_DEPLOY_KEY"
    assert needs in keyless.stderr
    wrong = site.run("collaborators", "sync", env_extra={"CONVEX_DEPLOY_KEY": "not-the-deploy-key"})
    assert wrong.returncode == 78, wrong.stderr
    assert "refused the deploy key in CONVEX_DEPLOY_KEY" in wrong.stderr
    assert convex.admin("query", "collaborators:list", {}) == []
    pushed = site.run("collaborators", "sync", env_extra={"CONVEX_DEPLOY_KEY": convex.admin_key})
    try:
        assert pushed.returncode == 0, pushed.stderr
        assert "2 collaborators stored in the Convex deployment" in pushed.stderr
        assert convex.admin("query", "collaborators:list", {}) == [
            {
                "name": "ada",
                "role": "",
                "telegramChatId": str(ada),
                "permissions": ["approve"],
                "notifyOn": ["approval:financial"],
            },
            {
                "name": "bob",
                "role": "",
                "telegramChatId": bob_chat,
                "telegramUserId": str(bob),
                "permissions": [],
                "notifyOn": ["approvals"],
            },
        ]
        financial, destructive = site.ask("financial"), site.ask("destructive")

        def chats_of(approval_id: str) -> list[str]:
            return sorted(str(m["chat_id"]) for m in tg.messages() if m["text"].endswith(f"id {approval_id}"))

        wait_for(lambda: len(chats_of(financial)) == 3, timeout=20, what="the financial approval in three chats")
        wait_for(lambda: len(chats_of(destructive)) == 2, timeout=20, what="the destructive approval in two chats")
        assert chats_of(financial) == sorted([CHAT, str(ada), bob_chat])
        assert chats_of(destructive) == sorted([CHAT, bob_chat])

        def message_in(chat: str, approval_id: str) -> int:
            found = [
                i
                for i, m in enumerate(tg.messages(), start=1)
                if str(m["chat_id"]) == chat and m["text"].endswith(f"id {approval_id}")
            ]
            assert len(found) == 1, found
            return found[0]

        def hook(message: int, data: str, from_id: int) -> None:
            update = tg.callback_update(message, data, from_id, "Ada" if from_id == ada else "Bob")
            posted = httpx.post(
                f"{convex.url}/telegram",
                json=update,
                headers={"X-Telegram-Bot-Api-Secret-Token": HOOK_SECRET},
                timeout=30,
            )
            assert posted.status_code == 200

        hook(message_in(bob_chat, financial), f"a:{financial}", bob)
        assert json.loads(site.run("approvals", "list", "--status", "pending", "--site-only", "--json").stdout)
        assert "You are not a reviewer of this approval." in [a.get("text") for a in tg.answers()]
        hook(message_in(str(ada), financial), f"a:{financial}", ada)
        assert site.run("approval", "wait", financial, "--timeout", "30").returncode == 0
        for chat in (CHAT, str(ada), bob_chat):
            message = message_in(chat, financial)
            wait_for(
                lambda m=message: tg.current(m)["text"].startswith("✅ Approved by Ada"),  # type: ignore[misc]
                timeout=20,
                what=f"the edit in chat {chat}",
            )
    finally:  # the module's other tests expect the default chat alone
        convex.admin("mutation", "collaborators:replace", {"collaborators": []})
