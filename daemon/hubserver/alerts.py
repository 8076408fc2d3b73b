"""The fleet's alert sweep on the embedded hub (``cloud_functions/alerts.ts``'s ``sweep`` on
Convex): every site's registry row and every pending approval observed now (``observe_fleet``, the
pure decision both servers hold to contracts/alert_sweep.json), each through its machine; what is
said is logged and queued for Telegram. The ``alerts`` job runs it (``scheduled``)."""

from __future__ import annotations

from typing import Protocol

from daemon.alerts.machine import Notice
from daemon.alerts.signals import FleetRules, Subject, observe_fleet
from daemon.alerts.watch import Alerts
from sync.backbone.base import Approvals, Registry


class FleetView(Registry, Approvals, Protocol):
    """What the alerts job reads: every site's registry row and the pending approvals."""


def sweep(
    fleet: FleetView, alerts: Alerts, *, rules: FleetRules, now_ms: int
) -> tuple[int, list[tuple[Subject, Notice]]]:
    """How many signals were observed, and what was said."""
    pending = fleet.approvals("pending", all_sites=True)
    found = observe_fleet(fleet.sites(), pending, now_ms, rules)
    said = alerts.observe(found.observed, found.severity)
    # An approval no longer pending has nothing more to expire: its machine goes.
    alerts.store.drop_machines("expiring", {a.approval_id for a in pending})
    return len(found.observed), said
