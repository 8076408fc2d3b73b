"""What every search surface (``memsync search``, the demo, the MCP tools) shares with people:
results as text, and the ``--since`` moment read from "7d" or an ISO date. Light: the standard
library and the wire types, so that ``memsync search``'s fast path may import it.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import IO

from sync.search.request import SearchResult

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


def render_results(results: list[SearchResult], out: IO[str], *, color: bool = False, now: float | None = None) -> None:
    """Results as text: a header line each, then the first lines of the episode. Plain text unless
    ``color`` (a terminal): bold rank, dim details."""
    now = time.time() if now is None else now
    bold, dim, reset = ("\033[1m", "\033[2m", "\033[0m") if color else ("", "", "")
    if not results:
        out.write("no matches\n")
        return
    for rank, r in enumerate(results, 1):
        extras = [r.agent or "?", f"{r.when} ({_age(r.ts, now)})" if r.when else _age(r.ts, now)]
        if r.similarity is not None:
            extras.append(f"similarity {r.similarity:.2f}")
        if r.reward is not None:
            extras.append(f"reward {r.reward:g}")
        if r.duplicates:
            extras.append(f"+{r.duplicates} near-duplicate{'s' if r.duplicates > 1 else ''}")
        if r.archived:
            extras.append("archived")
        out.write(f"{bold}{rank}.{reset} {r.site}#{r.source_id}  {dim}{' · '.join(extras)}{reset}\n")
        lines = [line for line in r.text.splitlines() if line.strip()]
        if r.passage is not None and r.passage.index > 0:
            # A long episode matched past its start: its first line, then the passage that matched.
            shown = [line for line in r.passage.text.splitlines() if line.strip()] or [""]
            where = f"{dim}[passage {r.passage.index + 1}/{r.passage.count}]{reset}"
            lines = [*lines[:1], f"{where} {shown[0]}", *shown[1:2]]
        for line in lines[:3]:
            out.write(f"   {line[:160]}\n")
