"""A site's source as the engine (``sync.push.engine``) sees it: what to read, how a row becomes an episode, which key
it is pushed under. The engine takes one of these, never a file, so that a further source (a
harness's memory files, say) is a new description, not a change to the engine.

A site has one or more sources, each with its own sidecar (cursor, occupants, quarantine) and an
id space of its own on the backbone: the AgentDB file's rows keep their ids ("12", "12~1"); the
journal's are ``m<n>`` (``sync.source.journal``). Every source gets the engine's guarantees alike:
exactly once by (sourceSite, sourceId), crash-safe, redacted before it leaves, edits re-checked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from sync.episode import Attribution, Episode, Rejected
from sync.source.redaction import Redactor

# A raw row → an episode or a rejection (``sync.source.agentdb.rows.convert``'s signature).
Converter = Callable[[Mapping[str, object], Attribution, "Redactor | None"], "Episode | Rejected"]
# (local id, generation) → the backbone key (``sync.push.plan.source_id_for``'s signature).
IdMapping = Callable[[int, int], str]


def source_id_for(local_id: int, generation: int) -> str:
    """The AgentDB file's keys: an id's n-th distinct episode is "42", then "42~1", "42~2"..."""
    return str(local_id) if generation == 0 else f"{local_id}~{generation}"


class RowSnapshot(Protocol):
    """One consistent view of a source's rows, in id order (``sync.source.agentdb.reader.Snapshot``)."""

    @property
    def stamp(self) -> Any: ...

    def count_after(self, cursor: int) -> int: ...

    def rows_between(self, after: int, upto: int | None, limit: int) -> list[dict[str, Any]]: ...

    def raw_between(self, after: int, upto: int, limit: int) -> list[tuple[Any, ...]]: ...

    def rows_by_id(self, ids: Iterable[int]) -> list[dict[str, Any]]: ...

    def to_row(self, values: tuple[Any, ...]) -> dict[str, Any]: ...

    def __enter__(self) -> RowSnapshot: ...

    def __exit__(self, *_: object) -> None: ...


class SourceReader(Protocol):
    """Snapshots of a source and a cheap look at whether it changed (``AgentDBReader``)."""

    path: Path
    ahead_of_clock_s: float | None

    def has_changed(self) -> bool: ...

    def snapshot(self) -> RowSnapshot: ...


@dataclass(frozen=True, slots=True)
class Source:
    """One source of a site's episodes, described for the engine.

    ``moves_cursor``: whether the source's cursor is the one the backbone keeps for the site (its
    ``lastSyncedId``, which status compares with the AgentDB file's ids). A further source pushes
    with cursor 0, which the backbone's max() leaves as it is."""

    name: str
    reader: SourceReader
    convert: Converter
    source_id_for: IdMapping
    moves_cursor: bool = True

    def backbone_cursor(self, cursor: int) -> int:
        return cursor if self.moves_cursor else 0
