"""Correcting the type or the tags of a saved memory (``memsync retag``, the viewer's memory page).

A saved memory (``memsync remember``, the MCP ``save_memory``: keys ``m<n>``) lives in its site's
journal, so it is corrected there: the journal row's tags and metadata are rewritten in place
(``sync.source.journal.correction``, which also keeps the record of the correction), and the
site's daemon pushes the row as an edit of the same key, as it pushes any edited episode; every
site's index then reads the new type and tags from the change feed. Only the site that saved a
memory holds its journal, so a memory is corrected on that site; an agent's own episode (from its
AgentDB file, which memsync never writes) cannot be corrected here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from daemon.usecases.memory.uses import MemoryKey, key_of
from sync.source.journal.correction import Correction, correct
from sync.source.journal.source import journal_id, local_id_of

if TYPE_CHECKING:
    from daemon.config import Settings


class NotCorrectable(ValueError):
    """A memory this site cannot correct: another site's, or an agent's episode."""


@dataclass(frozen=True, slots=True)
class Retagged:
    key: MemoryKey
    memory_type: str | None  # the type given now (None: inferred by the rules)
    tags: tuple[str, ...]
    was_type: str | None
    was_tags: tuple[str, ...]
    changed: bool

    @property
    def message(self) -> str:
        name = f"{self.key[0]}:{self.key[1]}"
        if not self.changed:
            return f"{name} already has that type and those tags: nothing changed"
        parts = []
        if self.memory_type != self.was_type:
            parts.append(f"type {self.memory_type or 'inferred'} (was {self.was_type or 'inferred'})")
        if self.tags != self.was_tags:
            parts.append(f"tags {', '.join(self.tags) or 'none'} (were {', '.join(self.was_tags) or 'none'})")
        return f"corrected {name}: {'; '.join(parts)}; every site sees it once this site's daemon pushes it"


def memory_key(text: str, site: str) -> MemoryKey:
    """``SITE:ID``, ``SITE#ID``, or a bare ``m<n>`` of ``site``."""
    text = text.strip()
    return key_of(text) if (":" in text or "#" in text) else (site, text)


def _checked(settings: Settings, key: MemoryKey) -> int:
    """The journal row ``key`` names; NotCorrectable or LookupError when there is none here."""
    site, source_id = key
    local_id = local_id_of(source_id)
    if local_id is None:
        raise NotCorrectable(
            f"{site}:{source_id} is an agent's own episode (its AgentDB file, which memsync never writes): only a "
            "saved memory (m<n>, from `memsync remember` or save_memory) can have its type or tags corrected"
        )
    if site != settings.site.name:
        raise NotCorrectable(
            f"{site}:{source_id} was saved on {site}, whose journal holds it: correct it there (`memsync retag` on "
            f"{site}), and every site sees the correction"
        )
    current = _current_key(settings, local_id)
    if current is not None and current != source_id:
        raise LookupError(f"{site}:{source_id} is no longer in this site's journal (its row now holds {current})")
    return local_id


def _current_key(settings: Settings, local_id: int) -> str | None:
    """The key the journal's row was last pushed under (the journal's sidecar), None if never."""
    from sync.push.sidecar import Sidecar

    try:
        sidecar = Sidecar(settings.journal_state_path, readonly=True)
    except FileNotFoundError:
        return journal_id(local_id, 0)
    try:
        occupants = sidecar.occupants_for([local_id]).get(local_id) or []
    finally:
        sidecar.close()
    return max(occupants, key=lambda o: o.generation).source_id if occupants else journal_id(local_id, 0)


def _json(text: object, default: Any) -> Any:
    if not isinstance(text, str | bytes) or not text:
        return default
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return default


def retag(
    settings: Settings,
    memory: str,
    *,
    memory_type: str | None,
    tags: Sequence[str] | None,
    by: str,
    clock: Callable[[], float],
) -> Retagged:
    """Correct the memory ``memory`` names (``memory_key``): its type (None: unchanged), its tags
    (None: unchanged; its ``project:`` tags stay). ValueError (NotCorrectable among them) says why
    it cannot be; LookupError for a memory this site's journal does not hold."""
    from sync.source.journal.store import Journal

    key = memory_key(memory, settings.site.name)
    local_id = _checked(settings, key)
    if not settings.journal_path.exists():
        raise LookupError(f"{key[0]}:{key[1]}: this site has saved no memory yet (no journal)")
    with Journal(settings.journal_path) as journal:
        row = journal.get(local_id)
        if row is None:
            raise LookupError(f"{key[0]}:{key[1]} is not in this site's journal (forgotten?)")
        raw_tags = _json(row.get("tags"), [])
        raw_metadata = _json(row.get("metadata"), {})
        done = correct(
            [str(t) for t in raw_tags] if isinstance(raw_tags, list) else [],
            raw_metadata if isinstance(raw_metadata, dict) else {},
            Correction(memory_type, tags, by, int(clock() * 1000)),
        )
        if done.changed:
            journal.retag(local_id, done.tags, done.metadata)
    now_type = done.metadata.get("memory_type")
    return Retagged(
        key,
        now_type if isinstance(now_type, str) else None,
        done.tags,
        done.was_type,
        done.was_tags,
        done.changed,
    )


def correctable(settings: Settings, site: str, source_id: str) -> str | None:
    """Why this site cannot correct the memory ``site:source_id`` (a sentence), or None when it can."""
    try:
        _checked(settings, (site, source_id))
    except (ValueError, LookupError) as exc:
        return str(exc)
    return None
