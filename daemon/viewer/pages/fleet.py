"""The Fleet page, pure: every site and agent (online or not, since when), lag, backlog, the
index's state, the jobs' last runs and the alerts standing. The part that changes is one fragment
(``fleet_live``), sent again over server-sent events when it changes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from daemon.health.fleet import iso_ms
from daemon.usecases.fleet.jobs import JobView
from daemon.viewer.html import Markup, ago, join, notice, render, table, when


def _ms(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def site_row(site: Mapping[str, Any], now_ms: int) -> Markup:
    online = bool(site.get("online"))
    beat = _ms(site.get("last_heartbeat"))
    lag = site.get("lag_s")
    return render(
        """<tr data-site="{name}" class="{state}"><th scope="row">{name}</th>
<td class="state">{state}</td><td>{seen}</td><td>{health}</td><td>{lag}</td><td>{backlog}</td>
<td>{index}</td><td>{synced}</td><td>{quarantined}</td><td>{version}</td></tr>""",
        name=site.get("site", "?"),
        state="online" if online else "offline",
        seen=render("{verb} {ago}", verb="heartbeat" if online else "silent since", ago=ago(beat, now_ms)),
        health=site.get("health") or "not judged",
        lag="?" if lag is None else f"{float(lag):.0f}s",
        backlog="?" if site.get("backlog") is None else site["backlog"],
        index=site.get("index_state") or "off",
        synced="?" if site.get("total_synced") is None else site["total_synced"],
        quarantined=site.get("quarantined", 0),
        version=site.get("version") or "?",
    )


def agent_row(agent: Mapping[str, Any], now_ms: int) -> Markup:
    return render(
        '<tr><th scope="row">{name}</th><td>{site}</td><td class="state">{status}</td><td>{seen}</td>'
        "<td>{platform}</td><td>{last}</td></tr>",
        name=agent.get("agent_name", "?"),
        site=agent.get("site", "?"),
        status=agent.get("status", "?"),
        seen=ago(_ms(agent.get("last_heartbeat")), now_ms),
        platform=agent.get("platform") or "?",
        last=when(_ms(agent.get("last_episode_at"))),
    )


def job_row(job: JobView, now_ms: int) -> Markup:
    last = job.last
    return render(
        '<tr><th scope="row">{job}</th><td>{schedule}</td><td>{where}</td><td>{outcome}</td><td>{at}</td>'
        "<td>{summary}</td><td>{next}</td></tr>",
        job=job.job,
        schedule=job.schedule if job.enabled else "disabled",
        where=job.where,
        outcome="never ran" if last is None else f"{last.outcome} on {last.site}",
        at="" if last is None else ago(last.started_at, now_ms),
        summary="" if last is None else last.summary,
        next=job.next or "",
    )


def alert_row(alert: Mapping[str, Any], now_ms: int) -> Markup:
    quiet = []
    if (_ms(alert.get("snoozedUntil")) or 0) > now_ms:
        quiet.append(f"snoozed until {iso_ms(alert['snoozedUntil'])}")
    if (_ms(alert.get("mutedUntil")) or 0) > now_ms:
        quiet.append(f"muted until {iso_ms(alert['mutedUntil'])}")
    return render(
        '<tr><th scope="row">{signal}</th><td>{subject}</td><td>{state}</td><td>{since}</td><td>{quiet}</td></tr>',
        signal=alert.get("signal", "?"),
        subject=alert.get("subject", ""),
        state=alert.get("state", "?"),
        since=ago(_ms(alert.get("since")), now_ms),
        quiet=", ".join(quiet),
    )


def fleet_live(
    report: Mapping[str, Any] | None,
    jobs: Sequence[JobView],
    alerts: Sequence[Mapping[str, Any]],
    now_ms: int,
    problem: str | None = None,
) -> Markup:
    """The fleet's state: what the live stream replaces. ``report``: ``usecases.status.fleet``'s."""
    if report is None:
        return notice(problem or "the backbone did not answer", "problem")
    reasons = join(render("<li>{r}</li>", r=r) for r in report.get("reasons", []))
    return render(
        """<p class="health {health}">fleet: <strong>{health}</strong> · {pending} pending approvals</p>
<ul class="reasons">{reasons}</ul>
<h2>Sites</h2>{sites}
<h2>Agents</h2>{agents}
<h2>Jobs</h2>{jobs}
<h2>Alerts</h2>{alerts}
<p class="meta">as of {now}</p>""",
        health=report.get("health", "?"),
        pending=report.get("pendingApprovals", 0),
        reasons=reasons,
        sites=table(
            ("site", "state", "seen", "health", "lag", "backlog", "index", "synced", "quarantined", "version"),
            join(site_row(s, now_ms) for s in report.get("sites", [])),
            "no site has synced yet",
        ),
        agents=table(
            ("agent", "site", "status", "seen", "platform", "last episode"),
            join(agent_row(a, now_ms) for a in report.get("agents", [])),
            "no agent seen yet",
        ),
        jobs=table(
            ("job", "schedule", "where", "last run", "when", "summary", "next"),
            join(job_row(j, now_ms) for j in jobs),
            "no jobs",
        ),
        alerts=table(
            ("signal", "subject", "state", "since", "quiet"),
            join(alert_row(a, now_ms) for a in alerts),
            "no alert stands",
        ),
        now=when(now_ms),
    )


def fleet_body(live: Markup) -> Markup:
    """The page: the live fragment in the element the script refreshes."""
    return render('<div id="fleet-live" data-events="/fleet/events" aria-live="polite">{live}</div>', live=live)
