"""The alert state machine: from observations, what to say and when. Pure (no clock, no I/O): the
daemon's alert job, its run loop and the logs use it, and ``cloud_functions/lib/alertMachine.ts``
is a line-for-line copy that Convex runs (``contracts/alert_cases.json`` holds both to the same
answers).

One machine per (signal, subject), e.g. ("silent", "laptop"):

    ok --bad--> late --(N bad in a row, or bad for the grace)--> down --good--> ok
     ^           |                                                 |
     +---good----+ (a flap inside the grace: nothing said)         +-- reminders while it stays down

Exactly one notice when it goes down and one when it recovers (with how long it was down and how
far its value moved meanwhile, e.g. episodes caught up), reminders after 1 h, 4 h and 24 h down.
How long is measured from when the signal went bad: the first bad observation, or earlier where
the observer knows (``Observation.bad_since``: a daemon silent since its last heartbeat was silent
for 5 min when first seen so, and its down notice says so, not 0 s). The grace counts from there too.
A snooze holds reminders (the one that fell due while snoozed goes out when the snooze ends); a mute
holds the down notice and the reminders, not the recovery of a down that was said.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final, Literal

HOUR_MS: Final = 3_600_000
REMINDERS_MS: Final = (HOUR_MS, 4 * HOUR_MS, 24 * HOUR_MS)

Severity = Literal["warning", "critical"]
NoticeKind = Literal["down", "reminder", "recovered"]


@dataclass(frozen=True, slots=True)
class SignalSpec:
    code: str  # short: it goes into Telegram's 64-byte callback data
    severity: Severity
    grace_ms: int  # bad for this long -> down (0: at the first bad observation)
    bad_count: int  # or this many bad observations in a row -> down (0: the grace alone decides)
    reminders_ms: tuple[int, ...] = REMINDERS_MS  # after how long down each reminder goes out
    recovery: bool = True  # say when it recovers


@dataclass(frozen=True, slots=True)
class AlertState:
    state: Literal["ok", "late", "down"] = "ok"
    since: int = 0  # ms: when the current bad spell began (late, down) or when it became ok
    streak: int = 0  # bad observations in a row
    down_at: int = 0  # ms: when it went down
    reminders: int = 0  # reminders accounted for in this spell (sent, or skipped as superseded)
    notified: bool = False  # the down notice of this spell was said
    value_at_down: float | None = None
    snoozed_until: int = 0  # ms
    muted_until: int = 0  # ms


@dataclass(frozen=True, slots=True)
class Observation:
    bad: bool
    at: int  # ms
    detail: str = ""  # what was seen, as a sentence fragment ("no sync for 2 h 5 min")
    value: float | None = None  # a figure whose movement the recovery reports (episodes synced)
    # ms: when the condition seen went bad, where the observer knows (a daemon's last heartbeat);
    # None: at this observation
    bad_since: int | None = None


@dataclass(frozen=True, slots=True)
class Notice:
    kind: NoticeKind
    severity: Severity
    down_for_ms: int
    detail: str
    caught_up: float | None = None  # recovered: how far the value moved while down


def step(spec: SignalSpec, current: AlertState | None, obs: Observation) -> tuple[AlertState, list[Notice]]:  # noqa: PLR0911 - one return per transition reads best
    """The state after ``obs``, and what to say about it (at most one notice)."""
    s = current if current is not None else AlertState(since=obs.at)
    muted, snoozed = s.muted_until > obs.at, s.snoozed_until > obs.at
    if not obs.bad:
        notices: list[Notice] = []
        if s.state == "down" and s.notified and spec.recovery:
            moved = None if obs.value is None or s.value_at_down is None else obs.value - s.value_at_down
            notices.append(Notice("recovered", spec.severity, obs.at - s.since, obs.detail, moved))
        if s.state == "ok":
            return s, notices
        return replace(
            s, state="ok", since=obs.at, streak=0, down_at=0, reminders=0, notified=False, value_at_down=None
        ), notices
    if s.state == "down":
        if not s.notified:  # went down while muted: said once the mute is over
            if muted:
                return s, []
            return replace(s, notified=True), [Notice("down", spec.severity, obs.at - s.since, obs.detail)]
        due = sum(1 for after in spec.reminders_ms if obs.at - s.down_at >= after)
        if due <= s.reminders or muted or snoozed:
            return s, []
        return replace(s, reminders=due), [Notice("reminder", spec.severity, obs.at - s.since, obs.detail)]
    if s.state == "ok":
        began = obs.at if obs.bad_since is None else min(obs.bad_since, obs.at)
        s = replace(s, state="late", since=began, streak=1)
    else:
        s = replace(s, streak=s.streak + 1)
    if not ((spec.bad_count > 0 and s.streak >= spec.bad_count) or obs.at - s.since >= spec.grace_ms):
        return s, []
    down = replace(s, state="down", down_at=obs.at, reminders=0, value_at_down=obs.value, notified=not muted)
    return down, [] if muted else [Notice("down", spec.severity, obs.at - s.since, obs.detail)]


def snooze(current: AlertState, until_ms: int) -> AlertState:
    return replace(current, snoozed_until=max(current.snoozed_until, until_ms))


def mute(current: AlertState, until_ms: int) -> AlertState:
    return replace(current, muted_until=max(current.muted_until, until_ms))
