"""Correcting a saved memory's type or tags: the journal row's new ``tags`` and ``metadata``. Pure.

A correction is an edit of the saved memory in place, not a new save: its text (what the gate
judges and the identity hash covers) stays, so the engine pushes it as an edit of the same key
(``sync.push.plan``: same identity, new content) and every site's index takes the new type and
tags from the change feed. Each correction is kept in the memory's metadata (``corrections``: when,
by whom, from what to what; the latest ``MAX_KEPT``), so a memory says how it came to be typed so.

The type is written where a save's ``--type`` is (``metadata.memory_type``, which ``sync.source.types``
reads first); the tags a person gives replace the memory's tags, except its ``project:`` tags,
which say where it belongs (the context hook's project filter) and are kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from sync.source.type_names import METADATA_KEY, check_type

MAX_TAGS: Final = 32
MAX_TAG_CHARS: Final = 200
MAX_KEPT: Final = 20  # corrections a memory keeps the record of
PROJECT_TAG: Final = "project:"
RECORD_KEY: Final = "corrections"


@dataclass(frozen=True, slots=True)
class Correction:
    """What a person corrects: the type (None: unchanged), the tags (None: unchanged; the
    ``project:`` tags stay whatever is given), who and when."""

    memory_type: str | None
    tags: Sequence[str] | None
    by: str
    at_ms: int


@dataclass(frozen=True, slots=True)
class Corrected:
    """The row's new columns, and what changed (nothing: ``changed`` is False, the row stays)."""

    tags: tuple[str, ...]
    metadata: Mapping[str, Any]
    was_type: str | None  # the type given before (None: it was inferred)
    was_tags: tuple[str, ...]
    changed: bool


def clean_tags(tags: Sequence[str]) -> tuple[str, ...]:
    """Tags as given, stripped, empty ones and repeats dropped; ValueError past the limits."""
    cleaned = tuple(dict.fromkeys(t.strip() for t in tags if t.strip()))
    if len(cleaned) > MAX_TAGS:
        raise ValueError(f"at most {MAX_TAGS} tags, got {len(cleaned)}")
    long = next((t for t in cleaned if len(t) > MAX_TAG_CHARS), None)
    if long is not None:
        raise ValueError(f"a tag is at most {MAX_TAG_CHARS} characters: {long[:40]!r}... is {len(long)}")
    return cleaned


def correct(tags: Sequence[str], metadata: Mapping[str, Any], correction: Correction) -> Corrected:
    """A row's ``tags`` and ``metadata`` with ``correction`` applied; ValueError for a type outside
    the taxonomy, too many tags, or a correction that names neither a type nor tags."""
    if correction.memory_type is None and correction.tags is None:
        raise ValueError("nothing to correct: give a type, tags, or both")
    was_tags = tuple(str(t) for t in tags)
    given = metadata.get(METADATA_KEY)
    was_type = given if isinstance(given, str) and given else None
    new_type = was_type if correction.memory_type is None else check_type(correction.memory_type)
    if correction.tags is None:
        new_tags = was_tags
    else:
        wanted = clean_tags(correction.tags)
        kept = tuple(t for t in was_tags if t.startswith(PROJECT_TAG) and t not in wanted)
        new_tags = (*wanted, *kept)
        if set(new_tags) == set(was_tags):
            new_tags = was_tags  # the same tags in another order: no correction
    changed = new_type != was_type or new_tags != was_tags
    if not changed:
        return Corrected(was_tags, metadata, was_type, was_tags, changed=False)
    record: dict[str, Any] = {"at": correction.at_ms, "by": correction.by}
    if new_type != was_type:
        record["memory_type"] = {"from": was_type, "to": new_type}
    if new_tags != was_tags:
        record["tags"] = {"from": list(was_tags), "to": list(new_tags)}
    earlier = metadata.get(RECORD_KEY)
    history = [r for r in earlier if isinstance(r, Mapping)] if isinstance(earlier, list) else []
    new_metadata = {**metadata, METADATA_KEY: new_type, RECORD_KEY: [*history, record][-MAX_KEPT:]}
    if new_type is None:
        new_metadata.pop(METADATA_KEY)
    return Corrected(new_tags, new_metadata, was_type, was_tags, changed=True)
