"""An episode as points: what a point carries, the id its first passage lives under, and its cut
into passages.

An episode longer than the embedder's window is several points, one per passage
(``text.split_passages``), each with its own dense and BM25 vector: BM25 per passage too, so that a
keyword search says which passage matched, and a long episode's length does not dilute a rare
term. The first passage keeps the episode's own id and its whole payload, plus ``passages``
(how many) and ``span``; the others (``passage_id``) carry the filter fields, ``parent`` (the
first's id), ``passage`` (the index) and ``span``, not the text. A short episode is one point,
exactly as before passages existed, so existing collections stay valid; a long episode indexed
before them (one point, its text cut at the window) is embedded again as passages when its text is
next edited, or by the next rebuild (``memsync reindex``), whose copy finds its first point lacking
the ``passages`` the new cut has.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sync.backbone.base import Change
from sync.search.indexing.text import Span, episode_text, text_hash
from sync.search.payload import (
    AGENT_KEY,
    APPROVAL_STATUS_KEY,
    CONTENT_HASH_KEY,
    DREAM_KEY,
    ENTITIES_KEY,
    MEMORY_TYPE_KEY,
    PARENT_KEY,
    PASSAGE_FIELDS,
    PASSAGE_KEY,
    PASSAGES_KEY,
    REWARD_KEY,
    SAME_TASK_KEY,
    SESSION_KEY,
    SITE_KEY,
    SOURCE_ID_KEY,
    SPAN_KEY,
    SUCCESS_KEY,
    TAGS_KEY,
    TASK_KEY,
    TEXT_HASH_KEY,
    TEXT_KEY,
    TS_KEY,
    TYPE_GIVEN_KEY,
)
from sync.search.stores import passage_id, point_id
from sync.source.entities import entities, task_key
from sync.source.types import memory_type

Split = Callable[[str], Sequence[Span]]


def whole(text: str) -> list[Span]:
    """No splitting: the text is one passage."""
    return [(0, len(text))]


def payload_for(change: Change) -> dict[str, Any]:
    """What a point carries: every filter's field, the text shown in results, and the hashes."""
    episode = change.episode
    assert episode is not None
    text = episode_text(episode)
    # An approval's decision, only where one was asked: every other point keeps the payload it had.
    approval = {APPROVAL_STATUS_KEY: episode["approvalStatus"]} if episode.get("approvalStatus") else {}
    # A dream step's mark, only on a memory one hides (its role: merged or superseded).
    mark = episode.get("dream")
    approval |= {DREAM_KEY: mark["role"]} if isinstance(mark, dict) and mark.get("role") else {}
    kind = memory_type(episode)
    return approval | {
        SITE_KEY: change.site,
        SOURCE_ID_KEY: change.source_id,
        AGENT_KEY: episode.get("agentName"),
        SESSION_KEY: episode.get("sessionId"),
        TASK_KEY: episode.get("task"),
        TS_KEY: episode.get("ts"),
        REWARD_KEY: episode.get("reward"),
        SUCCESS_KEY: episode.get("success"),
        TAGS_KEY: list(episode.get("tags") or []),
        MEMORY_TYPE_KEY: kind.name,
        TYPE_GIVEN_KEY: kind.given,
        ENTITIES_KEY: entities(episode),
        SAME_TASK_KEY: task_key(episode.get("task")),
        CONTENT_HASH_KEY: episode.get("contentHash"),
        TEXT_HASH_KEY: text_hash(text),
        TEXT_KEY: text,
    }


@dataclass(frozen=True, slots=True)
class ToEmbed:
    point_id: str
    text: str  # what is embedded: the passage's text (an episode's whole text when it is one passage)
    payload: dict[str, Any]


def head_id(change: Change) -> str:
    """The point an episode's first passage lives under: memsync's own (derived from the key), or
    the seed's point an adopted episode kept (the feed's ``seedPointId``), so that the index writes
    that point rather than a second one beside it."""
    return change.seed_point_id or point_id(change.site, change.source_id)


def passage_items(
    site: str, source_id: str, payload: Mapping[str, Any], spans: Sequence[Span], head: str | None = None
) -> list[ToEmbed]:
    """An episode's points, first passage first (under ``head``, memsync's own id by default). One
    passage spanning the whole text is the episode's point as it always was; otherwise the first
    carries the episode's payload plus ``passages`` and ``span``, the others the filter fields,
    ``parent``, ``passage`` and ``span``."""
    text = str(payload[TEXT_KEY])
    head = head or point_id(site, source_id)
    base = {k: v for k, v in payload.items() if k not in (PASSAGES_KEY, SPAN_KEY)}
    if list(spans) == [(0, len(text))]:
        return [ToEmbed(head, text, base)]
    (start, end), count = spans[0], len(spans)
    items = [ToEmbed(head, text[start:end], base | {PASSAGES_KEY: count, SPAN_KEY: [start, end]})]
    shared = {k: base[k] for k in PASSAGE_FIELDS if k in base}
    for index, (start, end) in enumerate(spans[1:], 1):
        extra = {PARENT_KEY: head, PASSAGE_KEY: index, SPAN_KEY: [start, end]}
        items.append(ToEmbed(passage_id(site, source_id, index), text[start:end], shared | extra))
    return items


def point_ids(site: str, source_id: str, count: int, head: str | None = None) -> list[str]:
    """An episode's point ids, first passage first (its first under ``head`` when given)."""
    ids = [passage_id(site, source_id, index) for index in range(count)]
    return [head, *ids[1:]] if head else ids
