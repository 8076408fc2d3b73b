"""What a presser sees after a button press (contracts/press_answers.json), word for word: each case's
updates read as the polling daemon reads them (``pressed``) and pressed through the hub's own
``HubPresses`` over a real hub file and alert store, as Convex's webhook test presses it through
telegram.ts (cloud_functions/pressAnswers.test.ts)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import FakeClock, write_config
from contract import contract

from daemon.alerts.machine import Observation
from daemon.alerts.messages import alert_id
from daemon.alerts.signals import Subject
from daemon.alerts.store import AlertStore
from daemon.alerts.watch import Alerts
from daemon.config import load_settings
from daemon.hubserver.telegram import HubPresses
from daemon.telegram.callbacks import pressed
from sync.backbone.hub import HubBackbone

ANSWERS: dict[str, Any] = contract("press_answers.json")
NOW_MS: int = ANSWERS["now"]
MINUTE_MS = 60_000
CHAT = "-1001"
REVIEWER, STRANGER = 42, 7


@pytest.mark.parametrize("case", ANSWERS["cases"], ids=[c["name"] for c in ANSWERS["cases"]])
def test_the_presser_sees_the_contract_s_words(
    case: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMSYNC_TELEGRAM__BOT_TOKEN", "123456:TEST-token_abc")
    site = write_config(
        tmp_path / "site",
        "laptop",
        tmp_path / "a.db",
        tmp_path / "hub.db",
        extra=f'[telegram]\nchat_id = "{CHAT}"\nreviewers = [{REVIEWER}]\n',
    )
    clock = FakeClock(NOW_MS / 1000)
    store = AlertStore(tmp_path / "alerts.db", clock=clock)
    silent = Subject("offline", "laptop")
    settings = load_settings(site.config)
    Alerts(settings, store).observe({silent: Observation(True, NOW_MS, "daemon silent")})
    hub = HubBackbone(tmp_path / "hub.db", "laptop", clock=lambda: round(clock() * 1000))
    presses = HubPresses(settings, hub, store)
    try:
        approval = hub.create_approval(
            agent_name="claude",
            action_type="deploy",
            priority="normal",
            reviewers=[str(REVIEWER)],
            expires_at=NOW_MS + case["expires_in_min"] * MINUTE_MS,
            summary="ship it",
        )
        targets = {"approval": approval, "alert": alert_id(silent.key), "unknown": None}
        seen = []
        for asked in case["presses"]:
            clock.now = (NOW_MS + asked.get("at_min", 0) * MINUTE_MS) / 1000
            approval_press = asked.get("action", "a") in "ard"
            target = targets[asked.get("target", "approval" if approval_press else "alert")]
            if target is None:
                target = "999999" if approval_press else "0000000000000000"
            press = pressed(
                {
                    "callback_query": {
                        "id": "q",
                        "from": {
                            "id": REVIEWER if asked.get("by", "reviewer") == "reviewer" else STRANGER,
                            "first_name": "Ann",
                        },
                        "message": {"message_id": 1, "chat": {"id": int(CHAT) if asked.get("chat") != "other" else 5}},
                        "data": asked["data"] if "data" in asked else f"{asked['action']}:{target}",
                    }
                }
            )
            assert press is not None  # a button press, which is answered whatever it asks
            seen.append(presses.apply(press))
        assert seen == [answer.replace("{approval}", approval) for answer in case["answers"]]
    finally:
        hub.close()
