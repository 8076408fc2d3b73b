"""What the warm layer embeds for an episode, and the hash that says whether it changed.

An episode's text is its task, input, output and critique, in that order, one per line; a field that
is missing, ``None`` or blank is left out (no empty lines). Both the dense and the BM25 vectors are
computed from this one text, and ``text_hash`` of it decides whether an edited episode needs
re-embedding: an edit to any other field (reward, tags, ...) does not.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final

TEXT_FIELDS: Final = ("task", "input", "output", "critique")


def episode_text(fields: Mapping[str, Any]) -> str:
    """The text to embed: ``task``, ``input``, ``output``, ``critique`` joined by newlines, blank ones skipped.

    Each kept value is used as is (not stripped). A value that is neither ``None`` nor a string is a
    ``TypeError``: episodes carry these fields as text, and guessing a rendering would change the hash.
    """
    parts: list[str] = []
    for name in TEXT_FIELDS:
        value = fields.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            raise TypeError(f"episode field {name!r} must be text or None, got {type(value).__name__}")
        if value.strip():
            parts.append(value)
    return "\n".join(parts)


def text_hash(text: str) -> str:
    """The sha256 of ``text`` as UTF-8, in lowercase hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


__all__ = ["TEXT_FIELDS", "episode_text", "text_hash"]
