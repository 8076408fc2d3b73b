"""A point's payload in the search index: every key named once, for every writer and reader.

A point is an episode, or one passage of a long episode. An episode's own point (its first passage)
carries the episode's fields, the text it was embedded from and that text's hash; a further passage
carries what a filter needs, its parent and where it lies in the text. The keys are stored in every
collection memsync has built, so renaming one orphans what is indexed: they are written here, and
everything else (the indexer writing, the stores filtering, search, browse and results reading)
uses these names. Standard library only: ``sync.search.request`` reads results from them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from sync.source.type_names import MEMORY_TYPES

if TYPE_CHECKING:
    from sync.source.types import MemoryType

# The episode's fields: what a filter selects and a result shows.
SITE_KEY: Final = "site"
SOURCE_ID_KEY: Final = "sourceId"
AGENT_KEY: Final = "agent"
SESSION_KEY: Final = "session"
TASK_KEY: Final = "task"
TS_KEY: Final = "ts"  # milliseconds since the epoch
REWARD_KEY: Final = "reward"
SUCCESS_KEY: Final = "success"
TAGS_KEY: Final = "tags"
CONTENT_HASH_KEY: Final = "contentHash"  # the backbone's hash of the episode's content
MEMORY_TYPE_KEY: Final = "memoryType"  # sync.source.types: given or read by the rules when indexed
TYPE_GIVEN_KEY: Final = "typeGiven"  # whether its writer gave the type (else the rules read it)
ENTITIES_KEY: Final = "entities"  # sync.source.entities: the identifiers it names, when indexed
SAME_TASK_KEY: Final = "taskKey"  # sync.source.entities: its task's normalised hash, when indexed
APPROVAL_STATUS_KEY: Final = "approvalStatus"  # only where an approval about the episode was asked
# Only on a memory a standing dream step hides (``sync.backbone.dreams``): "merged" (a fold's member)
# or "superseded". Default results leave such points out; ``include_merged`` brings them back.
DREAM_KEY: Final = "dream"
HIDDEN_ROLES: Final = ("merged", "superseded")
TEXT_KEY: Final = "text"  # what was embedded (``sync.search.indexing.text.episode_text``)
TEXT_HASH_KEY: Final = "textHash"  # its hash; a point without it was not written by memsync (a seed's)

# What the indexer maintains beside the episode's fields.
ARCHIVED_KEY: Final = "archived"  # the episode's body is in the cold archive; the point stays
DUPLICATE_KEY: Final = "duplicateOf"  # the head of the near-duplicate group this episode belongs to
LINKS: Final = frozenset({DUPLICATE_KEY})  # compared apart from the episode's own fields

# A long episode's passages.
PASSAGES_KEY: Final = "passages"  # on a long episode's first point: how many passages it has
SPAN_KEY: Final = "span"  # [start, end) of a passage in the episode's text
PARENT_KEY: Final = "parent"  # on a further passage: the episode's point id
PASSAGE_KEY: Final = "passage"  # on a further passage: its index (the first is 0)

# Payload fields with an index in the store, and the index kind.
PAYLOAD_INDEXES: Final[Mapping[str, str]] = {
    SITE_KEY: "keyword",
    AGENT_KEY: "keyword",
    SESSION_KEY: "keyword",
    TAGS_KEY: "keyword",
    CONTENT_HASH_KEY: "keyword",
    TS_KEY: "integer",
    REWARD_KEY: "float",
    SUCCESS_KEY: "bool",
}
# What the store indexes: the filter fields every point carries, and the dream's mark, on the few
# points a dream hid: every default search leaves those out (must_not on it), and unindexed that
# condition read each candidate's payload, 558 ms a search at 100,000 points.
STORE_INDEXES: Final[Mapping[str, str]] = {**PAYLOAD_INDEXES, DREAM_KEY: "keyword"}
# What a further passage carries of its episode: every filter's field, so that a filter finds it.
PASSAGE_FIELDS: Final = (*PAYLOAD_INDEXES, SOURCE_ID_KEY, TEXT_HASH_KEY, DREAM_KEY)


def passage_count(payload: Mapping[str, Any]) -> int:
    """How many points an episode has, from its first point's payload."""
    count = payload.get(PASSAGES_KEY)
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 1 else 1


def memory_type_of(payload: Mapping[str, Any]) -> str:
    """A point's memory type: the one written when it was indexed, else (a point indexed before
    types, or a seed's) read by the rules from what the payload holds (its tags, task, text, outcome)."""
    written = payload.get(MEMORY_TYPE_KEY)
    if isinstance(written, str) and written in MEMORY_TYPES:
        return written
    return _read_type(payload).name


def type_given_of(payload: Mapping[str, Any]) -> bool:
    """Whether a point's type was given by its writer: as written when it was indexed, else read
    from its tags (a point indexed before then keeps no metadata: a type given there reads as not)."""
    written = payload.get(TYPE_GIVEN_KEY)
    return written if isinstance(written, bool) else _read_type(payload).given


def _read_type(payload: Mapping[str, Any]) -> MemoryType:
    # The rule table is imported where a point needs it read (one indexed before types): a
    # command line that only reads the daemon's answers never compiles it.
    from sync.source.types import memory_type

    tags = payload.get(TAGS_KEY)
    fields = {
        "task": payload.get(TASK_KEY),
        "output": payload.get(TEXT_KEY),
        "success": payload.get(SUCCESS_KEY),
        "tags": list(tags) if isinstance(tags, list | tuple) else [],
    }
    return memory_type(fields)


def entities_of(payload: Mapping[str, Any]) -> list[str]:
    """A point's entities: those written when it was indexed, else (a point indexed before them)
    read from its task and text."""
    from sync.source.entities import entities

    written = written_entities(payload)
    if written is not None:
        return written
    return entities({"task": payload.get(TASK_KEY), "output": payload.get(TEXT_KEY)})


def written_entities(payload: Mapping[str, Any]) -> list[str] | None:
    """A point's entities as written when it was indexed; None for a point indexed before them."""
    written = payload.get(ENTITIES_KEY)
    if isinstance(written, list) and all(isinstance(e, str) for e in written):
        return list(written)
    return None


def task_key_of(payload: Mapping[str, Any]) -> str:
    """A point's task key: the one written when it was indexed, else its task's."""
    from sync.source.entities import task_key

    written = payload.get(SAME_TASK_KEY)
    return written if isinstance(written, str) else task_key(payload.get(TASK_KEY))
