"""The memory types: one taxonomy, the seeds' union. Every memory has exactly one.

A stub of the room issue 30's types work fills in (the rule table that infers a type, the fields
it adds): today it holds the names, so that a save can be checked against them.
"""

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


def check_type(name: str) -> str:
    """``name`` if it is one of ``MEMORY_TYPES``; ValueError naming the accepted ones otherwise."""
    if name not in MEMORY_TYPES:
        raise ValueError(f"{name!r} is not a memory type: use one of {', '.join(MEMORY_TYPES)}")
    return name
