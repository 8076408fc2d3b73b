"""The links between memories (the context mesh), which both backbones keep. Pure; pinned in
``contracts/links.json``, which ``cloud_functions/linksPolicy.test.ts`` runs too.

Two sorts of link. Explicit ones (``similar_to``, ``about``, ``updates``) are rows keyed (from, to,
kind) that something wrote: the push of a saved memory whose metadata names its episode
(``about``) or the memory it updates (``updates``), the search index's near-duplicate detection
(``similar_to``). Derived ones (``led_to``, ``evolved_from``, ``mentions``) are computed here, when
asked, from what each stored episode already holds (its session and time, its task's key, the
identifiers it names): nothing is written for them, so they vanish with what they point to. A
backbone gathers the candidates (the subject's session and the ``WINDOW`` episodes nearest it in
time on each side) and its stored rows; ``related`` decides the rest.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from sync.identifiers import identifiers
from sync.source.entities import task_key as entity_task_key

# The kinds, in the order ``related`` ranks them.
KINDS: Final = ("updates", "about", "similar_to", "led_to", "evolved_from", "mentions")
EXPLICIT: Final = frozenset({"updates", "about", "similar_to"})
DERIVED: Final = frozenset({"led_to", "evolved_from", "mentions"})
LATER: Final = ("consolidates", "supersedes")  # issue 31's kinds: refused until then
# Derived links are looked for among the subject's session and this many hot episodes nearest it
# in time on each side (every site's): a bound on what one ``related`` reads.
WINDOW: Final = 500
# The metadata keys that write explicit links, each "SITE:ID".
METADATA_KINDS: Final[Mapping[str, str]] = {"about": "about", "updates": "updates"}
# The reason shown for a link, by kind and by which end the subject is.
REASONS: Final[Mapping[str, Mapping[str, str]]] = {
    "updates": {"out": "the memory it updates", "in": "a newer value of it"},
    "about": {"out": "the episode it is about", "in": "a memory saved about it"},
    "similar_to": {"out": "a near-duplicate of it", "in": "a near-duplicate of it"},
    "led_to": {"out": "came next in its session", "in": "came just before it in its session"},
    "evolved_from": {"out": "an earlier try of the same task", "in": "a later try of the same task"},
    "mentions": {"both": "both name {entities}"},
}
MAX_ENTITIES: Final = 32  # identifiers an episode's keys keep (B's extractor caps them too)
_NAMED: Final = 3  # shared identifiers a mentions reason names
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True, order=True)
class EpisodeRef:
    """One episode's key on the backbone."""

    site: str
    source_id: str

    def __str__(self) -> str:
        return f"{self.site}:{self.source_id}"

    @staticmethod
    def parse(text: object) -> EpisodeRef | None:
        """``SITE:ID`` (the first colon splits; spaces around are dropped), or None for anything else."""
        if not isinstance(text, str):
            return None
        site, colon, source_id = text.strip().partition(":")
        return EpisodeRef(site, source_id) if colon and site and source_id else None


@dataclass(frozen=True, slots=True)
class StoredLink:
    """An explicit link as the ``links`` table keeps it."""

    source: EpisodeRef  # the link's "from"
    target: EpisodeRef  # its "to"
    kind: str


@dataclass(frozen=True, slots=True)
class EpisodeKeys:
    """What derived links read of a stored episode."""

    session: str | None
    ts: int | None
    task_key: str | None
    entities: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A stored episode ``related`` may link to: its key, what derivation reads, and what a person
    sees of it (its task)."""

    ref: EpisodeRef
    keys: EpisodeKeys
    task: str | None = None


@dataclass(frozen=True, slots=True)
class Link:
    """One of a memory's neighbours: the other end, the kind, which end this memory is (``out``:
    the link's from, ``in``: its to, ``both``: a kind without a direction) and why, with the other
    end's task and time when the backbone holds it (None: archived, or not arrived yet)."""

    other: EpisodeRef
    kind: str
    direction: str
    reason: str
    task: str | None = None
    ts: int | None = None
    shared: tuple[str, ...] = ()  # mentions: the identifiers both name


def task_key(task: object) -> str | None:
    """A task's key (``sync.source.entities.task_key``: the one key search, export and the links
    share); None for no task. The same task tried again, worded the same, has the same key."""
    return entity_task_key(task) or None


def _entities(value: object) -> tuple[str, ...] | None:
    if not isinstance(value, list | tuple):
        return None
    found = {v.strip().casefold() for v in value if isinstance(v, str) and v.strip()}
    return tuple(sorted(found)[:MAX_ENTITIES])


def episode_keys(record: Mapping[str, Any]) -> EpisodeKeys:
    """What derived links read of a stored episode (an ``export`` record, or a backbone's compact
    one): its session and ts; its ``taskKey`` and ``entities`` fields where it has them, else the
    same keys of its metadata, else a task key made from its task (``task_key``) and the identifiers
    its task names (``sync.identifiers``: what every backbone's compact record carries)."""
    metadata = record.get("metadata")
    meta: Mapping[str, Any] = metadata if isinstance(metadata, Mapping) else {}
    stored_key = record.get("taskKey") or meta.get("taskKey")
    key = stored_key if isinstance(stored_key, str) and stored_key else task_key(record.get("task"))
    entities = _entities(record.get("entities"))
    if entities is None:
        entities = _entities(meta.get("entities"))
    if entities is None:
        task = record.get("task")
        entities = _entities(list(identifiers(task))) if isinstance(task, str) else ()
    entities = entities or ()
    session, ts = record.get("sessionId"), record.get("ts")
    return EpisodeKeys(
        session if isinstance(session, str) and session else None,
        ts if isinstance(ts, int) and not isinstance(ts, bool) else None,
        key,
        entities,
    )


def candidate(record: Mapping[str, Any]) -> Candidate:
    """A stored record (``sourceSite``, ``sourceId``, its fields) as a candidate."""
    task = record.get("task")
    ref = EpisodeRef(str(record["sourceSite"]), str(record["sourceId"]))
    return Candidate(ref, episode_keys(record), task if isinstance(task, str) else None)


def explicit_links(own: EpisodeRef, metadata: object) -> list[StoredLink]:
    """The explicit links a pushed episode's metadata writes (``about``, ``updates``: each a
    ``SITE:ID``); whatever else is there writes none, and never refuses the episode."""
    if not isinstance(metadata, Mapping):
        return []
    links = []
    for key, kind in METADATA_KINDS.items():
        target = EpisodeRef.parse(metadata.get(key))
        if target is not None and target != own:
            links.append(StoredLink(own, target, kind))
    return links


def _order(c: Candidate) -> tuple[int, str, str]:
    return (c.keys.ts if c.keys.ts is not None else -1, c.ref.site, c.ref.source_id)


def _reason(kind: str, direction: str, shared: Sequence[str] = ()) -> str:
    named = ", ".join(shared[:_NAMED]) + (f" and {len(shared) - _NAMED} more" if len(shared) > _NAMED else "")
    return REASONS[kind][direction].format(entities=named)


def _link(kind: str, direction: str, other: Candidate, shared: Sequence[str] = ()) -> Link:
    reason = _reason(kind, direction, shared)
    return Link(other.ref, kind, direction, reason, other.task, other.keys.ts, tuple(shared))


def _neighbours(subject: Candidate, chain: list[Candidate], kind: str) -> list[Link]:
    """The one just before the subject in ``chain`` (the subject comes from it: ``out``) and the
    one just after (it comes from the subject: ``in``); the chain is in (ts, site, id) order."""
    chain = sorted({c.ref: c for c in [*chain, subject]}.values(), key=_order)
    at = [c.ref for c in chain].index(subject.ref)
    links = []
    if at > 0:
        links.append(_link(kind, "out" if kind == "evolved_from" else "in", chain[at - 1]))
    if at + 1 < len(chain):
        links.append(_link(kind, "in" if kind == "evolved_from" else "out", chain[at + 1]))
    return links


def derive(subject: Candidate, others: Iterable[Candidate]) -> list[Link]:
    """The derived links of ``subject`` among ``others`` (the subject itself among them is ignored):
    led_to with the episodes just before and after it in its site's session, evolved_from with
    the tries of its task just before and after it, mentions with every one naming an identifier
    it names."""
    others = [o for o in others if o.ref != subject.ref]
    keys = subject.keys
    links: list[Link] = []
    if keys.session is not None:
        session = [o for o in others if o.ref.site == subject.ref.site and o.keys.session == keys.session]
        links += _neighbours(subject, session, "led_to")
    if keys.task_key is not None:
        links += _neighbours(subject, [o for o in others if o.keys.task_key == keys.task_key], "evolved_from")
    if keys.entities:
        mine = set(keys.entities)
        for other in others:
            shared = sorted(mine.intersection(other.keys.entities))
            if shared:
                links.append(_link("mentions", "both", other, shared))
    return links


def stored_links(subject: EpisodeRef, rows: Iterable[StoredLink], held: Mapping[EpisodeRef, Candidate]) -> list[Link]:
    """The explicit rows with ``subject`` at either end, seen from it; ``held`` gives the other
    end's task and time where the backbone holds it."""
    links = []
    for row in rows:
        if row.kind not in EXPLICIT or subject not in (row.source, row.target) or row.source == row.target:
            continue
        direction, other = ("out", row.target) if row.source == subject else ("in", row.source)
        found = held.get(other)
        task, ts = (found.task, found.keys.ts) if found is not None else (None, None)
        links.append(Link(other, row.kind, direction, _reason(row.kind, direction), task, ts))
    return links


def _rank(subject_ts: int | None, link: Link) -> tuple[int, int, int, str, str]:
    distance = abs(link.ts - subject_ts) if link.ts is not None and subject_ts is not None else 2**62
    return (KINDS.index(link.kind), -len(link.shared), distance, link.other.site, link.other.source_id)


def related(subject: Candidate, others: Iterable[Candidate], rows: Iterable[StoredLink], limit: int) -> list[Link]:
    """A memory's neighbours, at most ``limit``: explicit links first (updates, about, similar_to),
    then led_to, evolved_from and mentions (those naming more shared identifiers first); within a
    kind the nearest in time first. One link a (kind, other end, direction)."""
    others = list(others)
    held = {o.ref: o for o in others}
    links = stored_links(subject.ref, rows, held) + derive(subject, others)
    unique = {(link.kind, link.other, link.direction): link for link in links}
    return sorted(unique.values(), key=lambda link: _rank(subject.keys.ts, link))[: max(0, limit)]
