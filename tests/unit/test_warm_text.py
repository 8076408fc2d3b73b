"""episode_text, text_hash and split_passages: what the warm layer embeds for an episode, its change
detector, and how a long one is cut into passages."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import pytest

from sync.search.indexing.text import MAX_PASSAGES, episode_text, split_passages, text_hash


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"task": "t", "input": "i", "output": "o", "critique": "c"}, "t\ni\no\nc"),
        # The order is task, input, output, critique whatever the mapping's order.
        ({"critique": "c", "output": "o", "input": "i", "task": "t"}, "t\ni\no\nc"),
        # Missing, None, empty and blank fields are skipped: no empty lines.
        ({"task": "t", "input": None, "output": "", "critique": "c"}, "t\nc"),
        ({"task": "t", "input": "  \n\t", "critique": "c"}, "t\nc"),
        ({"output": "o"}, "o"),
        ({}, ""),
        ({"task": None, "input": None, "output": None, "critique": None}, ""),
        # Other fields never enter the text.
        ({"task": "t", "reward": 0.5, "tags": ["x"], "sessionId": "s", "metadata": {"k": "v"}}, "t"),
        # Kept values are not stripped or otherwise changed; inner newlines stay.
        ({"task": " fix  bug ", "input": "line 1\nline 2", "output": "é ✓"}, " fix  bug \nline 1\nline 2\né ✓"),
    ],
)
def test_episode_text(fields: dict[str, Any], expected: str) -> None:
    assert episode_text(fields) == expected


def test_episode_text_refuses_non_text_fields() -> None:
    with pytest.raises(TypeError, match="'input' must be text or None, got dict"):
        episode_text({"task": "t", "input": {"a": 1}})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("é", hashlib.sha256(b"\xc3\xa9").hexdigest()),  # UTF-8 bytes, not code points or Latin-1
    ],
)
def test_text_hash_is_sha256_hex_of_utf8(text: str, expected: str) -> None:
    assert text_hash(text) == expected


def test_text_hash_changes_only_with_the_embedded_text() -> None:
    base = {"task": "t", "input": "i", "output": "o", "critique": "c", "reward": 0.1}
    same = text_hash(episode_text({**base, "reward": 0.9, "tags": ["new"]}))
    assert same == text_hash(episode_text(base))
    assert text_hash(episode_text({**base, "critique": "c2"})) != text_hash(episode_text(base))


# --- split_passages ------------------------------------------------------------------------------


def words(texts: Sequence[str]) -> list[int]:
    """A tokenizer of whole words: the table's arithmetic stays visible."""
    return [len(text.split()) for text in texts]


def characters(texts: Sequence[str]) -> list[int]:
    return [len(text.strip()) for text in texts]


@pytest.mark.parametrize(
    ("text", "budget", "overlap", "count", "expected"),
    [
        # A text that fits is one passage, the whole text, surrounding whitespace and all.
        (" a b c ", 5, 0, words, [" a b c "]),
        ("", 5, 0, words, [""]),
        ("   \n  ", 1, 0, words, ["   \n  "]),
        # Cut after lines first: "d e f" and "g h" share a passage, "a b c" cannot join them.
        ("a b c\nd e f\ng h", 5, 0, words, ["a b c", "d e f\ng h"]),
        # Then after sentences.
        ("One two. Three four. Five six.", 4, 0, words, ["One two. Three four.", "Five six."]),
        # Each passage starts with the last whole sentences of the one before that fit the overlap.
        (
            "One two. Three four. Five six. Seven eight.",
            4,
            2,
            words,
            ["One two. Three four.", "Three four. Five six.", "Five six. Seven eight."],
        ),
        # A sentence longer than the window is cut between words, overlapping by whole words.
        ("a b c d e f g", 3, 0, words, ["a b c", "d e f", "g"]),
        ("a b c d e f g", 3, 1, words, ["a b c", "c d e", "e f g"]),
        # A word longer than the window is cut in halves until each fits.
        ("abcdefgh", 3, 0, characters, ["ab", "cd", "ef", "gh"]),
        # Passages are trimmed of the whitespace around them.
        ("  lead line\n\n  second line  ", 2, 0, words, ["lead line", "second line"]),
        # An overlap as large as a passage still moves forward.
        ("a. b. c.", 2, 5, words, ["a. b.", "b. c."]),
    ],
)
def test_split_passages(text: str, budget: int, overlap: int, count: Any, expected: list[str]) -> None:
    spans = split_passages(text, budget, count, overlap=overlap)
    assert [text[s:e] for s, e in spans] == expected


def test_split_passages_stops_at_the_cap() -> None:
    text = " ".join(f"w{i}." for i in range(10))
    assert [text[s:e] for s, e in split_passages(text, 1, words, overlap=0, max_passages=3)] == ["w0.", "w1.", "w2."]
    assert MAX_PASSAGES == 64


def test_split_passages_covers_every_word_within_the_budget() -> None:
    text = "\n".join(" ".join(f"l{line}w{w}" for w in range(line % 7 + 1)) + "." for line in range(40))
    spans = split_passages(text, 9, words)
    assert all(words([text[s:e]])[0] <= 9 for s, e in spans)
    assert [s for s, _ in spans] == sorted(s for s, _ in spans)
    covered = set().union(*(text[s:e].split() for s, e in spans))
    assert covered == set(text.split())


def test_split_passages_refuses_an_empty_budget() -> None:
    with pytest.raises(ValueError, match="at least 1 token"):
        split_passages("a b", 0, words)
