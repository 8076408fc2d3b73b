"""The memory types' names (``sync.source.types`` reads a memory's from its words): the taxonomy,
the tag and metadata key that give one, the plain tags that name one, and the check of a name a
person or an agent gives. Plain data, no rules: a command line offers and checks ``--type``
without compiling the rule table (``memsync context`` runs on every prompt)."""

from __future__ import annotations

from typing import Final

MEMORY_TYPES: Final = (
    "error_fix",
    "decision",
    "warning",
    "learning",
    "discovery",
    "codebase_knowledge",
    "observation",
    "event",
)
DEFAULT_TYPE: Final = "observation"
TYPE_TAG: Final = "type:"
METADATA_KEY: Final = "memory_type"
# Plain tags that have said a memory's kind (memsync's search showed them before types): a tag that
# is a type's own name, or one of these, gives the type too, after a ``type:`` tag.
TAG_ALIASES: Final = {
    "fix": "error_fix",
    "bugfix": "error_fix",
    "lesson": "learning",
    "incident": "event",
    "convention": "codebase_knowledge",
    "note": "observation",
}


def check_type(name: str) -> str:
    """A type name as given by a person or an agent; ValueError naming the taxonomy otherwise."""
    cleaned = name.strip().lower().replace("-", "_")
    if cleaned not in MEMORY_TYPES:
        raise ValueError(f"unknown memory type {name!r}: use one of {', '.join(MEMORY_TYPES)}")
    return cleaned


__all__ = ["DEFAULT_TYPE", "MEMORY_TYPES", "METADATA_KEY", "TAG_ALIASES", "TYPE_TAG", "check_type"]
