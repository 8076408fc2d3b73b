"""What ``memsync capture`` stores for a finished session: pure functions from the stop hook's JSON
and the session's transcript to one episode, and to where it goes: the site's journal
(``journal_entry``: memsync's own file, ``sync.source.journal``), attributed to the tool (its
``agentName``) and tagged with the project (``project:<name>``, as the context hook's "latest
sessions of this project" looks for it); or, with ``--agentdb``, the ``agentdb reflexion store``
call (AgentDB's own CLI writes the AgentDB file, memsync never does; that CLI takes no tags).

The episode: ``session_id`` the tool's session id; ``task`` the first prompt the user typed;
``input`` the user's prompts in order; ``output`` the last assistant message; ``critique`` a line
naming the tool and the project (``project:<name>``); no reward and success false, because nobody
judged the session. Each text is redacted (the site's ``[privacy]`` rules) and bounded.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from sync.source.journal.store import Entry
from sync.source.redaction import Redactor, redact_fields

TASK_CHARS: Final = 2_000
TEXT_CHARS: Final = 8_000
_ASSISTANT: Final = frozenset({"assistant", "gemini", "model"})


@dataclass(frozen=True, slots=True)
class Captured:
    session: str
    task: str
    input: str
    output: str
    critique: str


def project_name(cwd: Path, exists: Callable[[Path], bool] = Path.exists) -> str:
    """The basename of the git top-level above ``cwd``, else of ``cwd``: the ``project:`` tag's name."""
    for folder in (cwd, *cwd.parents):
        if exists(folder / ".git"):
            return folder.name or str(folder)
    return cwd.name or str(cwd)


def turns(transcript: str) -> list[tuple[str, str]]:
    """(role, text) of every message a person or the assistant wrote, in order: from a JSON-lines
    transcript (Claude Code, Codex) or one JSON document (Gemini CLI's chat record); tool calls,
    tool results and the tools' own injected blocks (``<...>``) are left out."""
    records: list[Any] = []
    try:
        whole = json.loads(transcript)
    except json.JSONDecodeError:
        for line in transcript.splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    else:
        records = whole.get("messages", []) if isinstance(whole, dict) else whole if isinstance(whole, list) else []
    found = []
    for record in records:
        message = _message(record)
        if message is None:
            continue
        role, text = message
        text = text.strip()
        if text and not (role == "user" and text.startswith("<")):
            found.append((role, text))
    return found


def _message(record: object) -> tuple[str, str] | None:
    if not isinstance(record, dict):
        return None
    inner = record.get("message") or record.get("payload") or record
    if not isinstance(inner, dict):
        return None
    role = inner.get("role") or record.get("role") or record.get("type")
    if role not in ("user", *_ASSISTANT):
        return None
    text = "\n".join(_texts(inner.get("content", inner.get("parts"))))
    return ("assistant" if role in _ASSISTANT else "user"), text


def _texts(content: object) -> Iterator[str]:
    """The text of a message's content: a string, or the text blocks of a list (a list holding a
    tool result or tool use is not something a person or the assistant wrote to the other)."""
    if isinstance(content, str):
        yield content
        return
    if not isinstance(content, list):
        return
    if any(isinstance(b, dict) and b.get("type") in ("tool_result", "tool_use", "function_call") for b in content):
        return
    for block in content:
        if isinstance(block, str):
            yield block
        elif isinstance(block, dict) and isinstance(block.get("text"), str):
            yield block["text"]


def capture(
    event: Mapping[str, Any], conversation: Sequence[tuple[str, str]], tool: str, project: str, redactor: Redactor
) -> Captured | None:
    """The episode for a stop hook's ``event``; None when the session holds no prompt yet."""
    prompts = [text for role, text in conversation if role == "user"]
    answers = [text for role, text in conversation if role == "assistant"]
    # The hooks' own fields when the transcript says less (Codex: last_assistant_message; Gemini's
    # AfterAgent: prompt and prompt_response).
    if not prompts and isinstance(event.get("prompt"), str) and event["prompt"].strip():
        prompts = [event["prompt"].strip()]
    for key in ("last_assistant_message", "prompt_response"):
        if not answers and isinstance(event.get(key), str) and event[key].strip():
            answers = [event[key].strip()]
    if not prompts:
        return None
    fields = {
        "task": _bounded(prompts[0], TASK_CHARS),
        "input": _bounded("\n\n".join(prompts), TEXT_CHARS),
        "output": _bounded(answers[-1], TEXT_CHARS) if answers else "",
        "critique": f"session captured by memsync from {tool}; project:{project}",
    }
    clean, _ = redact_fields(redactor, fields)
    session = str(event.get("session_id") or "unknown")
    return Captured(session, clean["task"], clean["input"], clean["output"], clean["critique"])


def store_arguments(episode: Captured) -> list[str]:
    """``agentdb``'s arguments: reflexion store <session> <task> <reward> <success> [critique] [input] [output]."""
    episode_text = [episode.critique, episode.input, episode.output]
    return ["reflexion", "store", episode.session, episode.task, "0", "false", *episode_text]


def journal_entry(episode: Captured, tool: str, project: str, now_ms: int) -> Entry:
    """The session as the journal stores it: attributed to ``tool``, tagged with the project."""
    return Entry(
        session_id=episode.session,
        task=episode.task,
        created_ms=now_ms,
        tags=(f"project:{project}", "captured"),
        metadata={"agentName": tool, "platform": tool, "project": project},
        agent_name=tool,
        agent_platform=tool,
        input=episode.input,
        output=episode.output,
        critique=episode.critique,
        success=False,
    )


def _bounded(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
