"""The hook adapter (daemon.context.hook) on each tool's documented stdin (tests/data/hooks), and
what the hook keeps on disk (daemon.context.files)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from daemon.context.files import GIVEN_PER_SESSION, given, given_file, last_prompt, project_name, remember_given
from daemon.context.hook import CAPS, POINTER, TOOLS, fitted, is_short, plan, read_input, render

HOOKS = Path(__file__).parents[1] / "data" / "hooks"
PROMPT_EVENT = {"claude-code": "UserPromptSubmit", "codex": "UserPromptSubmit", "gemini": "BeforeAgent"}


def fixture(tool: str, event: str, **changes: object) -> str:
    data = json.loads((HOOKS / f"{tool}.{event}.json").read_text(encoding="utf-8"))
    return json.dumps({**data, **changes})


@pytest.mark.parametrize("tool", TOOLS)
def test_each_tools_documented_stdin_is_read(tool: str) -> None:
    start = read_input(tool, fixture(tool, "SessionStart"))
    assert (start.event, start.source, start.cwd) == ("SessionStart", "startup", "/home/user/shop-api")
    assert start.session_id
    assert start.transcript_path
    prompt = read_input(tool, fixture(tool, PROMPT_EVENT[tool]))
    assert prompt.event == PROMPT_EVENT[tool]
    assert prompt.prompt
    assert len(prompt.prompt.split()) >= 3


@pytest.mark.parametrize("tool", TOOLS)
def test_each_tool_gets_its_documented_answer(tool: str) -> None:
    out = render(tool, PROMPT_EVENT[tool], "<memsync-memories>\nx\n</memsync-memories>\n")
    assert out.endswith("\n")
    assert json.loads(out) == {
        "hookSpecificOutput": {
            "hookEventName": PROMPT_EVENT[tool],
            "additionalContext": "<memsync-memories>\nx\n</memsync-memories>\n",
        }
    }
    # Nothing to add: Gemini parses stdout as JSON whatever it is; the others take silence.
    assert render(tool, "SessionStart", "") == ("{}\n" if tool == "gemini" else "")


@pytest.mark.parametrize(
    ("tool", "event", "changes", "action", "query"),
    [
        ("claude-code", "SessionStart", {}, "search", "shop-api"),
        ("claude-code", "SessionStart", {"source": "clear"}, "search", "shop-api"),
        ("claude-code", "SessionStart", {"source": "resume"}, "search", "shop-api the last thing asked"),
        ("claude-code", "SessionStart", {"source": "compact"}, "pointer", ""),
        ("codex", "SessionStart", {}, "search", "shop-api"),
        ("gemini", "SessionStart", {}, "search", "shop-api"),
        ("gemini", "SessionStart", {"source": None, "trigger": "resume"}, "search", "shop-api the last thing asked"),
        ("claude-code", "UserPromptSubmit", {}, "search", "Write a function to calculate the factorial of a number"),
        ("codex", "UserPromptSubmit", {"prompt": "yes"}, "skip", ""),
        ("codex", "UserPromptSubmit", {"prompt": "run the tests"}, "skip", ""),  # three words, 13 characters
        ("codex", "UserPromptSubmit", {"prompt": "   go   on   "}, "skip", ""),
        ("codex", "UserPromptSubmit", {"prompt": "supercalifragilistic-refactor"}, "skip", ""),  # one long word
        (
            "gemini",
            "BeforeAgent",
            {"prompt": "why is the  nightly\ndeploy red"},
            "search",
            "why is the nightly deploy red",
        ),
        ("claude-code", "Stop", {}, "skip", ""),
        ("gemini", "UserPromptSubmit", {}, "skip", ""),  # not Gemini's event for a prompt
    ],
)
def test_what_the_hook_does(tool: str, event: str, changes: dict[str, object], action: str, query: str) -> None:
    source = "SessionStart" if event == "SessionStart" else PROMPT_EVENT[tool]
    hook = read_input(tool, fixture(tool, source, hook_event_name=event, **changes))
    decided = plan(hook, project="shop-api", last_prompt="the last thing asked")
    assert decided.action == action
    assert decided.query == query
    if action == "search":
        assert decided.start == (event == "SessionStart")
        assert 0 < decided.budget <= CAPS[tool]
    else:
        assert decided.reason


def test_a_budget_asked_for_is_kept_within_the_tools_cap() -> None:
    hook = read_input("codex", fixture("codex", "UserPromptSubmit"))
    assert plan(hook, project=None, budget=1000).budget == 1000
    assert plan(hook, project=None, budget=50_000).budget == CAPS["codex"]


def test_a_start_with_nothing_to_search_for_is_skipped() -> None:
    hook = read_input("claude-code", fixture("claude-code", "SessionStart"))
    assert plan(hook, project=None).action == "skip"


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        ("", "not JSON"),
        ("{not json", "not JSON"),
        ("[1, 2]", "not an object"),
        ('{"session_id": "x"}', "no hook_event_name"),
    ],
)
def test_a_stdin_that_is_not_the_tools_says_so(raw: str, named: str) -> None:
    with pytest.raises(ValueError, match=named):
        read_input("claude-code", raw)


@pytest.mark.parametrize("tool", TOOLS)
def test_the_answer_fits_the_tools_cap_json_and_all(tool: str) -> None:
    # Newlines and quotes grow under JSON's escapes: the block is shrunk until the answer fits.
    asked: list[int] = []

    def make(budget: int) -> tuple[str, int]:
        asked.append(budget)
        return ('line "quoted"\n' * 2000)[:budget], budget

    out, used = fitted(tool, PROMPT_EVENT[tool], CAPS[tool], make)
    assert len(out) <= CAPS[tool]
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert len(context) == used
    assert used < CAPS[tool]
    assert asked[0] == CAPS[tool]
    assert len(out) > CAPS[tool] * 0.8, "shrunk by about what was over, not more"


def test_the_pointer_after_a_compaction_is_short() -> None:
    assert len(POINTER) < 200
    assert "memsync search" in POINTER


@pytest.mark.parametrize(
    ("prompt", "short"),
    [
        ("yes", True),
        ("ok do it", True),
        ("run the tests", True),
        ("fix the flaky websocket test", False),
        ("E11000", False),  # a pasted error code is a question
        ("ZQX_7781_A?", False),
        ("go 2", True),
    ],
)
def test_is_short(prompt: str, short: bool) -> None:
    assert is_short(prompt) is short


def test_the_project_is_the_git_top_level(tmp_path: Path) -> None:
    repo = tmp_path / "shop-api"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "deep").mkdir(parents=True)
    assert project_name(repo / "src" / "deep") == "shop-api"
    worktree = tmp_path / "feature"  # a worktree's .git is a file
    worktree.mkdir()
    (worktree / ".git").write_text("gitdir: elsewhere\n", encoding="utf-8")
    assert project_name(worktree) == "feature"
    loose = tmp_path / "notes" / "today"
    loose.mkdir(parents=True)
    assert project_name(loose) == "today"
    assert project_name("relative/path") is None


def test_a_resumed_sessions_last_prompt_from_its_transcript(tmp_path: Path) -> None:
    claude = tmp_path / "claude.jsonl"
    lines = [
        {"type": "user", "message": {"role": "user", "content": "first: set up the database"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "done"}]}},
        {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "now fix the\nsignup bug"}]}},
        {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "content": "ok"}]}},
        {"type": "user", "message": {"role": "user", "content": "<command-name>/compact</command-name>"}},
        {"type": "assistant", "message": {"role": "assistant", "content": "fixed"}},
    ]
    claude.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    assert last_prompt(claude) == "now fix the signup bug"

    codex = tmp_path / "rollout.jsonl"
    lines = [
        {"type": "session_meta", "payload": {"id": "x", "cwd": "/w"}},
        {"type": "response_item", "payload": {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "rename the config loader"}]}},
        {"type": "event_msg", "payload": {"type": "user_message", "message": "and add a test for it"}},
        {"type": "event_msg", "payload": {"type": "agent_message", "message": "sure"}},
    ]  # fmt: skip
    codex.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    assert last_prompt(codex) == "and add a test for it"

    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(b"\x00\xff not json at all")
    assert last_prompt(garbage) is None
    assert last_prompt(tmp_path / "missing.jsonl") is None


def test_what_a_session_was_given_is_kept_bounded(tmp_path: Path) -> None:
    state = tmp_path / "laptop.state.db"
    assert given(state, "codex", "s1") == frozenset()
    remember_given(state, "codex", "s1", ["a", "b"], fresh=True)
    remember_given(state, "codex", "s1", ["b", "c"], fresh=False)
    assert given(state, "codex", "s1") == {"a", "b", "c"}
    assert given(state, "claude-code", "s1") == frozenset(), "each tool's sessions are their own"
    remember_given(state, "codex", "s1", ["d"], fresh=True)  # a session starting again (clear)
    assert given(state, "codex", "s1") == {"d"}
    remember_given(state, "codex", "s1", [f"x{i}" for i in range(GIVEN_PER_SESSION + 50)], fresh=False)
    kept = given(state, "codex", "s1")
    assert len(kept) == GIVEN_PER_SESSION
    assert f"x{GIVEN_PER_SESSION + 49}" in kept
    assert "d" not in kept  # the oldest go first
    assert "s1" not in given_file(state, "codex", "s1").name, "the session id is hashed"
    assert oct(given_file(state, "codex", "s1").parent.stat().st_mode & 0o777) == oct(0o700 & ~_umask())


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
