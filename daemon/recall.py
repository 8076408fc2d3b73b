"""``memsync search`` and ``memsync reindex``: through the running daemon when there is one (it owns
the embedded store), in this process when there is not.

Which way: if the control socket answers, the daemon does the work; if no daemon holds the site,
this process opens the store itself (and a daemon started meanwhile waits for it to let go); a
daemon running without the warm layer is reported as such, never worked around.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.markup import escape

from daemon.config import Settings
from daemon.control import ControlError, DaemonNotListening, ask
from daemon.lock import DAEMON, lock_holder
from daemon.site import open_backbone
from daemon.warm import offline_layer
from sync.errors import ConfigError, MemsyncError, TransientError
from sync.warm.search import SearchRequest, SearchResult

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


def _raise(exc: ControlError) -> None:
    if exc.kind == "invalid":
        raise ValueError(str(exc)) from None
    if exc.kind == "config":
        raise ConfigError(str(exc)) from None
    if exc.kind == "transient":
        raise TransientError(str(exc)) from None
    raise MemsyncError(f"the daemon failed: {exc}") from None


def _daemon_without_warm(settings: Settings) -> None:
    holder = lock_holder(settings.lock_path)
    if holder is not None and holder.role == DAEMON:
        raise ConfigError(
            f"the daemon (pid {holder.pid}) owns this site but does not answer on {settings.socket_path}: "
            "is warm.enabled false, or warm.socket different in its configuration?"
        )


def run_search(settings: Settings, request: SearchRequest) -> tuple[list[SearchResult], str]:
    """The results, and who produced them ("daemon" or "this process")."""
    request.check()
    try:
        reply = ask(settings.socket_path, {"op": "search", "request": request.to_wire()})
    except DaemonNotListening:
        _daemon_without_warm(settings)
    except ControlError as exc:
        _raise(exc)
    else:
        return [SearchResult.from_wire(r) for r in reply], "daemon"
    with offline_layer(settings, backbone=None) as layer:
        return layer.search(request), "this process"


def run_reindex(settings: Settings, on_progress: Callable[[Mapping[str, Any]], None]) -> tuple[dict[str, Any], str]:
    try:
        reply = ask(settings.socket_path, {"op": "reindex"}, on_progress=on_progress, timeout=24 * 3600)
    except DaemonNotListening:
        _daemon_without_warm(settings)
    except ControlError as exc:
        _raise(exc)
    else:
        return dict(reply), "daemon"
    backbone = open_backbone(settings, create=False)
    try:
        with offline_layer(settings, backbone) as layer:
            report = layer.reindex(lambda r: on_progress(asdict(r)))
    finally:
        backbone.close()
    return asdict(report), "this process"


def _age(ts: int | None, now: float) -> str:
    if ts is None:
        return "?"
    seconds = max(0.0, now - ts / 1000)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit} ago"
    return f"{seconds:.0f}s ago"


def render_results(results: list[SearchResult], console: Console, now: float | None = None) -> None:
    now = time.time() if now is None else now
    if not results:
        console.print("no matches")
        return
    for rank, r in enumerate(results, 1):
        extras = [r.agent or "?", _age(r.ts, now)]
        if r.similarity is not None:
            extras.append(f"similarity {r.similarity:.2f}")
        if r.reward is not None:
            extras.append(f"reward {r.reward:g}")
        if r.duplicates:
            extras.append(f"+{r.duplicates} near-duplicate{'s' if r.duplicates > 1 else ''}")
        console.print(f"[bold]{rank}.[/] {escape(r.site)}#{escape(r.source_id)}  [dim]{escape(' · '.join(extras))}[/]")
        lines = [line for line in r.text.splitlines() if line.strip()]
        for line in lines[:3]:
            console.print(f"   {escape(line[:160])}", highlight=False)
