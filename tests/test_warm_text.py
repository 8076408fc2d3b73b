"""episode_text and text_hash: what the warm layer embeds for an episode, and its change detector."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from sync.warm.text import episode_text, text_hash


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
