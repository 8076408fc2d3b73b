"""Collaborators end to end on the embedded hub, against the fake Bot API on 127.0.0.1: two
collaborators with different ``notify_on`` beside the default chat. Approvals of two categories
asked from the CLI, an alert of every kind (the fleet's and a daemon's own, through the real alert
machines, outbox and sender) and the digest: each chat receives exactly what its notify_on asks
for, nothing more. Then, through a running daemon's getUpdates: a press by someone who is no
reviewer is refused, by a collaborator with ``approve`` accepted, and the decision edits the
approval's message in every chat it went to. (cloud_functions/collaborators.test.ts is Convex's.)"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import SiteFiles, memsync, wait_for, wait_started, write_config
from fake_telegram import FakeTelegram

from daemon.alerts.machine import Observation
from daemon.alerts.outbox_keys import digest_key
from daemon.alerts.signals import Subject
from daemon.alerts.store import AlertStore
from daemon.alerts.watch import Alerts
from daemon.config import load_settings
from daemon.signal_names import SIGNAL_NAMES
from daemon.telegram.client import BotApi
from daemon.telegram.sender import deliver

Daemons = Callable[..., subprocess.Popen[bytes]]
TOKEN = "515151:COLLAB-bot-token_secret"
CHAT = "-1009"
ADA = 111  # her private chat with the bot: its id is her user id
BOB_CHAT = "-100222"  # a group: Bob is known by his user id
BOB = 222
REVIEWER = 42
PEOPLE = f"""
[[collaborators]]
name = "ada"
role = "lead"
chat_id = {ADA}
permissions = ["approve"]
notify_on = ["offline", "approval:financial", "digest"]

[[collaborators]]
name = "bob"
role = "ops"
chat_id = "{BOB_CHAT}"
user_id = {BOB}
notify_on = ["silent", "quarantine", "agentdb", "approvals"]
"""


@pytest.fixture
def tg(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeTelegram]:
    monkeypatch.setenv("MEMSYNC_TELEGRAM__BOT_TOKEN", TOKEN)
    with FakeTelegram(token=TOKEN) as fake:
        yield fake


def heard(tg: FakeTelegram, chat: str | int) -> list[str]:
    """The first line of each message sent to ``chat``, sorted."""
    return sorted(m["text"].split("\n")[0] for m in tg.messages(str(chat)))


def ask(site: SiteFiles, category: str) -> str:
    done = memsync("approval", "request", "--category", category, "--summary", f"do {category}", "-c", str(site.config))
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_each_chat_hears_what_it_asked_for_and_collaborators_with_approve_decide(
    tmp_path: Path, make_agentdb: Callable[..., Path], daemons: Daemons, tg: FakeTelegram
) -> None:
    extra = (
        f'[telegram]\nchat_id = "{CHAT}"\napi_base = "{tg.api_base}"\nreviewers = [{REVIEWER}]\n'
        "[jobs.daily-digest]\nenabled = false\n" + PEOPLE
    )
    laptop = write_config(tmp_path / "laptop", "laptop", make_agentdb(2), tmp_path / "hub.db", extra=extra)
    listed = memsync("collaborators", "list", "-c", str(laptop.config))
    assert listed.returncode == 0, listed.stderr
    assert "ada (lead): chat 111; may approve; hears offline, approval:financial, digest" in listed.stdout

    # Approvals of two categories, announced by the command that asks (the hub's sites are the server).
    financial, destructive = ask(laptop, "financial"), ask(laptop, "destructive")

    # An alert of every kind, bad for a day, through the machines, the outbox and the sender; and the digest.
    settings = load_settings(laptop.config)
    store = AlertStore(settings.alerts_path)
    alerts = Alerts(settings, store)
    now = store.now_ms()
    said = alerts.observe(
        {
            Subject(signal, "vm"): Observation(True, now, f"{signal} is bad", bad_since=now - 86_400_000)
            for signal in SIGNAL_NAMES
        }
    )
    assert sorted(subject.signal for subject, _ in said) == sorted(SIGNAL_NAMES)
    assert alerts.queue_digest({"day": "2026-01-14", "sites": []}, digest_key("2026-01-14"))
    with BotApi(TOKEN, tg.api_base) as bot:
        while store.waiting():
            deliver(store, bot, CHAT, pause=lambda _seconds: True)
    store.close()

    def approval_line(category: str) -> str:
        return f"🟡 Approval needed: {category} by agent on laptop"

    def alert_line(signal: str) -> str:
        mark = "⏳" if signal == "expiring" else "🔴" if signal in ("offline", "backbone", "agentdb") else "🟠"
        return f"{mark} {'' if signal == 'expiring' else 'vm '}{signal} is bad"

    digest = "☀️ memsync digest for 2026-01-14"
    approvals = [approval_line("financial"), approval_line("destructive")]
    assert heard(tg, CHAT) == sorted([*approvals, *map(alert_line, SIGNAL_NAMES), digest])
    assert heard(tg, ADA) == sorted([approval_line("financial"), alert_line("offline"), digest])
    assert heard(tg, BOB_CHAT) == sorted([*approvals, *map(alert_line, ("silent", "quarantine", "agentdb"))])
    assert {str(m["chat_id"]) for m in tg.messages()} == {CHAT, str(ADA), BOB_CHAT}

    # Presses, received by the daemon that polls getUpdates.
    proc = daemons(laptop.config, tmp_path / "laptop.log")
    wait_started(laptop, proc, tmp_path / "laptop.log")

    def message_in(chat: str | int, approval_id: str) -> int:
        found = [
            i
            for i, m in enumerate(tg.messages(), start=1)
            if str(m["chat_id"]) == str(chat) and m["text"].endswith(f"id {approval_id}")
        ]
        assert len(found) == 1, found
        # message ids are handed out in order, to every chat: the n-th message sent is message n
        return found[0]

    def answered(text: str, count: int = 1) -> bool:
        return [a.get("text") for a in tg.answers()].count(text) >= count

    refused = "You are not a reviewer of this approval."
    tg.press(message_in(BOB_CHAT, financial), f"a:{financial}", from_id=BOB, first_name="Bob")  # hears, may not decide
    wait_for(lambda: answered(refused), what="Bob's press refused")
    tg.press(message_in(CHAT, financial), f"a:{financial}", from_id=7, first_name="Mallory")  # a stranger
    wait_for(lambda: answered(refused, 2), what="the stranger's press refused")
    tg.press(message_in(ADA, financial), f"a:{financial}", from_id=ADA, first_name="Ada")  # a collaborator with approve
    wait_for(lambda: answered("Approved."), what="Ada's press accepted")
    tg.press(message_in(CHAT, destructive), f"r:{destructive}", from_id=REVIEWER, first_name="Ann")  # a listed reviewer
    wait_for(lambda: answered("Rejected."), what="the reviewer's press accepted")

    # Each decision edits the approval's message in every chat it went to, in that chat.
    for approval_id, chats, head in (
        (financial, (CHAT, ADA, BOB_CHAT), "✅ Approved by Ada at "),
        (destructive, (CHAT, BOB_CHAT), "❌ Rejected by Ann at "),
    ):
        for chat in chats:
            message = message_in(chat, approval_id)
            wait_for(lambda m=message, h=head: tg.current(m)["text"].startswith(h), what=f"the edit in chat {chat}")  # type: ignore[misc]
            assert str(tg.current(message)["chat_id"]) == str(chat)
    assert all(str(e["chat_id"]) in {CHAT, str(ADA), BOB_CHAT} for e in tg.edits())
    assert len(tg.edits()) == 5
    assert not re.search(TOKEN, (tmp_path / "laptop.log").read_text(encoding="utf-8"))
