"""``memsync capture``: a stop hook's session becomes one AgentDB episode, redacted, written by the
real ``agentdb reflexion store`` (agentdb 1.6.1 from tests/agentdb_gen) into a real AgentDB file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import GEN, hub_episodes, read_agentdb_rows, require_node_modules, write_config

from daemon.hooks.capture import capture, project_name, store_arguments, turns
from sync.source.redaction import Redactor

SECRET = "ghp_" + "a1B2" * 9  # a GitHub token's shape

# Claude Code's transcript: JSON lines; tool uses and results, and the tool's own injected blocks.
CLAUDE_TRANSCRIPT = "\n".join(
    json.dumps(line)
    for line in [
        {"type": "summary", "summary": "older"},
        {"type": "user", "message": {"role": "user", "content": "<command-name>/clear</command-name>"}},
        {"type": "user", "message": {"role": "user", "content": f"Fix the login bug; token {SECRET}"}},
        {
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "tool_use", "name": "Read", "input": {}}]},
        },
        {
            "type": "user",
            "message": {"role": "user", "content": [{"type": "tool_result", "content": "file text"}]},
        },
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "Looking."}]}},
        {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "also add a test"}]}},
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "Done: fixed."}]}},
    ]
)
# Codex's rollout file: response items; the environment context is the tool's, not the user's.
CODEX_TRANSCRIPT = "\n".join(
    json.dumps({"type": "response_item", "payload": {"type": "message", "role": role, "content": content}})
    for role, content in [
        ("user", [{"type": "input_text", "text": "<environment_context>cwd</environment_context>"}]),
        ("user", [{"type": "input_text", "text": "rename the module"}]),
        ("assistant", [{"type": "output_text", "text": "Renamed."}]),
    ]
)
# Gemini CLI's chat record: one JSON document.
GEMINI_TRANSCRIPT = json.dumps(
    {"sessionId": "g", "messages": [{"type": "user", "content": "explain x"}, {"type": "gemini", "content": "x is y"}]}
)


def test_turns_keep_what_the_user_and_the_assistant_wrote() -> None:
    assert turns(CLAUDE_TRANSCRIPT) == [
        ("user", f"Fix the login bug; token {SECRET}"),
        ("assistant", "Looking."),
        ("user", "also add a test"),
        ("assistant", "Done: fixed."),
    ]
    assert turns(CODEX_TRANSCRIPT) == [("user", "rename the module"), ("assistant", "Renamed.")]
    assert turns(GEMINI_TRANSCRIPT) == [("user", "explain x"), ("assistant", "x is y")]
    assert turns("not json\n{broken") == []


def test_the_episode_is_the_first_prompt_and_the_last_answer_redacted() -> None:
    event = {"session_id": "s-1", "cwd": "/w/proj", "hook_event_name": "SessionEnd"}
    episode = capture(event, turns(CLAUDE_TRANSCRIPT), "claude-code", "proj", Redactor())
    assert episode is not None
    assert episode.session == "s-1"
    assert episode.task == "Fix the login bug; token [redacted:github-token]"
    assert episode.input == "Fix the login bug; token [redacted:github-token]\n\nalso add a test"
    assert episode.output == "Done: fixed."
    assert episode.critique == "session captured by memsync from claude-code; project:proj"
    assert SECRET not in " ".join(store_arguments(episode))
    assert store_arguments(episode)[:6] == ["reflexion", "store", "s-1", episode.task, "0", "false"]


def test_the_hooks_own_fields_fill_in_for_a_transcript_that_says_less() -> None:
    event = {"session_id": "c", "prompt": "do it", "last_assistant_message": "did it"}
    episode = capture(event, [], "codex", "p", Redactor())
    assert episode is not None
    assert (episode.task, episode.output) == ("do it", "did it")
    assert capture({"session_id": "c"}, [], "codex", "p", Redactor()) is None
    long = capture({"session_id": "c", "prompt": "p" * 5000}, [], "codex", "p", Redactor())
    assert long is not None
    assert len(long.task) == 2000


def test_project_is_the_git_top_level_else_the_directory() -> None:
    repo = {Path("/w/proj/.git")}
    assert project_name(Path("/w/proj/src/a"), lambda p: p in repo) == "proj"
    assert project_name(Path("/tmp/scratch"), lambda p: False) == "scratch"


def test_capture_stores_through_agentdbs_own_cli(tmp_path: Path) -> None:
    require_node_modules(GEN)
    agentdb = tmp_path / "agentdb.db"
    site = write_config(tmp_path / "site", "cap", agentdb, tmp_path / "hub")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(CLAUDE_TRANSCRIPT, encoding="utf-8")
    (tmp_path / "myproj/.git").mkdir(parents=True)
    event = {
        "session_id": "sess-9",
        "transcript_path": str(transcript),
        "cwd": str(tmp_path / "myproj"),
        "hook_event_name": "SessionEnd",
    }
    cli = GEN / "node_modules/.bin/agentdb"
    done = memsync_stdin(
        json.dumps(event), "capture", "--for", "claude-code", "-c", str(site.config), "--agentdb", str(cli)
    )
    assert done.returncode == 0, done.stderr
    rows = list(read_agentdb_rows(agentdb).values())
    assert len(rows) == 1
    row = {k: v.decode() if isinstance(v, bytes) else v for k, v in rows[0].items()}
    assert row["session_id"] == "sess-9"
    assert row["task"] == "Fix the login bug; token [redacted:github-token]"
    assert row["output"] == "Done: fixed."
    assert row["critique"] == "session captured by memsync from claude-code; project:myproj"
    assert SECRET not in agentdb.read_bytes().decode("latin-1")

    bad = memsync_stdin("{not json", "capture", "--for", "claude-code", "-c", str(site.config))
    assert bad.returncode == 1
    assert bad.stderr.count("\n") == 1
    assert "not the hook's JSON" in bad.stderr
    missing = memsync_stdin(
        json.dumps(event), "capture", "--for", "codex", "-c", str(site.config), "--agentdb", "no-such-agentdb"
    )
    assert missing.returncode == 78
    assert "no-such-agentdb not found" in missing.stderr


def test_capture_stores_into_the_journal_attributed_and_tagged(tmp_path: Path) -> None:
    """Without --agentdb: the site's journal, which can carry the tool's name and the project's tag
    (AgentDB's CLI takes neither); a daemon pushes it like the AgentDB file."""
    site = write_config(tmp_path / "site", "cap", tmp_path / "agentdb.db", tmp_path / "hub.db")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(CLAUDE_TRANSCRIPT, encoding="utf-8")
    (tmp_path / "myproj/.git").mkdir(parents=True)
    event = {"session_id": "sess-9", "transcript_path": str(transcript), "cwd": str(tmp_path / "myproj")}
    done = memsync_stdin(json.dumps(event), "capture", "--for", "codex", "-c", str(site.config))
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "agentdb.db").exists(), "the AgentDB file is never written by memsync"
    synced = subprocess.run(
        [sys.executable, "-m", "daemon", "sync", "--once", "-c", str(site.config)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert synced.returncode == 0, synced.stderr
    [episode] = hub_episodes(tmp_path / "hub.db", "cap")
    assert episode["sourceId"] == "m1"
    assert episode["agentName"] == "codex"
    assert episode["tags"] == ["project:myproj", "captured"]
    assert episode["task"] == "Fix the login bug; token [redacted:github-token]"
    assert episode["sessionId"] == "sess-9"


def memsync_stdin(stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI in a child process, fed a hook's stdin."""
    return subprocess.run(
        [sys.executable, "-m", "daemon", *args], input=stdin, capture_output=True, text=True, timeout=120, check=False
    )
