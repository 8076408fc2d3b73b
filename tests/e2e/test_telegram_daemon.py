"""Telegram with real daemons on one embedded hub, against a fake Bot API on 127.0.0.1: a site that
stops is said once and its recovery once (with how long, and how many episodes caught up), by one
of several daemons, through a Telegram outage and a ``kill -9`` of the senders; quiet hours and a
snooze; a flap inside the grace says nothing; approvals from a button through getUpdates; and the
bot token in none of the logs, outputs or errors."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import (
    AgentProcess,
    SiteFiles,
    episode,
    flat,
    memsync,
    status_json,
    wait_for,
    wait_started,
    write_config,
)
from fake_telegram import FakeTelegram
from harness import log_events

from daemon.alerts.store import AlertStore
from daemon.alerts.watch import Alerts
from daemon.schedule.policy.job_table import DEFAULT_JOBS
from daemon.schedule.worker import run_job
from sync.backbone.hub import HubBackbone

Daemons = Callable[..., subprocess.Popen[bytes]]
TOKEN = "424242:SECRET-bot-token_do_not_leak"
CHAT = "-1009"
REVIEWER = 42


@pytest.fixture
def tg(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeTelegram]:
    # Daemons and commands are child processes: they read the token from the environment, as a
    # service does from its EnvironmentFile.
    monkeypatch.setenv("MEMSYNC_TELEGRAM__BOT_TOKEN", TOKEN)
    with FakeTelegram(token=TOKEN) as fake:
        yield fake


def fast(tg: FakeTelegram, *, alerts: str = "", telegram: str = "", jobs: str = "") -> str:
    """Seconds instead of hours: heartbeats every second, a daemon offline after 3 s without one, a
    site silent after 4 s without a sync, the fleet's jobs every second."""
    alerts_table = alerts if "reminders" in alerts else f"reminders = [100.0]\n{alerts}"
    tables = "".join(
        f"[jobs.{job}]\nevery = 1\nlease = 5\n"
        for job in ("mark-stale-agents", "sync-health", "alerts", "expire-pending-approvals")
    )
    return (
        f"[jobs]\nheartbeat_interval = 1\nstale_after = 3\nsilent_after = 4\n{jobs}\n{tables}"
        "[jobs.daily-digest]\nenabled = false\n"
        f"[alerts]\n{alerts_table}\n"
        f'[telegram]\nchat_id = "{CHAT}"\napi_base = "{tg.api_base}"\nreviewers = [{REVIEWER}]\n{telegram}\n'
    )


def site(tmp_path: Path, name: str, agentdb: Path, extra: str) -> SiteFiles:
    return write_config(tmp_path / name, name, agentdb, tmp_path / "hub.db", extra=extra)


def texts(tg: FakeTelegram, about: str | None = None) -> list[str]:
    return [m["text"] for m in tg.messages() if about is None or re.match(rf"^\W+ (still: )?{about} ", m["text"])]


def online(hub: Path, name: str) -> bool:
    """The site's daemon heartbeats, and it has synced its episodes."""
    backbone = HubBackbone(hub, "reader", create=False)
    try:
        return any(s.site == name and s.online and s.total_synced for s in backbone.sites())
    finally:
        backbone.close()


def laptop_and_vm(
    tmp_path: Path, make_agentdb: Callable[..., Path], daemons: Daemons, extra: str
) -> tuple[SiteFiles, SiteFiles, dict[str, subprocess.Popen[bytes]]]:
    """Two sites on one hub, their daemons started, vm synced and online."""
    laptop = site(tmp_path, "laptop", make_agentdb(2, name="laptop.db"), extra)
    vm = site(tmp_path, "vm", make_agentdb(2, seed=3, name="vm.db"), extra)
    procs = {s.name: daemons(s.config, tmp_path / f"{s.name}.log") for s in (laptop, vm)}
    for s in (laptop, vm):
        wait_started(s, procs[s.name], tmp_path / f"{s.name}.log")
    wait_for(lambda: online(laptop.hub, "vm"), what="vm online")
    return laptop, vm, procs


def no_token_in(*paths: Path) -> None:
    for path in paths:
        assert TOKEN not in path.read_text(encoding="utf-8", errors="replace"), path


def test_a_stopped_site_is_said_once_and_its_recovery_once_through_an_outage_and_a_kill(
    tmp_path: Path,
    make_agentdb: Callable[..., Path],
    agents: Callable[[Path], AgentProcess],
    daemons: Daemons,
    tg: FakeTelegram,
) -> None:
    extra = fast(tg)
    laptop = site(tmp_path, "laptop", make_agentdb(3, name="laptop.db"), extra)
    desk = site(tmp_path, "desk", make_agentdb(3, seed=2, name="desk.db"), extra)
    vm_db = make_agentdb(3, seed=3, name="vm.db")
    vm = site(tmp_path, "vm", vm_db, extra)
    logs = {s.name: tmp_path / f"{s.name}.log" for s in (laptop, desk, vm)}
    began = time.monotonic()
    procs = {s.name: daemons(s.config, logs[s.name]) for s in (laptop, desk, vm)}
    for s in (laptop, desk, vm):
        wait_started(s, procs[s.name], logs[s.name])
    wait_for(lambda: all(online(laptop.hub, n) for n in ("laptop", "desk", "vm")), what="three sites online")
    time.sleep(6)  # on purpose, past silent_after: idle sites with nothing to sync are not silent
    assert texts(tg) == []

    # Telegram goes down; vm stops. Its alerts wait in the outbox.
    tg.down()
    stopped = time.monotonic()
    procs["vm"].send_signal(signal.SIGTERM)
    # A stop takes milliseconds here; once under a loaded parallel run (11-28) it took over 30 s,
    # the scheduler's jobs still running meanwhile (cause not found yet: see the lead's note). The
    # test is about the alerts through the outage; systemd gives a stop 90 s.
    assert procs["vm"].wait(90) == 0
    outbox = AlertStore(laptop.hub.with_name("hub.alerts.db"))
    wait_for(lambda: outbox.waiting() >= 2, timeout=30, what="vm's two alerts queued")
    # Both senders are killed while the alerts wait; one comes back after Telegram does.
    for name in ("laptop", "desk"):
        procs[name].kill()
        procs[name].wait(10)
    tg.up()
    procs["laptop"] = daemons(laptop.config, logs["laptop"])
    wait_started(laptop, procs["laptop"], logs["laptop"])
    wait_for(lambda: len(texts(tg, "vm")) >= 2, timeout=90, what="vm's alerts delivered")
    procs["desk"] = daemons(desk.config, logs["desk"])
    wait_started(desk, procs["desk"], logs["desk"])
    assert sorted(texts(tg, "vm")) == sorted(
        [t for t in texts(tg, "vm") if t.startswith(("🔴 vm daemon silent for", "🟠 vm has not synced for"))]
    )
    assert len(texts(tg, "vm")) == 2
    offline_message = next(m for m in tg.messages() if m["text"].startswith("🔴 vm"))
    assert [b["text"] for b in offline_message["reply_markup"]["inline_keyboard"][0]] == ["Snooze 1 h", "Mute 1 day"]

    # vm's agent writes three episodes while vm is down; vm comes back and catches up.
    agent = agents(vm_db)
    for i in range(3):
        agent.store(episode(100 + i))
    agent.close()
    procs["vm"] = daemons(vm.config, logs["vm"])
    wait_started(vm, procs["vm"], logs["vm"])
    # Down from its last heartbeat and its last sync (durations count from when the signal went bad):
    # both after its start, so at most this long.
    down_for, up_for = time.monotonic() - stopped, time.monotonic() - began
    wait_for(lambda: len(texts(tg, "vm")) >= 4, timeout=60, what="vm's two recoveries")
    time.sleep(4)  # on purpose: and nothing more is said
    said = texts(tg, "vm")
    assert len(said) == 4, said
    recoveries = [t for t in said if t.startswith("✅ vm recovered after ")]
    assert len(recoveries) == 2, said
    assert any(t.endswith(", 3 episodes caught up") for t in recoveries), recoveries
    for text in recoveries:
        found = re.search(r"after (?:(\d+) min|(\d+) s)", text)
        assert found is not None, text
        seconds = int(found[1]) * 60 if found[1] else int(found[2])
        assert 3 <= seconds <= up_for + 5, (text, down_for, up_for)
    assert all(m["chat_id"] in (CHAT, int(CHAT)) for m in tg.messages())

    # The token travelled only in request paths: nowhere in logs, status output or the store.
    for proc in procs.values():
        proc.send_signal(signal.SIGTERM)
    for proc in procs.values():
        proc.wait(30)
    status = memsync("status", "--config", str(laptop.config))
    assert TOKEN not in status.stdout + status.stderr
    assert f"chat {CHAT}: nothing waiting; last sent " in " ".join(status.stdout.split())
    assert all(f"/bot{TOKEN}/" in path for path in tg.requests_log)
    no_token_in(*logs.values(), laptop.hub.with_name("hub.alerts.db"))
    outbox.close()


def test_quiet_hours_hold_a_warning_a_critical_goes_and_a_snooze_holds_its_reminders(
    tmp_path: Path, make_agentdb: Callable[..., Path], daemons: Daemons, tg: FakeTelegram
) -> None:
    now = datetime.now(UTC)
    window = f"{(now - timedelta(hours=1)):%H:%M}-{(now + timedelta(hours=2)):%H:%M}"
    # Reminders after 20 s and 30 s down: the alert is snoozed well before (on a loaded machine too).
    extra = fast(tg, alerts="reminders = [0.0056, 0.0084]", telegram=f'quiet_hours = "{window}"')
    laptop, _vm, procs = laptop_and_vm(tmp_path, make_agentdb, daemons, extra)
    procs["vm"].send_signal(signal.SIGTERM)
    assert procs["vm"].wait(30) == 0
    wait_for(lambda: texts(tg, "vm") != [], timeout=30, what="vm's critical alert")
    (critical,) = [m for m in tg.messages() if m["text"].startswith("🔴 vm")]
    snooze = critical["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
    tg.press(tg.messages().index(critical) + 1, snooze, from_id=7, first_name="Bo")
    wait_for(lambda: any("Snoozed until" in a.get("text", "") for a in tg.answers()), what="the snooze answered")
    # The warning waits for the quiet hours to end; the snoozed alert's reminders wait for the snooze.
    store = AlertStore(laptop.hub.with_name("hub.alerts.db"))
    wait_for(lambda: store.waiting() >= 1, what="the warning queued for later")
    store.close()

    def held() -> list[list[str]]:
        with closing(sqlite3.connect(laptop.hub.with_name("hub.alerts.db"))) as conn:
            keys = [r[0] for r in conn.execute("SELECT key FROM outbox WHERE sent_at IS NULL ORDER BY id")]
        return [k.split(":")[1:5:3] for k in keys]

    # The warning and its reminders (it was not snoozed) wait for the quiet hours to end: once both
    # reminders are queued, both reminder times have passed (the same schedule as the critical's)...
    expected = [["silent", "down"], ["silent", "reminder"], ["silent", "reminder"]]
    wait_for(lambda: held() == expected, timeout=90, what="the warning and its two reminders held")
    # ...and the snoozed critical alert sent no reminder: the snooze holds them.
    assert texts(tg, "vm") == [critical["text"]]


def test_a_flap_inside_the_grace_says_nothing(
    tmp_path: Path, make_agentdb: Callable[..., Path], daemons: Daemons, tg: FakeTelegram
) -> None:
    extra = fast(tg, alerts="grace = { offline = 3, silent = 3 }")  # minutes: longer than any flap here
    laptop, vm, procs = laptop_and_vm(tmp_path, make_agentdb, daemons, extra)
    store = AlertStore(laptop.hub.with_name("hub.alerts.db"))

    def offline_state() -> str | None:
        state = store.machine("offline:vm")
        return None if state is None else state.state

    for _ in range(2):  # vm goes away long enough to be judged offline, and comes back inside the grace
        procs["vm"].send_signal(signal.SIGTERM)
        assert procs["vm"].wait(30) == 0
        wait_for(lambda: offline_state() == "late", timeout=30, what="vm observed offline (late)")
        procs["vm"] = daemons(vm.config, tmp_path / "vm.log")
        wait_started(vm, procs["vm"], tmp_path / "vm.log")
        wait_for(lambda: offline_state() == "ok", timeout=30, what="vm observed back")
    time.sleep(3)  # on purpose: sweeps run past the flap, and none of them says anything
    store.close()
    assert texts(tg) == []


def approval(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return memsync("approval", *args, "--config", str(config))


def test_approvals_from_a_button_through_getupdates(
    tmp_path: Path, make_agentdb: Callable[..., Path], daemons: Daemons, tg: FakeTelegram
) -> None:
    extra = fast(tg, jobs="[jobs.approval_timeouts]\nquick = 0.1\n")  # quick: expires after 6 s
    laptop = site(tmp_path, "laptop", make_agentdb(2, name="laptop.db"), extra)
    proc = daemons(laptop.config, tmp_path / "laptop.log")
    wait_started(laptop, proc, tmp_path / "laptop.log")

    def ask(category: str, *more: str) -> str:
        done = approval(laptop.config, "request", "--category", category, "--summary", f"do {category}", *more)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def message_of(approval_id: str) -> int:
        sent = [i for i, m in enumerate(tg.messages(), start=1) if f"id {approval_id}" in m["text"]]
        assert len(sent) == 1, tg.messages()
        return sent[0]

    # Approve: the reviewer presses; someone else's press is refused; a double tap decides once.
    first = ask("send_message", "--episode", "1")
    message = message_of(first)
    assert [b["callback_data"] for b in tg.current(message)["reply_markup"]["inline_keyboard"][0]] == [
        f"a:{first}",
        f"r:{first}",
        f"d:{first}",
    ]
    waiting = subprocess.Popen(
        [sys.executable, "-m", "daemon", "approval", "wait", first, "--config", str(laptop.config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    tg.press(message, f"a:{first}", from_id=7, first_name="Mallory")
    wait_for(lambda: any("not a reviewer" in a.get("text", "") for a in tg.answers()), what="the refusal")
    tg.press(message, f"a:{first}", from_id=REVIEWER, first_name="Ann")
    tg.press(message, f"a:{first}", from_id=REVIEWER, first_name="Ann")
    _out, err = waiting.communicate(timeout=30)
    assert waiting.returncode == 0, err
    assert "approved by Ann" in err
    wait_for(lambda: tg.current(message)["text"].startswith("✅ Approved by Ann at "), what="the message edited")
    assert tg.current(message).get("reply_markup") is None
    hub = HubBackbone(laptop.hub, "reader", create=False)
    try:
        decided = hub.approval(first)
        assert decided is not None
        assert (decided.status, decided.resolved_by) == ("approved", "Ann")
    finally:
        hub.close()
    answers = [a.get("text") for a in tg.answers()]
    assert answers.count("Approved.") == 1
    assert f"Approval {first} is already approved by Ann." in answers

    # Reject -> exit 1; a category with a short timeout expires -> exit 2 and its message says so.
    second = ask("financial", "--cost", "12.5")
    tg.press(message_of(second), f"r:{second}", from_id=REVIEWER)
    assert approval(laptop.config, "wait", second, "--timeout", "30").returncode == 1
    third = ask("quick")
    assert approval(laptop.config, "wait", third, "--timeout", "30").returncode == 2
    wait_for(
        lambda: tg.current(message_of(third))["text"].startswith("⌛ Expired unanswered"),
        timeout=30,
        what="the expired message edited",
    )
    # The policy approves some at once: no message, and `wait` returns at once.
    fourth = ask("external_api", "--cost", "0.02", "--json")
    decided_now = json.loads(fourth)
    assert (decided_now["status"], decided_now["resolvedBy"]) == ("approved", "policy")
    assert approval(laptop.config, "wait", decided_now["approvalId"]).returncode == 0
    assert not any(f"id {decided_now['approvalId']}" in m["text"] for m in tg.messages())
    # A person at a terminal: list and reject.
    fifth = ask("destructive")
    listed = memsync("approvals", "list", "--status", "pending", "--json", "--config", str(laptop.config))
    assert [a["approvalId"] for a in json.loads(listed.stdout)] == [fifth]
    done = memsync("approvals", "reject", fifth, "--by", "ops", "--config", str(laptop.config))
    assert done.returncode == 0, done.stderr
    assert approval(laptop.config, "wait", fifth).returncode == 1
    wait_for(lambda: tg.current(message_of(fifth))["text"].startswith("❌ Rejected by ops"), what="edited")

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0
    no_token_in(tmp_path / "laptop.log")


def test_a_refused_token_is_one_sentence_without_the_token(
    tmp_path: Path, make_agentdb: Callable[..., Path], tg: FakeTelegram, monkeypatch: pytest.MonkeyPatch
) -> None:
    laptop = site(tmp_path, "laptop", make_agentdb(1, name="laptop.db"), fast(tg))
    wrong = "999999:WRONG-token_also_secret"
    monkeypatch.setenv("MEMSYNC_TELEGRAM__BOT_TOKEN", wrong)
    done = memsync("telegram", "check", "--config", str(laptop.config))
    assert done.returncode == 78
    assert "MEMSYNC_TELEGRAM__BOT_TOKEN" in done.stderr
    assert wrong not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    monkeypatch.setenv("MEMSYNC_TELEGRAM__BOT_TOKEN", TOKEN)
    done = memsync("telegram", "check", "--send", "--config", str(laptop.config))
    assert done.returncode == 0, done.stderr
    assert "memsync_test_bot" in done.stderr
    assert TOKEN not in done.stdout + done.stderr
    assert texts(tg) == ["memsync on laptop can reach this chat"]


def test_the_digest_goes_once_a_day_across_sites_and_on_demand(
    tmp_path: Path, make_agentdb: Callable[..., Path], tg: FakeTelegram
) -> None:
    extra = fast(tg).replace("[jobs.daily-digest]\nenabled = false\n", "")
    laptop = site(tmp_path, "laptop", make_agentdb(3, name="laptop.db"), extra)
    vm = site(tmp_path, "vm", make_agentdb(2, seed=3, name="vm.db"), extra)
    for s in (laptop, vm):
        assert memsync("sync", "--config", str(s.config)).returncode == 0
    # The 06:00 slot of a fixed day, fired by both sites' schedulers (a laptop at 09:10 after a
    # sleep): one builds the digest and queues it once.
    fired_at = datetime(2026, 11, 25, 9, 10, tzinfo=UTC)
    spec = next(j for j in DEFAULT_JOBS if j.name == "daily-digest")
    for s in (laptop, vm, laptop):
        settings = s.settings()
        hub = HubBackbone(s.hub, s.name, clock=lambda: int(fired_at.timestamp() * 1000))
        outbox = AlertStore(settings.alerts_path)
        try:
            run_job(spec, settings, hub, hub, now=fired_at.timestamp(), alerts=Alerts(settings, outbox))
        finally:
            hub.close()
            outbox.close()
    # A manual run (any day) rebuilds the latest day's digest and queues nothing.
    done = memsync("jobs", "run", "daily-digest", "--config", str(vm.config))
    assert done.returncode == 0, done.stderr
    assert "queued" not in done.stderr
    assert memsync("telegram", "check", "--config", str(laptop.config)).returncode == 0
    day = "2026-11-24"
    done = memsync("digest", "--send", "--date", day, "--config", str(vm.config))
    assert done.returncode == 0, done.stderr
    assert f"digest for {day} sent to Telegram" in done.stderr
    # The queued 06:00 digest goes with the next send (a daemon's round; here, the command's).
    digests = [t for t in texts(tg) if t.startswith("☀️ memsync digest")]
    assert len(digests) == 2
    assert all(t.splitlines()[0] == f"☀️ memsync digest for {day}" for t in digests)
    assert "▪ laptop:" in digests[0]
    assert "▪ vm:" in digests[0]
    done = memsync("digest", "--send", "--date", "1999-01-01", "--config", str(vm.config))
    assert done.returncode == 1
    assert "no digest for 1999-01-01" in done.stderr


def test_a_token_the_daemon_finds_refused_is_an_error_in_the_log_and_in_status(
    tmp_path: Path,
    make_agentdb: Callable[..., Path],
    daemons: Daemons,
    tg: FakeTelegram,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wrong = "999999:WRONG-token_also_secret"
    monkeypatch.setenv("MEMSYNC_TELEGRAM__BOT_TOKEN", wrong)
    laptop = site(tmp_path, "laptop", make_agentdb(1, name="laptop.db"), fast(tg))
    log = tmp_path / "laptop.log"
    proc = daemons(laptop.config, log)
    wait_started(laptop, proc, log)

    def refusals() -> list[dict[str, object]]:
        return [r for r in log_events(log) if "refused the bot token" in str(r.get("detail", ""))]

    wait_for(lambda: bool(refusals()), what="the refusal logged")
    (said,) = refusals()  # once, however often the daemon meets it
    assert said["level"] == "error", said
    _, report = status_json(laptop.config)
    refused = report["telegram"]["tokenRefused"]
    assert "telegram refused the bot token" in refused
    assert "MEMSYNC_TELEGRAM__BOT_TOKEN" in refused
    shown = memsync("status", "--config", str(laptop.config), env={"COLUMNS": "300"})
    assert "telegram refused the bot token" in flat(shown.stdout)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0
    assert len(refusals()) == 1
    for text in (log.read_text(encoding="utf-8"), shown.stdout, shown.stderr, json.dumps(report)):
        assert wrong not in text
