"""Tier: e2e.

A real daemon on the embedded hub whose AgentDB file is damaged for good (bytes overwritten in
place, or truncated) says so: the problem is logged as damage, status is down, and once the
``agentdb`` grace has passed the critical alert the README promises is logged and sent to Telegram
(a fake Bot API on 127.0.0.1); restoring the file recovers, and says that too."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import SiteFiles, hub_episodes, status_json, wait_for, wait_started, write_config
from fake_telegram import FakeTelegram
from harness import log_events, logged

Daemons = Callable[..., subprocess.Popen[bytes]]
TOKEN = "424242:damaged-file-test-token"
CHAT = "-1009"
PAGE = 4096


@pytest.fixture
def tg(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeTelegram]:
    monkeypatch.setenv("MEMSYNC_TELEGRAM__BOT_TOKEN", TOKEN)
    with FakeTelegram(token=TOKEN) as fake:
        yield fake


def overwrite_in_place(path: Path) -> None:
    with path.open("r+b") as f:  # the episodes table's root page, as a stray write would
        f.seek(PAGE + 8)
        f.write(b"\xff" * 300)


def truncate(path: Path) -> None:
    with path.open("r+b") as f:
        f.truncate(3 * PAGE)


@pytest.mark.parametrize("damage", [overwrite_in_place, truncate], ids=["overwritten", "truncated"])
def test_a_damaged_agentdb_file_is_a_critical_alert_and_its_repair_a_recovery(
    tmp_path: Path,
    make_agentdb: Callable[..., Path],
    daemons: Daemons,
    tg: FakeTelegram,
    damage: Callable[[Path], None],
) -> None:
    agentdb = make_agentdb(12)
    good = tmp_path / "backup.db"
    shutil.copyfile(agentdb, good)
    extra = (
        "[jobs]\nheartbeat_interval = 1\n[jobs.daily-digest]\nenabled = false\n"
        "[alerts]\ngrace = { agentdb = 0.05 }\n"  # 3 s instead of a minute
        f'[telegram]\nchat_id = "{CHAT}"\napi_base = "{tg.api_base}"\n'
    )
    site: SiteFiles = write_config(tmp_path / "laptop", "laptop", agentdb, tmp_path / "hub.db", extra=extra)
    log = tmp_path / "daemon.log"
    proc = daemons(site.config, log)
    wait_started(site, proc, log)
    wait_for(lambda: len(hub_episodes(site.hub, "laptop")) == 12, what="the first pass")

    damage(agentdb)

    def alerted() -> list[dict[str, object]]:
        return logged(log, "alert", signal="agentdb", subject="laptop", kind="down")

    wait_for(lambda: bool(alerted()), timeout=60, what="the agentdb alert")
    (alert,) = alerted()
    assert alert["severity"] == "critical"
    assert f"{agentdb} is damaged (" in str(alert["detail"]), alert
    (problem,) = logged(log, "problem", kind="source_error")
    assert problem["level"] == "error"
    assert "has not changed for" in str(problem["detail"]), problem
    said = " ".join(str(e.get("detail", "")) for e in log_events(log))
    assert "being rewritten" not in said
    assert "kept changing" not in said
    wait_for(lambda: any("cannot read its AgentDB file" in m["text"] for m in tg.messages()), what="Telegram")
    (message,) = [m for m in tg.messages() if "laptop" in m["text"]]
    assert message["text"].startswith("🔴 laptop "), message["text"]

    code, report = status_json(site.config)
    assert (code, report["health"]) == (2, "down"), report
    assert any(r.startswith("AgentDB unreadable") for r in report["reasons"]), report

    shutil.copyfile(good, agentdb)  # restored from a backup
    wait_for(lambda: bool(logged(log, "alert", signal="agentdb", kind="recovered")), timeout=60, what="recovery")
    wait_for(lambda: any(m["text"].startswith("✅ laptop") for m in tg.messages()), what="the recovery sent")
