"""Tier: unit.

Gemini CLI's settings are JSON with comments (it reads them through strip-json-comments): the
hooks' plan reads them the same way, from a table, and still names a real error's line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from daemon.hooks.plan import Malformed, Options, has_comments, installed, parse_json, plan_install, plan_uninstall

HOME, PROJECT = Path("/home/u"), Path("/work/p")
GEMINI = HOME / ".gemini" / "settings.json"


@pytest.mark.parametrize(
    ("text", "data", "commented"),
    [
        pytest.param('{\n  // my theme\n  "theme": "GitHub"\n}\n', {"theme": "GitHub"}, True, id="line comment"),
        pytest.param('{"a": 1 /* one\n two */, "b": 2}', {"a": 1, "b": 2}, True, id="block comment over lines"),
        pytest.param(
            '{"url": "http://x//y", "glob": "/*.md"}', {"url": "http://x//y", "glob": "/*.md"}, False, id="in strings"
        ),
        pytest.param('{"q": "say \\"//hi\\"" // after\n}', {"q": 'say "//hi"'}, True, id="escaped quotes"),
        pytest.param('{"a": 1}\n// the end, no newline', {"a": 1}, True, id="comment at the end"),
    ],
)
def test_comments_are_read_as_gemini_reads_them(text: str, data: dict[str, Any], commented: bool) -> None:
    assert parse_json(GEMINI, text, comments=True) == data
    assert has_comments(text) is commented


def test_a_real_error_still_names_its_line() -> None:
    with pytest.raises(Malformed, match=r"line 3, column"):
        parse_json(GEMINI, '{\n  // fine\n  "a": ,\n}', comments=True)


def test_claude_codes_settings_stay_strict_json() -> None:
    with pytest.raises(Malformed, match="is not valid JSON"):
        parse_json(HOME / ".claude" / "settings.json", '{\n  // no\n  "a": 1\n}')


def test_a_commented_gemini_file_is_merged_and_restored_from_its_backup() -> None:
    original = '{\n  // my theme\n  "theme": "GitHub"\n}\n'
    after = plan_install("gemini", "user", Options(), {GEMINI: original}, HOME, PROJECT)[GEMINI]
    assert after is not None
    assert '"theme": "GitHub"' in after
    assert installed("gemini", "user", {GEMINI: after}, HOME, PROJECT).server
    back = plan_uninstall("gemini", "user", {GEMINI: after}, HOME, PROJECT, {GEMINI: [original]})
    assert back[GEMINI] == original
