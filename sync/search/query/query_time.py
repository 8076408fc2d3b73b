"""The time a query names, as windows of epoch milliseconds: pure, the clock passed in.

"What did we decide in June 2023?", "the deploy on 9 November", "what broke last week?": a memory
from that time is likelier the one meant. ``windows`` reads the dates and the few relative phrases
people use and gives the windows they name (UTC days); search marks each candidate whose time lies
in one (``sync.search.query.ranking.rerank_model``'s ``in_window``), and the learned ranking weighs it. This is the
time-aware query expansion of LongMemEval (Wu et al., 2024), without a language model: a phrase
it does not know names no window, and the query ranks as if it named none.

- a day: ``9 November 2022``, ``November 9, 2022``, ``9th Dec``, ``2023-05-08``: that day, a day
  either side (a person's day is not UTC's);
- a month: ``June 2023``, ``in June`` (the last June that has begun): that month;
- a year: ``in 2023``, ``during 2022``: that year;
- ``today``, ``yesterday``, ``this week``, ``last week``, ``this month``, ``last month``,
  ``last year``, ``N days|weeks|months ago``.

A date without a year is the last one not after now.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Final

Window = tuple[int, int]  # [start, end) in epoch milliseconds

MONTHS: Final = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DAY_FIRST = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?\b", re.IGNORECASE)
_MONTH_FIRST = re.compile(rf"\b{_MONTH}\s+{_DAY}\b(?:,?\s+{_YEAR})?", re.IGNORECASE)
_ISO = re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<month>[01]\d)-(?P<day>[0-3]\d)\b")
_MONTH_YEAR = re.compile(rf"\b{_MONTH}(?:,?\s+(?:of\s+)?{_YEAR})", re.IGNORECASE)
_IN_MONTH = re.compile(rf"\b(?:in|during|since|throughout|of|last)\s+{_MONTH}\b(?!\s*[0-3]?\d\b)", re.IGNORECASE)
_YEAR_ALONE = re.compile(rf"\b(?:in|during|since|throughout|of)\s+{_YEAR}\b", re.IGNORECASE)
_AGO = re.compile(r"\b(?P<n>\d{1,3}|a|an|one|two|three|four|five|six)\s+(?P<unit>day|week|month)s?\s+ago\b", re.I)
_WORDS: Final = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
DAY_MS: Final = 86_400_000


def windows(query: str, now_ms: int) -> list[Window]:
    """The windows ``query`` names, in the order found (none: it names no time)."""
    now = datetime.fromtimestamp(now_ms / 1000, tz=UTC)
    found: list[Window] = []
    taken: list[tuple[int, int]] = []  # spans of the query already read, so a day is not also its month

    def add(match: re.Match[str], window: Window | None) -> None:
        if window is not None and not any(s < match.end() and match.start() < e for s, e in taken):
            found.append(window)
            taken.append(match.span())

    for pattern in (_ISO, _DAY_FIRST, _MONTH_FIRST):
        for m in pattern.finditer(query):
            add(m, _day(m, now))
    for m in _MONTH_YEAR.finditer(query):
        add(m, _month(MONTHS[m["month"].lower()], int(m["year"])))
    for m in _IN_MONTH.finditer(query):
        month = MONTHS[m["month"].lower()]
        if m["month"].lower() == "may" and not m[0].lower().startswith(("in", "during")):
            continue  # "of may" / "since may": too often the verb
        add(m, _month(month, now.year if month <= now.month else now.year - 1))
    for m in _YEAR_ALONE.finditer(query):
        add(m, _span(datetime(int(m["year"]), 1, 1, tzinfo=UTC), datetime(int(m["year"]) + 1, 1, 1, tzinfo=UTC)))
    for m in _AGO.finditer(query):
        add(m, _ago(m, now))
    for phrase, window in _RELATIVE.items():
        for m in re.finditer(rf"\b{phrase}\b", query, re.IGNORECASE):
            add(m, window(now))
    return found


def within(ts_ms: int | None, found: list[Window]) -> bool:
    """Whether ``ts_ms`` lies in any of the windows."""
    return ts_ms is not None and any(start <= ts_ms < end for start, end in found)


def _span(start: datetime, end: datetime) -> Window:
    return int(start.timestamp() * 1000), int(end.timestamp() * 1000)


def _day(m: re.Match[str], now: datetime) -> Window | None:
    month_text = m["month"]
    month = int(month_text) if month_text.isdigit() else MONTHS[month_text.lower().rstrip(".")]
    day = int(m["day"])
    year = int(m["year"]) if m["year"] else None
    try:
        moment = datetime(year or now.year, month, day, tzinfo=UTC)
        if year is None and moment > now:
            moment = moment.replace(year=now.year - 1)
    except ValueError:
        return None  # 31 June, 29 February of a common year: no such day
    return _span(moment - timedelta(days=1), moment + timedelta(days=2))


def _month(month: int, year: int) -> Window:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    return _span(start, end)


def _ago(m: re.Match[str], now: datetime) -> Window:
    count = _WORDS.get(m["n"].lower()) or int(m["n"])
    days = {"day": 1, "week": 7, "month": 30}[m["unit"].lower()] * count
    slack = max(1, days // 4)  # "three weeks ago" is roughly, not exactly, 21 days
    return _span(now - timedelta(days=days + slack), now - timedelta(days=max(0, days - slack)))


def _week_start(now: datetime) -> datetime:
    return datetime(now.year, now.month, now.day, tzinfo=UTC) - timedelta(days=now.weekday())


def _month_start(now: datetime, back: int = 0) -> datetime:
    index = now.year * 12 + now.month - 1 - back
    return datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)


def _midnight(now: datetime) -> datetime:
    return datetime(now.year, now.month, now.day, tzinfo=UTC)


_RELATIVE: Final[dict[str, Callable[[datetime], Window]]] = {
    "today": lambda now: _span(_midnight(now) - timedelta(days=1), now + timedelta(days=1)),
    "yesterday": lambda now: _span(_midnight(now) - timedelta(days=2), _midnight(now) + timedelta(days=1)),
    "this week": lambda now: _span(_week_start(now) - timedelta(days=1), now + timedelta(days=1)),
    "last week": lambda now: _span(_week_start(now) - timedelta(days=8), _week_start(now) + timedelta(days=1)),
    "this month": lambda now: _span(_month_start(now), now + timedelta(days=1)),
    "last month": lambda now: _span(_month_start(now, 1), _month_start(now)),
    "last year": lambda now: _span(datetime(now.year - 1, 1, 1, tzinfo=UTC), datetime(now.year, 1, 1, tzinfo=UTC)),
}
