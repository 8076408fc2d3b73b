"""The Digest page, pure: one day's digest (today's so far, or a past day's as stored), and the
days around it to move to."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from daemon.counts import counted
from daemon.usecases.fleet.jobs import Digest
from daemon.viewer.html import Markup, join, notice, render


def site_item(site: Mapping[str, Any]) -> Markup:
    rate, reward = site.get("successRate"), site.get("meanReward")
    figures = [counted(int(site.get("episodes", 0)), "episode")]
    if rate is not None:
        figures.append(f"{float(rate):.0%} success")
    if reward is not None:
        figures.append(f"mean reward {float(reward):.2f}")
    figures += [
        f"health {site.get('health') or '?'}",
        f"{site.get('quarantined', 0)} quarantined",
        f"{site.get('conflicts', 0)} conflicts",
    ]
    agents = join(
        render(
            "<li><strong>{agent}</strong>: {episodes}; top tasks: {tasks}</li>",
            agent=a.get("agent", "?"),
            episodes=counted(int(a.get("episodes", 0)), "episode"),
            tasks=", ".join(str(t) for t in (a.get("topTasks") or [])[:3]) or "none",
        )
        for a in site.get("agents", [])
    )
    return render(
        "<li><h3>{site}</h3><p>{figures}</p><ul>{agents}</ul></li>",
        site=site.get("site", "?"),
        figures=" · ".join(figures),
        agents=agents,
    )


def digest_body(found: Digest, today: str, days: Sequence[str]) -> Markup:
    """``days``: the days to offer, newest first (today among them)."""
    links = join(
        render(
            '<a href="/digest?day={day}"{current}>{label}</a>',
            day=day,
            label="today so far" if day == today else day,
            current=Markup(' aria-current="page"') if day == found.day else "",
        )
        for day in days
    )
    title = "today so far" if found.day == today else found.day
    if found.found is None:
        content = notice(found.missing or f"no digest for {found.day}")
    else:
        approvals = found.found.get("approvals") or {}
        content = render(
            '<ul class="digest">{sites}</ul><p>approvals: {pending} pending, {expired} expired</p>',
            sites=join(site_item(s) for s in found.found.get("sites", [])),
            pending=approvals.get("pending", 0),
            expired=approvals.get("expired", 0),
        )
    return render('<nav class="days">{links}</nav><h2>{title}</h2>{content}', links=links, title=title, content=content)
