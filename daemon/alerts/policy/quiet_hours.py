"""Quiet hours: a warning raised inside them waits until they end; a critical alert goes at once.
Pure (the time is an argument)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_WINDOW = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$")


def parse_quiet_hours(text: str) -> tuple[int, int]:
    """ "22:00-07:00" -> (1320, 420): minutes after midnight of its start and end."""
    found = _WINDOW.match(text)
    if found is None:
        raise ValueError(f"write quiet hours as HH:MM-HH:MM (e.g. 22:00-07:00), not {text!r}")
    h1, m1, h2, m2 = (int(g) for g in found.groups())
    if h1 > 23 or h2 > 23 or m1 > 59 or m2 > 59:
        raise ValueError(f"{text!r} is not a time of day range")
    if (h1, m1) == (h2, m2):
        raise ValueError(f"quiet hours {text!r} start and end at the same minute")
    return h1 * 60 + m1, h2 * 60 + m2


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r} (use an IANA name such as Europe/Paris)") from None


def send_after(severity: str, at_ms: int, quiet_hours: str | None, timezone: str = "UTC") -> int:
    """When a message raised at ``at_ms`` may go: at once, or for a warning inside the quiet hours,
    when they end (in ``timezone``, so across a daylight-saving change too)."""
    if quiet_hours is None or severity == "critical":
        return at_ms
    start, end = parse_quiet_hours(quiet_hours)
    tz = zone(timezone)
    local = datetime.fromtimestamp(at_ms / 1000, tz)
    minute = local.hour * 60 + local.minute
    inside = start <= minute < end if start < end else (minute >= start or minute < end)
    if not inside:
        return at_ms
    ends = local.replace(hour=end // 60, minute=end % 60, second=0, microsecond=0)
    if ends <= local:
        ends = (ends.replace(tzinfo=None) + timedelta(days=1)).replace(tzinfo=tz)
    return int(ends.timestamp() * 1000)
