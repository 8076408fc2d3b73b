"""The one-line summaries the periodic jobs leave in their run records, worded as Convex's crons
word theirs (``cloud_functions/lib/runSummary.ts``; contracts/run_summaries.json). Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from daemon.counts import counted

ALERTS_OFF: Final = "alerts are off"
NAMED_NOTICES: Final = 3  # the alerts job's summary names this many notices and counts the rest: one short line


def stale_summary(offline: int, pruned: int) -> str:
    """mark-stale-agents: how many agents or sites went offline, and how many were pruned."""
    went = (
        f"{offline} {'agent or site' if offline == 1 else 'agents or sites'} went offline"
        if offline
        else "every agent with a recent heartbeat is online"
    )
    return f"{went}; {counted(pruned, 'agent')} silent past the retention pruned" if pruned else went


def expired_summary(expired: int) -> str:
    """expire-pending-approvals."""
    return f"{counted(expired, 'pending approval')} expired"


def health_summary(changed: Sequence[tuple[str, str]]) -> str:
    """sync-health: each site whose state changed, and its new state."""
    return "; ".join(f"{site} {state}" for site, state in changed) if changed else "no site changed state"


def digest_summary(day: str, episodes: int, sites: int, queued: bool) -> str:
    """daily-digest: the day covered, and whether its message was queued (the outbox sends it)."""
    return f"digest for {day}: {counted(episodes, 'episode')} from {counted(sites, 'site')}" + (
        "; queued for Telegram" if queued else ""
    )


def archive_summary(archived: int, days: float, files: int | None = None, failures: Sequence[str] = ()) -> str:
    """cleanup-old-episodes. ``files``: the files written, where the server counts them (Convex
    does; the hub's sweep returns the episodes alone); ``failures``: the weeks that failed."""
    age = f"{days:g} {'day' if days == 1 else 'days'}"
    wrote = "" if files is None else f", {counted(files, 'file')} written"
    failed = f"; {counted(len(failures), 'week')} failed: {'; '.join(failures)}" if failures else ""
    return f"{counted(archived, 'episode')} older than {age} archived{wrote}{failed}"


def alerts_summary(observed: int, said: Sequence[tuple[str, str]]) -> str:
    """alerts: how many signals were observed, and what was said: each notice's kind and subject
    (``down offline:vm``), the first ``NAMED_NOTICES`` named and the rest counted, so that the line
    stays short however much a sweep says."""
    seen = f"{counted(observed, 'signal')} observed"
    if not said:
        return f"{seen}, nothing to say"
    named = ", ".join(f"{kind} {subject}" for kind, subject in said[:NAMED_NOTICES])
    more = f" and {len(said) - NAMED_NOTICES} more" if len(said) > NAMED_NOTICES else ""
    return f"{seen}; {counted(len(said), 'notice')}: {named}{more}"
