"""What people read: alert notices, approval requests and their outcomes, the morning digest, as
Telegram messages (plain text, so nothing needs escaping) with their buttons. Pure.

``cloud_functions/lib/alertMessages.ts`` and ``lib/digestMessage.ts`` say the same on Convex.
Callback data (at most 64 bytes): ``a:`` / ``r:`` / ``d:`` + an approval id (approve, reject,
defer), ``s:`` / ``m:`` + an alert's id (snooze 1 h, mute 1 day).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from daemon.alerts.machine import Notice
from daemon.alerts.signals import Subject, duration
from daemon.counts import counted
from sync.backbone.base import Approval

MAX_CALLBACK_DATA = 64  # bytes: Telegram's limit for an inline button's callback_data


def check_callback_data(text: str, data: str) -> None:
    size = len(data.encode())
    if not 1 <= size <= MAX_CALLBACK_DATA:
        raise ValueError(
            f"button {text!r}: callback data must be 1 to {MAX_CALLBACK_DATA} bytes of UTF-8, "
            f"not {size}: shorten it (e.g. send an id and look the rest up)"
        )


@dataclass(frozen=True, slots=True)
class Button:
    """An inline keyboard button: pressing it sends ``data`` back as a callback_query."""

    text: str
    data: str  # callback_data

    def __post_init__(self) -> None:
        check_callback_data(self.text, self.data)


Keyboard = tuple[tuple[Button, ...], ...]


@dataclass(frozen=True, slots=True)
class Message:
    text: str
    buttons: Keyboard = ()


def alert_id(key: str) -> str:
    """A short, stable id for an alert's key: what its Snooze and Mute buttons carry."""
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def hhmm(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%H:%M UTC")


def notice_message(subject: Subject, notice: Notice) -> Message:
    who = "" if subject.signal == "expiring" else f"{subject.subject} "
    if notice.kind == "recovered":
        caught = (
            f", {counted(int(notice.caught_up), 'episode')} caught up"
            if notice.caught_up is not None and notice.caught_up > 0
            else ""
        )
        return Message(f"✅ {who}recovered after {duration(notice.down_for_ms)}{caught}".replace("  ", " "))
    ident = alert_id(subject.key)
    buttons: Keyboard = ((Button("Snooze 1 h", f"s:{ident}"), Button("Mute 1 day", f"m:{ident}")),)
    if subject.signal == "expiring":  # what helps is more time to decide, not silence
        buttons = ((Button("Defer", f"d:{subject.subject}"),),)
    if notice.kind == "reminder":
        return Message(f"⏰ still: {who}{notice.detail} (down {duration(notice.down_for_ms)})", buttons)
    if subject.signal == "expiring":
        return Message(f"⏳ {notice.detail}", buttons)
    mark = "🔴" if notice.severity == "critical" else "🟠"
    return Message(f"{mark} {who}{notice.detail}", buttons)


def approval_text(a: Approval) -> str:
    lines = [f"🟡 Approval needed: {a.action_type} by {a.agent_name} on {a.site}"]
    if a.summary:
        lines.append(a.summary)
    facts = []
    if a.cost_usd is not None:
        facts.append(f"cost ${a.cost_usd:.2f}")
    if a.tests_passed is not None:
        facts.append("tests passed" if a.tests_passed else "tests failed")
    if a.source_id is not None:
        facts.append(f"episode {a.site}:{a.source_id}")
    facts.append(f"expires {hhmm(a.expires_at)}")
    lines.append(" · ".join(facts))
    lines.append(f"id {a.approval_id}")
    return "\n".join(lines)


def approval_buttons(approval_id: str) -> Keyboard:
    return (
        (
            Button("Approve", f"a:{approval_id}"),
            Button("Reject", f"r:{approval_id}"),
            Button("Defer", f"d:{approval_id}"),
        ),
    )


def approval_message(a: Approval) -> Message:
    return Message(approval_text(a), approval_buttons(a.approval_id))


def approval_outcome(a: Approval) -> Message:
    """The approval's message once something happened to it: decided and expired ones lose their
    buttons; a deferred one keeps them."""
    if a.status == "approved":
        head = f"✅ Approved by {a.resolved_by} at {hhmm(a.resolved_at or 0)}"
    elif a.status == "rejected":
        head = f"❌ Rejected by {a.resolved_by} at {hhmm(a.resolved_at or 0)}"
    elif a.status == "expired":
        head = f"⌛ Expired unanswered at {hhmm(a.resolved_at or a.expires_at)}"
    else:
        return Message(f"⏸ Deferred until {hhmm(a.expires_at)}\n{approval_text(a)}", approval_buttons(a.approval_id))
    return Message(f"{head}\n{approval_text(a)}")


def _percent(value: Any) -> str:
    return "n/a" if value is None else f"{float(value) * 100:.0f}%"


def _reward(value: Any) -> str:
    return "n/a" if value is None else f"{float(value):.2f}"


def digest_message(digest: Mapping[str, Any]) -> Message:
    """The daily digest as one message: the day's totals, then per site its episodes and health,
    and per agent its episodes."""
    sites: Sequence[Mapping[str, Any]] = digest.get("sites") or []
    approvals = digest.get("approvals") or {}
    lines = [
        f"☀️ memsync digest for {digest.get('day')}",
        f"{counted(digest.get('episodes', 0), 'episode')} from {sum(1 for s in sites if s.get('episodes'))}"
        f" of {counted(len(sites), 'site')}"
        f" · approvals: {approvals.get('pending', 0)} pending, {approvals.get('expired', 0)} expired",
    ]
    for site in sites:
        health = {"up": "syncing", "down": "SILENT"}.get(str(site.get("health")), "not judged yet")
        problems = []
        if site.get("quarantined"):
            problems.append(f"{site['quarantined']} quarantined")
        if site.get("conflicts"):
            problems.append(counted(int(site["conflicts"]), "conflict"))
        if site.get("redacted"):
            problems.append(f"{site['redacted']} redacted")
        lines.append("")
        lines.append(
            f"▪ {site.get('site')}: {counted(site.get('episodes', 0), 'episode')},"
            f" success {_percent(site.get('successRate'))},"
            f" reward {_reward(site.get('meanReward'))}; {health}" + (f"; {', '.join(problems)}" if problems else "")
        )
        for agent in site.get("agents") or []:
            lines.append(
                f"   {agent.get('agent')}: {counted(agent.get('episodes', 0), 'episode')},"
                f" success {_percent(agent.get('successRate'))}"
            )
        top = site.get("topTasks") or []
        if top:
            lines.append(f"   top tasks: {', '.join(str(t) for t in top[:3])}")
    if digest.get("truncated"):
        lines.append("")
        lines.append("(the day had more episodes than one digest reads: figures are partial)")
    return Message("\n".join(lines))
