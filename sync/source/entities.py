"""What a memory names and which task it tried: its entities and its task key. Pure, no I/O.

A memory's **entities** are the identifiers its task, input, output and critique name, as
``sync.identifiers`` cuts them from a query (error codes like ``E11000`` and ``ECONNRESET``, file
paths, function and class names, tickets like ``JIRA-123`` and ``#456``, hosts, URLs,
``CONSTANT_NAMES``, versioned ids like ``ZQX_7781_A``), plus the codes a memory spells in two words
that no single token holds: ``exit 137``, ``HTTP 502``, ``SQLSTATE 40001`` (a bare ``137`` or ``502``
is a count as often as a code, so it names nothing alone). Each is normalised (case folded, a URL
without its trailing slash, a URL's host named too), the list sorted and capped at ``ENTITIES_MAX``
(the first named kept), so that two memories sharing an entity can be linked by it (the context
mesh's ``mentions``).

A memory's **task key** says "the same task tried again": a hash of its task with case, spacing,
quotes and closing punctuation normalised away, ``""`` for a memory without a task. Like its type
(``sync.source.types``), both are functions of the stored fields: an episode synced before them has
them as soon as it is read, on either backbone, and no content hash changes.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any, Final

from sync.identifiers import identifiers

ENTITIES_MAX: Final = 32  # entities one memory keeps (a pasted log names hundreds)
ENTITY_MAX_CHARS: Final = 200  # longer is a blob (a data URL, a minified line), not a name
TASK_KEY_CHARS: Final = 16  # hex characters of the task key: 64 bits, no collision among a site's tasks
TEXT_FIELDS: Final = ("task", "input", "output", "critique")

# Codes spelt in two words: (the pattern, its normal form).
_PHRASES: Final = (
    (re.compile(r"\bexit(?:ed)?(?: with)?(?: code| status)?\s+(\d{1,3})\b", re.IGNORECASE), "exit {}"),
    (re.compile(r"\bHTTP(?:/\d(?:\.\d)?)?\s+([1-5]\d\d)\b", re.IGNORECASE), "http {}"),
    (re.compile(r"\bSQLSTATE\s*\[?([0-9A-Z]{5})\]?", re.IGNORECASE), "sqlstate {}"),
)
# A URL: its scheme, its user (dropped), its host, its path (the query and the fragment dropped).
_URL: Final = re.compile(
    r"\b([a-z][a-z0-9+.-]*://)(?:[^\s/?#<>\"'`)\]@]*@)?([^\s/?#<>\"'`)\]]+)([^\s?#<>\"'`)\]]*)[^\s<>\"'`)\]]*",
    re.IGNORECASE,
)
# A class named by its declaration, or by a class's usual last word (one hump is not enough for
# ``sync.identifiers``: ``GitHub`` and ``TypeScript`` name products, not code).
_CLASS: Final = re.compile(
    r"\b(?:class|struct|interface|enum|trait)\s+([A-Z]\w+)"
    r"|\b([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)*(?:Error|Exception|Service|Repository|Controller|Manager"
    r"|Handler|Client|Factory|Provider|Component|Store|Worker|Adapter|Builder|Reader|Writer|Parser)s?)\b"
)
_PHRASE_WORDS: Final = frozenset({"sqlstate"})  # a phrase's keyword, alone, names nothing
_TRAILING: Final = ".,;:!?'\")]}"
_SPACES: Final = re.compile(r"\s+")
_QUOTES: Final = re.compile(r"[\"'`\u2018\u2019\u201c\u201d]")


def text_entities(text: str) -> list[str]:
    """The entities ``text`` names, normalised, each once, in the order it names them."""
    found: dict[str, None] = {}
    for match in _URL.finditer(text):
        scheme, host, path = match.groups()
        found.setdefault(_normal(scheme + host + path.rstrip(_TRAILING)).rstrip("/"))
        found.setdefault(_normal(host))
    for pattern, form in _PHRASES:
        for match in pattern.finditer(text):
            found.setdefault(form.format(match.group(1).upper()).casefold())
    for match in _CLASS.finditer(text):
        found.setdefault(_normal(match.group(1) or match.group(2)))
    for name in identifiers(_URL.sub(" ", text)):  # a URL's pieces are in already, its user is not
        normal = _normal(name)
        if normal not in _PHRASE_WORDS:
            found.setdefault(normal)
    return [e for e in found if e and len(e) <= ENTITY_MAX_CHARS]


def entities(fields: Mapping[str, Any]) -> list[str]:
    """A memory's entities: those its text fields name, the first ``ENTITIES_MAX``, sorted."""
    return sorted(_first(_texts(fields), ENTITIES_MAX))


def task_key(task: object) -> str:
    """The hash of a task with its spelling normalised (Unicode form, case, spacing, quotes, closing
    punctuation), so that the same task asked again has the same key; ``""`` without a task."""
    if not isinstance(task, str):
        return ""
    normal = _QUOTES.sub("", unicodedata.normalize("NFKC", task).casefold())
    normal = _SPACES.sub(" ", normal).strip().rstrip(".!?:; ").strip()
    if not normal:
        return ""
    return hashlib.sha256(normal.encode()).hexdigest()[:TASK_KEY_CHARS]


def _normal(name: str) -> str:
    return name.strip().rstrip(_TRAILING).casefold()


def _texts(fields: Mapping[str, Any]) -> Iterable[str]:
    for key in TEXT_FIELDS:
        value = fields.get(key)
        if isinstance(value, str) and value:
            yield value


def _first(texts: Iterable[str], limit: int) -> list[str]:
    kept: dict[str, None] = {}
    for text in texts:
        for entity in text_entities(text):
            if len(kept) >= limit:
                return list(kept)
            kept.setdefault(entity)
    return list(kept)


__all__ = ["ENTITIES_MAX", "TASK_KEY_CHARS", "entities", "task_key", "text_entities"]
