"""The dream cycle's records on a backbone, and its role ``Dreams`` (``sync/dream`` decides; a
backbone records).

A step is one fold (``consolidates``: a canonical memory and the members it stands for) or one
supersede (``supersedes``: the newer memory and the older one it replaced). Every step is kept,
undone or not, with when and by which run it was taken, so that nothing is ever deleted and
``memsync unmerge`` undoes a step exactly: its members are visible again, its links go, and the
record stays with when and by whom it was undone (so that no later night puts the same memories
together again).

Links (``consolidates`` canonical -> member, ``supersedes`` newer -> older) are issue 30's explicit
link kinds; until the backbones have one ``Links`` role the dream keeps them in its own table,
read through ``Dreams.dream_links`` as ``DreamLink`` (source, target, kind, and the step that made
it), shaped to fold into that role.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

Key = tuple[str, str]  # (sourceSite, sourceId)

CONSOLIDATES: Final = "consolidates"
SUPERSEDES: Final = "supersedes"
KINDS: Final = (CONSOLIDATES, SUPERSEDES)
MERGED: Final = "merged"  # a fold's member: hidden from default results, found with --include-merged
SUPERSEDED: Final = "superseded"  # replaced by a newer memory: hidden likewise, shown on request
ROLE_OF_KIND: Final = {CONSOLIDATES: MERGED, SUPERSEDES: SUPERSEDED}
DREAM_FIELD: Final = "dream"  # export's and the feed's field on a hidden episode: Mark.as_json()


@dataclass(frozen=True, slots=True)
class NewStep:
    kind: str  # CONSOLIDATES | SUPERSEDES
    canonical: Key  # the fold's canonical, or the newer memory
    members: tuple[Key, ...]  # the fold's members, or the one older memory
    reason: str  # for people: why
    synthesis: Mapping[str, Any] | None = None  # a model's summary of a fold, with its prompt and model


@dataclass(frozen=True, slots=True)
class DreamStep:
    step_id: str
    kind: str
    canonical: Key
    members: tuple[Key, ...]
    at: int  # ms
    run: str  # which run took it: "<job>@<slot> on <site>" or "manual on <site>"
    reason: str
    undone_at: int | None = None
    undone_by: str | None = None
    synthesis: Mapping[str, Any] | None = None

    @property
    def standing(self) -> bool:
        return self.undone_at is None


@dataclass(frozen=True, slots=True)
class DreamLink:
    """An explicit link the dream made: ``source`` -> ``target`` of ``kind``, by step ``step_id``."""

    source: Key
    target: Key
    kind: str
    step_id: str


@dataclass(frozen=True, slots=True)
class Mark:
    """Why a memory is hidden from default results: the standing step that hides it."""

    role: str  # MERGED | SUPERSEDED
    by: Key  # its canonical, or the newer memory
    step_id: str

    def as_json(self) -> dict[str, str]:
        return {"role": self.role, "by": key_text(self.by), "step": self.step_id}


def links_of(step: DreamStep | NewStep, step_id: str) -> list[DreamLink]:
    return [DreamLink(step.canonical, m, step.kind, step_id) for m in step.members]


def marks_of(step: DreamStep | NewStep, step_id: str) -> dict[Key, Mark]:
    return {m: Mark(ROLE_OF_KIND[step.kind], step.canonical, step_id) for m in step.members}


def key_text(key: Key) -> str:
    return f"{key[0]}:{key[1]}"


def check_steps(steps: Sequence[NewStep]) -> None:
    """What a backbone refuses before recording (ValueError): an unknown kind, no member, a memory
    in two steps of one call, a canonical among its own members."""
    seen: set[Key] = set()
    for step in steps:
        if step.kind not in KINDS:
            raise ValueError(f"unknown dream step kind {step.kind!r}")
        if not step.members or step.canonical in step.members:
            raise ValueError(f"a {step.kind} step needs members other than its canonical")
        for member in step.members:
            if member in seen:
                raise ValueError(f"{key_text(member)} is in two steps")
            seen.add(member)


class Dreams(Protocol):
    """The dream cycle's records, every site's (the dream runs once across sites)."""

    def record_dream(self, steps: Sequence[NewStep], run: str) -> list[DreamStep]:
        """Record ``steps`` (``check_steps``; ``BackboneRejected`` otherwise) in one transaction:
        each step, its links, and each member's mark (``DREAM_FIELD`` in export and the feed, a
        change in the feed so every index hides it). A member missing from the backbone, or
        hidden already, leaves its step out. Returns the steps recorded."""
        ...

    def undo_dream_step(self, step_id: str, by: str) -> DreamStep:
        """Undo one standing step exactly: its members' marks and its links go (a change each in
        the feed), the record stays, undone. ``BackboneNotFound`` for an unknown id,
        ``BackboneConflict`` for one undone already."""
        ...

    def dream_steps(self, *, standing_only: bool = False, limit: int | None = None) -> list[DreamStep]:
        """The steps, newest first (``standing_only``: not undone)."""
        ...

    def dream_links(self, key: Key) -> list[DreamLink]:
        """The standing links from or to ``key``."""
        ...
