"""The fleet's alert sweep on the embedded hub (``cloud_functions/alerts.ts``'s ``sweep`` on
Convex): every site's registry row and every pending approval observed now (``daemon/alerts/signals``),
each through its machine; what is said is logged and queued for Telegram. The ``alerts`` job runs it
(``scheduled``)."""

from __future__ import annotations

from typing import Protocol

from daemon.alerts.machine import Notice
from daemon.alerts.signals import Subject, observe_approvals, observe_sites, severity_of
from daemon.alerts.watch import Alerts
from sync.backbone.base import Approvals, Registry


class FleetView(Registry, Approvals, Protocol):
    """What the alerts job reads: every site's registry row and the pending approvals."""


def sweep(
    fleet: FleetView, alerts: Alerts, *, approval_lead_ms: int, now_ms: int
) -> tuple[int, list[tuple[Subject, Notice]]]:
    """How many signals were observed, and what was said."""
    pending = fleet.approvals("pending", all_sites=True)
    observed = observe_sites(fleet.sites(), now_ms) | observe_approvals(pending, now_ms, approval_lead_ms)
    by_id = {a.approval_id: a for a in pending}
    severity = {s: severity_of(s, by_id) for s in observed if s.signal == "expiring"}
    said = alerts.observe(observed, severity)
    alerts.store.drop_machines("expiring", set(by_id))
    return len(observed), said
