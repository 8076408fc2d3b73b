"""Noting that memories were handed to or opened by an agent (``noted``: one line in the site's
spool; the daemon sends it on), and naming a memory as people and results do (``key_of``).

On the light path of an agent's hook, every prompt: it imports the spool (standard library) only
and defines no class (a dataclass costs an import a millisecond). Pins and a memory's use and
salience, which open the backbone, are ``daemon.usecases.memory.pins``'.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sync.search.request import SearchResult

MemoryKey = tuple[str, str]


def noted(
    state_path: Path,
    kind: str,
    keys: Sequence[MemoryKey],
    *,
    agent: str | None,
    clock: Callable[[], float] = time.time,
) -> str | None:
    """Note that ``keys`` were used (``kind``: sync.policy.salience.USE_KINDS) by ``agent``, in the
    spool beside the site's state at ``state_path``; None when noted, else why not (one sentence:
    a use is never worth failing its caller)."""
    from sync.usage.spool import note, spool_path

    return note(spool_path(state_path), kind, keys, at_ms=int(clock() * 1000), agent=agent)


def keys_of(results: Iterable[SearchResult], ids: Iterable[str] | None = None) -> list[MemoryKey]:
    """The memory keys of ``results`` (only those whose point id is in ``ids``, when given), in order."""
    wanted = None if ids is None else set(ids)
    return [(r.site, r.source_id) for r in results if wanted is None or r.id in wanted]


def key_of(text: str) -> MemoryKey:
    """A memory named as ``SITE:ID`` (as ``get_episode`` takes it) or ``SITE#ID`` (as the context
    block and search results show it); ValueError otherwise."""
    for mark in (":", "#"):
        site, _, source_id = text.strip().partition(mark)
        if site and source_id:
            return site, source_id
    raise ValueError(f"name a memory as SITE:ID or SITE#ID (as search results show it), not {text!r}")


__all__ = ["key_of", "keys_of", "noted"]
