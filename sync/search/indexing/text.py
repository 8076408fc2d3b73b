"""What the warm layer embeds for an episode, and the hash that says whether it changed.

An episode's text is its task, input, output and critique, in that order, one per line; a field that
is missing, ``None`` or blank is left out (no empty lines). Both the dense and the BM25 vectors are
computed from this one text, and ``text_hash`` of it decides whether an edited episode needs
re-embedding: an edit to any other field (reward, tags, ...) does not.

A text longer than the embedding model's window is cut into passages (``split_passages``), each
embedded (dense and BM25) as a point of its own with the episode as its parent.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
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


# --- passages: an episode longer than the embedder's window, cut where it reads naturally --------

Span = tuple[int, int]  # a passage's [start, end) in the episode's text, in characters
Counter = Callable[[Sequence[str]], list[int]]  # tokens in each text, as the embedder counts them

# A passage overlaps the one before by up to an eighth of the window, so that a fact split across
# the cut is whole in one of them; more would only re-embed the same words.
OVERLAP_SHARE: Final = 8
# A cap on the passages of one episode: 64 MiniLM passages are ~16k tokens (~60 kB of English);
# past it the rest of a huge episode is neither embedded nor BM25-indexed (docs/guides/search.md, "Long episodes").
MAX_PASSAGES: Final = 64

# A cut goes after a line break, else after a sentence's end, else between words.
_SEGMENT_END = re.compile(r"\n+|(?<=[.!?;:])\s+")
_WORD = re.compile(r"\S+\s*")


def split_passages(
    text: str, budget: int, count: Counter, *, overlap: int | None = None, max_passages: int = MAX_PASSAGES
) -> list[Span]:
    """The passages of ``text``, each at most ``budget`` tokens (as ``count`` counts them), in order.

    A text that fits is one passage, the whole text (``[(0, len(text))]``): a short episode is
    embedded exactly as before. A longer one is cut after lines, else sentences, else words (a single
    word longer than the window, in pieces); each passage after the first starts with the last whole
    pieces of the one before, up to ``overlap`` tokens (an eighth of the budget by default). Spans
    are trimmed of surrounding whitespace. At most ``max_passages``: the rest is left out.
    """
    if budget < 1:
        raise ValueError(f"a passage budget must be at least 1 token, got {budget}")
    # Every token covers at least one character, so a text this short fits without counting.
    if len(text) <= budget or not text.strip() or count([text])[0] <= budget:
        return [(0, len(text))]
    units = _units(text, budget, count)
    share = budget // OVERLAP_SHARE if overlap is None else overlap
    spans: list[Span] = []
    first = 0
    while first < len(units) and len(spans) < max_passages:
        last, used = first, 0
        while last < len(units) and used + units[last][2] <= budget:
            used += units[last][2]
            last += 1
        last = max(last, first + 1)  # a unit never exceeds the budget; this only guards progress
        spans.append(_trimmed(text, units[first][0], units[last - 1][1]))
        if last == len(units):
            break
        # Back over the last whole units that fit in the overlap, never back to this passage's start.
        start, back = last, 0
        while start - 1 > first and back + units[start - 1][2] <= share:
            start -= 1
            back += units[start][2]
        first = start
    return spans


def _units(text: str, budget: int, count: Counter) -> list[tuple[int, int, int]]:
    """(start, end, tokens) pieces that each fit the budget: segments, else words, else slices."""
    segments = _pieces(_SEGMENT_END, text, 0, len(text))
    out: list[tuple[int, int, int]] = []
    for (start, end), tokens in zip(segments, count([text[s:e] for s, e in segments]), strict=True):
        if tokens <= budget:
            out.append((start, end, tokens))
            continue
        words = [(start + m.start(), start + m.end()) for m in _WORD.finditer(text[start:end])]
        if not words:
            words = [(start, end)]
        for (ws, we), n in zip(words, count([text[s:e] for s, e in words]), strict=True):
            out += [(ws, we, n)] if n <= budget else _slices(text, ws, we, budget, count)
    return out


def _slices(text: str, start: int, end: int, budget: int, count: Counter) -> list[tuple[int, int, int]]:
    """A word longer than the window, in halves until each fits (a run of digits, a base64 blob)."""
    tokens = count([text[start:end]])[0]
    if tokens <= budget or end - start <= 1:
        return [(start, end, min(tokens, budget))]
    middle = (start + end) // 2
    return _slices(text, start, middle, budget, count) + _slices(text, middle, end, budget, count)


def _pieces(pattern: re.Pattern[str], text: str, start: int, end: int) -> list[Span]:
    """``text[start:end]`` cut after each match of ``pattern`` (the match stays with the piece before)."""
    spans: list[Span] = []
    for match in pattern.finditer(text, start, end):
        if match.end() > start:
            spans.append((start, match.end()))
            start = match.end()
    if start < end:
        spans.append((start, end))
    return spans


def _trimmed(text: str, start: int, end: int) -> Span:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


__all__ = ["MAX_PASSAGES", "TEXT_FIELDS", "Counter", "Span", "episode_text", "split_passages", "text_hash"]
