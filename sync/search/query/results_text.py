"""What every search surface (``memsync search``, the demo, the MCP tools) shares with people:
results as text, and the ``--since`` moment read from "7d" or an ISO date. Light: the standard
library and the wire types, so that ``memsync search``'s fast path may import it.

A result reads, compactly:

    1. laptop#412 · FAILED attempt · reward 0.40 · decision · relevance 0.97
       exact E11000 · 3/4 terms · meaning 0.71 · same session as #1 · claude-code · 8 May 2026 (3d ago)
       MongoDB insert failed with E11000 duplicate key error on users.email

how it went first (a failed attempt said as such), its type (a tag that names one), how relevant
it is and why it ranked (``sync.search.query.judgement.why_words``) in place of a raw score, then
its first lines or the passage that matched. An answer ends with what was cut and how to see it,
and with the identifiers the query names that no memory holds.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import IO

from sync.identifiers import siblings
from sync.search.query.judgement import why_words
from sync.search.request import SearchAnswer, SearchResult

_SINCE = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(value: str, now: float) -> int:
    """``7d``, ``12h``, ``30m`` ago, or an ISO date/time; milliseconds since the epoch."""
    text = value.strip()
    if match := _SINCE.match(text):
        return int((now - float(match[1]) * _UNIT_SECONDS[match[2]]) * 1000)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"--since {value!r}: use a duration like 7d, 12h, 30m or an ISO date like 2026-11-01"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _age(ts: int | None, now: float) -> str:
    if ts is None:
        return "?"
    seconds = max(0.0, now - ts / 1000)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit} ago"
    return f"{seconds:.0f}s ago"


def outcome(result: SearchResult) -> str:
    """How it went, in words: ``FAILED attempt · reward 0.40``, ``worked · reward 0.90``, or "".
    AgentDB stores success 0 and reward 0 when an agent does not say (a captured session, a
    conversation turn): that reads "no outcome recorded" rather than calling a note a failure."""
    reward = f"reward {result.reward:.2f}" if result.reward is not None else ""
    if result.success is None:
        return reward
    if not result.success and result.reward == 0:
        return "no outcome recorded"
    said = "worked" if result.success else "FAILED attempt"
    return f"{said} · {reward}" if reward else said


def relevance_words(relevance: float) -> str:
    return f"relevance {relevance:.2f}" if relevance >= 0.01 or relevance == 0 else "relevance <0.01"


def render_results(results: list[SearchResult], out: IO[str], *, color: bool = False, now: float | None = None) -> None:
    """Results as text: a line of how it went and how relevant, a line of why and where from, then
    the first lines of the episode. Plain text unless ``color`` (a terminal): bold rank, dim details."""
    now = time.time() if now is None else now
    bold, dim, red, reset = ("\033[1m", "\033[2m", "\033[31m", "\033[0m") if color else ("", "", "", "")
    if not results:
        out.write("no matches\n")
        return
    for rank, r in enumerate(results, 1):
        how = outcome(r)
        if how.startswith("FAILED"):
            how = f"{red}{how}{reset}"
        head = [
            f"{r.site}#{r.source_id}",
            how,
            r.memory_type or "",
            relevance_words(r.relevance) if r.relevance is not None else "",
        ]
        extras = [why_words(r.why) if r.why is not None else ""]
        extras += [r.agent or "?", f"{r.when} ({_age(r.ts, now)})" if r.when else _age(r.ts, now)]
        if r.duplicates:
            extras.append(f"+{r.duplicates} near-duplicate{'s' if r.duplicates > 1 else ''}")
        if r.archived:
            extras.append("archived")
        out.write(f"{bold}{rank}.{reset} {' · '.join(p for p in head if p)}\n")
        out.write(f"   {dim}{' · '.join(e for e in extras if e)}{reset}\n")
        lines = [line for line in r.text.splitlines() if line.strip()]
        if r.passage is not None and r.passage.index > 0:
            # A long episode matched past its start: its first line, then the passage that matched.
            shown = [line for line in r.passage.text.splitlines() if line.strip()] or [""]
            where = f"{dim}[passage {r.passage.index + 1}/{r.passage.count}]{reset}"
            lines = [*lines[:1], f"{where} {shown[0]}", *shown[1:2]]
        for line in lines[:3]:
            out.write(f"   {line[:160]}\n")


def render_answer(
    answer: SearchAnswer, out: IO[str], *, color: bool = False, now: float | None = None, see_all: str = "--all"
) -> None:
    """An answer as text: its results (``render_results``), how many were cut and how to see them
    (``see_all``: the option that does, in the caller's words), and the identifiers the query names
    that no memory holds."""
    if answer.results or not answer.cut:
        render_results(answer.results, out, color=color, now=now)
    for line in answer_notes(answer, see_all):
        out.write(f"{line}\n")


def answer_notes(answer: SearchAnswer, see_all: str = "--all") -> list[str]:
    """What an answer says beside its results: what was cut, what is absent."""
    notes = []
    if answer.cut:
        them = "them" if answer.cut > 1 else "it"
        if answer.results:
            notes.append(f"{answer.cut} more under the relevance floor: {see_all} shows {them}")
        else:
            some = "results" if answer.cut > 1 else "result"
            notes.append(f"nothing over the relevance floor ({answer.cut} {some} under it): {see_all} shows {them}")
    for identifier in answer.absent:
        alike = [a for a in answer.lookalikes if siblings(identifier, a)]
        held = f"; look-alike held: {', '.join(alike)}" if alike else ""
        notes.append(f"absent: {identifier} (no memory searched holds it{held})")
    return notes
