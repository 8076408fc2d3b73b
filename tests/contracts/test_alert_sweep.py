"""What the alerts job decides from the fleet at an instant (contracts/alert_sweep.json): each case
through the hub's observe_fleet, as cloud_functions/alertSweep.test.ts runs it through Convex's
observeFleet; and the hub's alerts job over a real hub file and alert store, deciding with its
config's rules and summing its run up in the contract's words (contracts/run_summaries.json)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import FakeClock, SiteFiles
from contract import contract

from daemon.alerts.signals import FleetRules, observe_fleet
from daemon.alerts.store import AlertStore
from daemon.alerts.watch import Alerts
from daemon.hubserver.scheduled import JobContext, alerts
from sync.backbone.base import Approval, SiteBeat, SiteState
from sync.backbone.hub import HubBackbone

SWEEP: dict[str, Any] = contract("alert_sweep.json")
MINUTE_MS = 60_000


def _site(view: dict[str, Any]) -> SiteState:
    """A site as the contract gives it (lib/fleet.ts's row) as the hub's registry gives it."""
    return SiteState(
        view["site"],
        view["lastHeartbeat"],
        view["online"],
        None,
        None,
        None,
        None,
        view["backlog"],
        view["indexState"],
        None,
        view["lastSyncAt"],
        view["quarantined"],
        0,
        view["health"],
        view["totalSynced"],
    )


def _approval(view: dict[str, Any]) -> Approval:
    return Approval(
        view["approvalId"],
        view["agentName"],
        view["actionType"],
        view["status"],
        view["priority"],
        (),
        view["expiresAt"],
        site=view["site"],
        created_at=view["createdAt"],
        defer_count=view["deferCount"],
    )


@pytest.mark.parametrize("case", SWEEP["cases"], ids=[c["name"] for c in SWEEP["cases"]])
def test_the_sweep_observes_what_the_contract_says(case: dict[str, Any]) -> None:
    raw = case.get("rules", SWEEP["rules"])
    found = observe_fleet(
        [_site({**SWEEP["site"], **s}) for s in case["sites"]],
        [_approval({**SWEEP["approval"], **a}) for a in case["approvals"]],
        SWEEP["now"],
        FleetRules(raw["approvalLeadMs"], raw["timeoutsMs"], raw["defaultTimeoutMs"]),
    )
    observed = [
        {
            "signal": subject.signal,
            "subject": subject.subject,
            "bad": seen.bad,
            "detail": seen.detail,
            "value": seen.value,
            "badSince": seen.bad_since,
            "severity": found.severity[subject],
        }
        for subject, seen in sorted(found.observed.items(), key=lambda item: item[0].key)
    ]
    assert observed == case["observed"]


def test_the_default_rules_are_the_contract_s() -> None:
    rules = FleetRules()
    assert [rules.approval_lead_ms, dict(rules.timeouts_ms), rules.default_timeout_ms] == [
        SWEEP["rules"]["approvalLeadMs"],
        SWEEP["rules"]["timeoutsMs"],
        SWEEP["rules"]["defaultTimeoutMs"],
    ]


def _context(settings: Any, hub: HubBackbone, store: AlertStore, now_ms: int) -> JobContext:
    return JobContext(
        settings,
        hub,
        datetime.fromtimestamp(now_ms / 1000, UTC),
        now_ms,
        None,
        coordination=hub,
        alerts=Alerts(settings, store),
    )


def test_the_hub_s_alerts_job_warns_of_an_approval_its_category_s_timeout_expires_soon(
    site_files: Callable[..., SiteFiles], tmp_path: Path
) -> None:
    """The approval's own deadline is a day away, but the config gives send_message 30 minutes:
    the expiry job expires it then, so the warning comes 10 minutes before that."""
    settings = site_files("laptop", extra="[jobs.approval_timeouts]\nsend_message = 30\n").settings()
    clock = FakeClock(SWEEP["now"] / 1000)
    now_ms = SWEEP["now"]
    store = AlertStore(tmp_path / "alerts.db", clock=clock)
    with closing(HubBackbone(tmp_path / "hub.db", "laptop", clock=lambda: round(clock() * 1000))) as hub:
        hub.heartbeat_site(SiteBeat("0.1.0", "laptop.lan", 1, None, 0, "ready", 0, 0))
        asked = hub.create_approval(
            agent_name="claude",
            action_type="send_message",
            priority="normal",
            reviewers=["42"],
            expires_at=now_ms + 24 * 60 * MINUTE_MS,
        )
        later = now_ms + 19 * MINUTE_MS
        assert alerts(_context(settings, hub, store, later)) == "4 signals observed, nothing to say"
        later = now_ms + 20 * MINUTE_MS
        assert alerts(_context(settings, hub, store, later)) == f"4 signals observed; 1 notice: down expiring:{asked}"
        assert store.machine(f"expiring:{asked}") is not None


def test_the_hub_s_alerts_job_with_alerts_off_observes_nothing(
    site_files: Callable[..., SiteFiles], tmp_path: Path
) -> None:
    settings = site_files("laptop", extra="[alerts]\nenabled = false\n").settings()
    store = AlertStore(tmp_path / "alerts.db")
    with closing(HubBackbone(tmp_path / "hub.db", "laptop")) as hub:
        hub.heartbeat_site(SiteBeat("0.1.0", "laptop.lan", 1, None, 0, "ready", 3, 0))
        assert alerts(_context(settings, hub, store, store.now_ms())) == "alerts are off"
        assert store.machine("quarantine:laptop") is None
