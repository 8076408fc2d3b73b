"""What memsync watches, and how each observation is read from what the backbone knows. Pure.

Fleet signals are read from the registry (``Registry.sites``) and the pending approvals, by
whoever runs the global ``alerts`` job: on the embedded hub one daemon under the slot's lease; on
Convex the deployment's own cron (``cloud_functions/alerts.ts``, the same table), so that a site
that stopped is reported even when every site has stopped. Local signals are what only the site's
own daemon can see (its backbone unreachable, its AgentDB file unreadable); each daemon watches its
own, so each is said once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Final, NamedTuple

from daemon.alerts.machine import Observation, Severity, SignalSpec
from daemon.counts import counted
from sync.backbone.base import Approval, SiteState
from sync.policy.approvals import (
    APPROVAL_TIMEOUTS_MS,
    DEFAULT_APPROVAL_TIMEOUT_MS,
    effective_expiry,
    severity_of_priority,
)

MINUTE_MS: Final = 60_000

SIGNALS: Final[Mapping[str, SignalSpec]] = {
    # Fleet: from the registry and the approvals.
    "silent": SignalSpec("silent", "warning", grace_ms=0, bad_count=1),  # the sync-health job judged it down
    "offline": SignalSpec("offline", "critical", grace_ms=0, bad_count=1),  # its daemon's heartbeat went stale
    "quarantine": SignalSpec("quarantine", "warning", grace_ms=0, bad_count=1),
    "paused": SignalSpec("paused", "warning", grace_ms=10 * MINUTE_MS, bad_count=0),  # indexing paused (quota)
    "expiring": SignalSpec("expiring", "warning", grace_ms=0, bad_count=1, reminders_ms=(), recovery=False),
    # Local: the site's own daemon.
    "backbone": SignalSpec("backbone", "critical", grace_ms=5 * MINUTE_MS, bad_count=0),
    "agentdb": SignalSpec("agentdb", "critical", grace_ms=MINUTE_MS, bad_count=0),
}
FLEET_SIGNALS: Final = ("silent", "offline", "quarantine", "paused")
APPROVAL_LEAD_MS: Final = 10 * MINUTE_MS  # warn this long before an unanswered approval expires


@dataclass(frozen=True, slots=True)
class Subject:
    signal: str
    subject: str  # a site name, or an approval id

    @property
    def key(self) -> str:
        return f"{self.signal}:{self.subject}"


def duration(ms: float) -> str:
    """'45 s', '12 min', '2 h 5 min', '3 d 4 h': how people say how long."""
    seconds = int(max(ms, 0) // 1000)
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def idle(site: SiteState) -> bool:
    """A site with nothing to sync: its daemon is online and says it has no backlog. Such a site is
    quiet, not silent (an agent idle for the night must not page anyone)."""
    return site.online and site.backlog == 0


def observe_sites(sites: Iterable[SiteState], now_ms: int) -> dict[Subject, Observation]:
    """Each site's fleet signals as observed now. A site that never heartbeated has no daemon to
    judge offline (and no counts); one never judged by sync-health is not silent, nor is an idle
    one. Silent and offline went bad when the site last synced and when its daemon last beat: the
    figures their texts give, and what their alerts' durations count from."""
    found: dict[Subject, Observation] = {}
    for site in sites:
        synced = None if site.total_synced is None else float(site.total_synced)
        if site.health is not None:
            silent = site.health == "down" and not idle(site)
            silent_for = now_ms - site.last_sync_at if site.last_sync_at is not None else None
            detail = "has not synced" + ("" if silent_for is None else f" for {duration(silent_for)}")
            found[Subject("silent", site.site)] = Observation(
                silent, now_ms, detail if silent else "is syncing again", synced, bad_since=site.last_sync_at
            )
        if site.last_heartbeat is None:
            continue
        quiet_for = duration(now_ms - site.last_heartbeat)
        found[Subject("offline", site.site)] = Observation(
            not site.online,
            now_ms,
            f"daemon silent for {quiet_for}" if not site.online else "daemon is back",
            synced,
            bad_since=site.last_heartbeat,
        )
        found[Subject("quarantine", site.site)] = Observation(
            site.quarantined > 0,
            now_ms,
            f"{counted(site.quarantined, 'row')} quarantined (memsync quarantine list)"
            if site.quarantined
            else "quarantine empty",
            float(site.quarantined),
        )
        found[Subject("paused", site.site)] = Observation(
            site.index_state == "paused",
            now_ms,
            "search indexing paused: the embedding quota is exhausted"
            if site.index_state == "paused"
            else "search indexing resumed",
        )
    return found


def observe_approvals(
    pending: Iterable[Approval], now_ms: int, lead_ms: int = APPROVAL_LEAD_MS
) -> dict[Subject, Observation]:
    """A pending approval that expires within ``lead_ms`` and nobody answered."""
    return {
        Subject("expiring", a.approval_id): Observation(
            a.status == "pending" and a.expires_at - now_ms <= lead_ms,
            now_ms,
            f"approval {a.approval_id} ({a.action_type} by {a.agent_name} on {a.site or '?'}) expires in "
            f"{duration(a.expires_at - now_ms)}, unanswered",
        )
        for a in pending
        if a.status == "pending"
    }


def severity_of(subject: Subject, approvals: Mapping[str, Approval]) -> Severity:
    """An approval's own priority raises its expiry warning to critical."""
    spec = SIGNALS[subject.signal]
    if subject.signal == "expiring":
        found = approvals.get(subject.subject)
        if found is not None and severity_of_priority(found.priority) == "critical":
            return "critical"
    return spec.severity


@dataclass(frozen=True, slots=True)
class FleetRules:
    """What the fleet's sweep decides with, from the settings: how long before an unanswered
    approval expires it is said (``alerts.approval_lead``), and the approval timeouts that decide
    when it expires (``jobs.approval_timeouts``, ``jobs.default_approval_timeout``), as the
    expire-pending-approvals job applies them."""

    approval_lead_ms: int = APPROVAL_LEAD_MS
    timeouts_ms: Mapping[str, int] = field(default_factory=lambda: dict(APPROVAL_TIMEOUTS_MS))
    default_timeout_ms: int = DEFAULT_APPROVAL_TIMEOUT_MS


class FleetSweep(NamedTuple):
    observed: dict[Subject, Observation]
    severity: dict[Subject, Severity]  # each observation's: its signal's, or its approval's priority


def observe_fleet(
    sites: Iterable[SiteState], pending: Iterable[Approval], now_ms: int, rules: FleetRules
) -> FleetSweep:
    """The alerts job's decision from the fleet at ``now_ms`` (``cloud_functions/lib/alertSignals.ts``'s
    ``observeFleet``; contracts/alert_sweep.json): every site's signals and every pending
    approval's, each with the severity it is said at. An approval expires when the expiry job
    would expire it (``effective_expiry`` under the rules' timeouts), not at its stored deadline
    alone: a category whose timeout is shorter is warned of before it goes."""

    def expiry(a: Approval) -> int:
        timeout = rules.timeouts_ms.get(a.action_type, rules.default_timeout_ms)
        return effective_expiry(a.created_at, a.expires_at, timeout, a.defer_count)

    approvals = [replace(a, expires_at=expiry(a)) for a in pending]
    observed = observe_sites(sites, now_ms) | observe_approvals(approvals, now_ms, rules.approval_lead_ms)
    by_id = {a.approval_id: a for a in approvals}
    return FleetSweep(observed, {subject: severity_of(subject, by_id) for subject in observed})
