"""What a memory names, for the dream cycle's two lexical tests: pure, no I/O.

Two memories are the same fact in other words only if they name the same identifiers and the same
numbers (``ZQX_7781_A`` is not ``ZQX_7781_B``; "pool_size 20" is not "pool_size 30"), whatever a
dense model thinks of their wording. Two memories are about the same subject, one replacing the
other's value, when they name the same identifiers and the same keys with a changed value
("pool_size 20", later "raised pool_size from 20 to 30").

The rest of an update's words must agree too: "pool_size 20 for the api" and "pool_size 30 for the
worker" are two services' settings, not one changed; "set pool_size to 20 for the api" and "raised
pool_size from 20 to 30 for the api" differ only in the words that say a value changed
(``CHANGE_WORDS``).

A time said relative to when it was written ("today", "yesterday", "next month", "3 days ago") is a
number in disguise: "the deploy failed today" written on Monday and again on Thursday are two
failures, and "next month" written in July and in August names two months. Two memories are the
same fact only if the times they say resolve, each against its own writing time, to the same
periods (``Signature.same_time``; UTC calendar days, Monday weeks, months, years). A memory that
says no such time has nothing to disagree with.

A number's key is the word or identifier before it, skipping the words that join a key to its
value ("pool_size = 20", "timeout of 30s", "set workers to 8"); the last value a text gives a key is
the key's value ("from 20 to 30" is 30).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final

from sync.identifiers import identifiers

# A number with an optional unit ("20", "0.5", "30s", "512MB", "99%"), not inside a word or identifier.
_NUMBER: Final = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:[A-Za-z%]{1,3})?(?![\w])(?!\.\d)")
_VALUE_LIKE: Final = re.compile(r"\d+(?:\.\d+)?[a-z%]*")
_TOKEN: Final = re.compile(r"[\w.$/-]+|[=:]")
# Words between a key and its value; skipped when looking back for a number's key.
JOINERS: Final = frozenset(
    {"=", ":", "to", "from", "of", "is", "was", "at", "be", "now", "set", "equals", "by", "as", "it", "and", "then"}
)
KEY_LOOKBACK: Final = 4  # tokens looked back from a number for its key
# Words whose number names a thing rather than giving a setting a value: "exit 137" and "exit 139"
# are two failures, not one failure's code changed.
CODE_WORDS: Final = frozenset(
    {"exit", "code", "status", "http", "error", "errno", "line", "pid", "sqlstate", "signal", "version", "issue", "pr"}
)


# Words that say a value changed, not what it is about; with a few words that say nothing.
CHANGE_WORDS: Final = frozenset(
    [
        "set",
        "sets",
        "raised",
        "raise",
        "lowered",
        "lower",
        "changed",
        "change",
        "increased",
        "increase",
        "decreased",
        "decrease",
        "bumped",
        "bump",
        "moved",
        "move",
        "now",
        "from",
        "to",
        "updated",
        "update",
        "uses",
        "use",
        "using",
        "is",
        "was",
        "are",
        "were",
        "became",
        "become",
        "new",
        "old",
        "instead",
        "the",
        "a",
        "an",
        "for",
        "of",
        "on",
        "in",
        "at",
        "with",
        "by",
        "and",
        "or",
        "it",
        "its",
        "this",
        "that",
        "our",
        "we",
    ]
)
_WORD: Final = re.compile(r"[a-z][a-z0-9_]*")
# Letters then digits, however short ("api3", "v2", "s3"): too short for the search's identifiers,
# but two of them name two things ("api3" is not "api7").
_SHORT_NAME: Final = re.compile(r"(?<![\w-])[a-z]+\d+[a-z\d]*(?![\w-])")
_TOKEN_WORD: Final = re.compile(r"[\w.$/-]+")
STOPWORDS: Final = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "by",
        "with",
        "and",
        "or",
        "is",
        "was",
        "it",
        "its",
        "this",
        "that",
        "be",
    ]
)
SUBSTITUTION_MAX: Final = 2  # words a look-alike puts in place of others
# A time said relative to the writing: a day word, "this|last|next <unit>", or "N <unit>s ago".
_RELATIVE_TIME: Final = re.compile(
    r"\b(?:(?P<day>today|tonight|yesterday|tomorrow)|(?P<which>this|last|next)\s+(?P<unit>week|month|year)"
    r"|(?P<n>\d{1,3}|a|an|one|two|three|four|five|six)\s+(?P<ago>day|week|month|year)s?\s+ago)\b",
    re.IGNORECASE,
)
_DAY_OFFSET: Final = {"today": 0, "tonight": 0, "yesterday": -1, "tomorrow": 1}
_WHICH_OFFSET: Final = {"this": 0, "last": -1, "next": 1}
_COUNT_WORDS: Final = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
RelativeTime = tuple[str, int]  # (day | week | month | year, periods from the writing's own: -1 is the last)


@dataclass(frozen=True, slots=True)
class Signature:
    """What one memory names: its identifiers and numbers (case folded), and each key's value."""

    ids: frozenset[str]
    numbers: frozenset[str]
    values: Mapping[str, str] = field(default_factory=dict)
    words: frozenset[str] = frozenset()  # the other words, but those that say a value changed
    tokens: tuple[str, ...] = ()  # every word, case folded, but stopwords: for ``lookalike``
    times: frozenset[RelativeTime] = frozenset()  # the times it says relative to its writing

    def same_time(self, ts_ms: int, other: Signature, other_ts_ms: int) -> bool:
        """Whether the relative times the two say (this one written at ``ts_ms``, the other at
        ``other_ts_ms``) name the same periods; true when either says none (nothing to disagree
        with: "the deploy failed" may be the day's "the deploy failed today")."""
        return not self.times or not other.times or periods(self.times, ts_ms) == periods(other.times, other_ts_ms)

    @property
    def empty(self) -> bool:
        """Names nothing: only a dense model can tell such memories apart."""
        return not self.ids and not self.numbers

    def same_fact(self, other: Signature) -> bool:
        """The same identifiers and the same numbers: a duplicate if the wording agrees too."""
        return self.ids == other.ids and self.numbers == other.numbers

    def shared_words(self, other: Signature) -> float:
        """The share of their other words the two have in common (Jaccard; 1 when neither has any)."""
        union = self.words | other.words
        return len(self.words & other.words) / len(union) if union else 1.0

    def lookalike(self, other: Signature) -> bool:
        """The same words in the same places but one or two put in place of others ("the team
        prefers small pull requests" and "the team prefers tested pull requests"): two facts alike,
        not one fact in other words, which moves and changes more. A word added or left out is not
        a substitution, nor is a stopword."""
        if len(self.tokens) != len(other.tokens):
            return False
        swapped = sum(a != b for a, b in zip(self.tokens, other.tokens, strict=True))
        return 0 < swapped <= min(SUBSTITUTION_MAX, max(1, len(self.tokens) // 4))

    def subject(self) -> tuple[frozenset[str], frozenset[str], frozenset[str]] | None:
        """The subject a value update is about (its identifiers, its keys and its other words), or
        None for a memory that gives no key a value."""
        if not self.values:
            return None
        return self.ids, frozenset(self.values), self.words

    def changed(self, older: Signature) -> tuple[tuple[str, str, str], ...]:
        """The keys whose value differs from ``older``'s, with the old and new values, by key."""
        return tuple(
            (key, older.values[key], value)
            for key, value in sorted(self.values.items())
            if key in older.values and older.values[key] != value
        )


def signature(text: str) -> Signature:
    """The identifiers, numbers and keyed values ``text`` names."""
    numbers = frozenset(m.group().casefold() for m in _NUMBER.finditer(text))
    folded = text.casefold()
    ids = frozenset(i.casefold() for i in identifiers(text) if not _VALUE_LIKE.fullmatch(i.casefold()))
    ids |= frozenset(_SHORT_NAME.findall(folded))
    values = keyed_values(text)
    named = ids | frozenset(values)
    words = frozenset(
        w for w in _WORD.findall(folded) if w not in CHANGE_WORDS and w not in named and w not in CODE_WORDS
    )
    tokens = tuple(t.strip(".,;:()") for t in _TOKEN_WORD.findall(folded))
    tokens = tuple(t for t in tokens if t and t not in STOPWORDS)
    return Signature(ids=ids, numbers=numbers, values=values, words=words, tokens=tokens, times=relative_times(text))


def relative_times(text: str) -> frozenset[RelativeTime]:
    """The times ``text`` says relative to its writing ("yesterday" is ("day", -1))."""
    found: set[RelativeTime] = set()
    for m in _RELATIVE_TIME.finditer(text):
        if m["day"]:
            found.add(("day", _DAY_OFFSET[m["day"].lower()]))
        elif m["which"]:
            found.add((m["unit"].lower(), _WHICH_OFFSET[m["which"].lower()]))
        else:
            count = m["n"].lower()
            found.add((m["ago"].lower(), -(_COUNT_WORDS[count] if count in _COUNT_WORDS else int(count))))
    return frozenset(found)


def periods(times: frozenset[RelativeTime], ts_ms: int) -> frozenset[tuple[str, int]]:
    """``times`` resolved against a writing time: each its unit and the period's index (UTC days
    since 1970-01-01, Monday weeks, months since year 0, years)."""
    if not times:
        return frozenset()
    at = datetime.fromtimestamp(ts_ms / 1000, tz=UTC)
    day = ts_ms // 86_400_000
    index = {"day": day, "week": (day + 3) // 7, "month": at.year * 12 + at.month - 1, "year": at.year}
    return frozenset((unit, index[unit] + offset) for unit, offset in times)


def keyed_values(text: str) -> dict[str, str]:
    """Each key's last value in ``text`` ("pool_size from 20 to 30" gives pool_size 30)."""
    tokens = [t.casefold().rstrip(".,;") for t in _TOKEN.findall(text)]
    values: dict[str, str] = {}
    for i, token in enumerate(tokens):
        if not token or not _NUMBER.fullmatch(token):
            continue
        for back in range(i - 1, max(-1, i - 1 - KEY_LOOKBACK), -1):
            candidate = tokens[back]
            if candidate in JOINERS or _NUMBER.fullmatch(candidate):
                continue
            if candidate not in CODE_WORDS and re.fullmatch(r"[a-z_][\w.-]*", candidate) and len(candidate) > 1:
                values[candidate] = token
            break
    return values


__all__ = ["RelativeTime", "Signature", "keyed_values", "periods", "relative_times", "signature"]
