"""``memsync context --for TOOL``: an agent tool's hook JSON in, that tool's answer out. Pure.

What each tool sends on stdin (their documentation, 2026-11): Claude Code and Codex CLI send
``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``; ``SessionStart`` adds ``source``
(startup, resume, clear; Claude Code also compact), ``UserPromptSubmit`` adds ``prompt``. Gemini CLI
sends the same base fields; its ``SessionStart`` has ``source`` (``trigger`` in some versions of its
docs), and its per-prompt event is ``BeforeAgent`` with ``prompt``. All three take
``{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}`` on stdout; Gemini
parses stdout as JSON whatever it is, so an empty answer to it is ``{}``, to the others nothing.

What the hook decides (``plan``):

- a session starting (startup, resume, clear) gets the block for the project (and, on a resume,
  the session's last prompt);
- after a compaction (``source`` compact) the start block is not repeated: a one-line pointer only,
  since what it said was either kept by the compaction's summary or not needed;
- a prompt gets the block for the prompt, unless it is a few words (under ``SHORT_PROMPT_CHARS``
  characters or ``SHORT_PROMPT_WORDS`` words: "yes", "go on", "run the tests"), which gets nothing,
  unless one of them is an identifier (``E11000``, ``ZQX_7781_A``: a pasted error code is a question);
- any other event gets nothing.

Each answer stays within the tool's cap on a hook's output (``CAPS``): Claude Code replaces a longer
one by a preview, Codex shows the model about 2,500 tokens.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from sync.identifiers import identifiers

TOOLS: Final = ("claude-code", "codex", "gemini")
# Characters of stdout, at most. Claude Code: 10,000 per hook output. Codex: about 2,500 tokens
# model-visible, ~9,000 characters of English. Gemini documents no cap: the same as Codex's, since
# BeforeAgent's context is added to every turn that fires it.
CAPS: Final = {"claude-code": 10_000, "codex": 9_000, "gemini": 9_000}
START_EVENT: Final = "SessionStart"
PROMPT_EVENTS: Final = {"claude-code": "UserPromptSubmit", "codex": "UserPromptSubmit", "gemini": "BeforeAgent"}
START_BUDGET: Final = 6_000  # characters of a session start's block, unless told otherwise
PROMPT_BUDGET: Final = 3_000  # a prompt's: it comes again with every prompt
SHORT_PROMPT_CHARS: Final = 20
SHORT_PROMPT_WORDS: Final = 3
QUERY_MAX: Final = 1_000  # characters of a prompt searched for: its start says what it is about
POINTER: Final = (
    "memsync: memories from earlier sessions were given at this session's start; `memsync search QUERY` finds more."
)


@dataclass(frozen=True, slots=True)
class HookInput:
    tool: str
    event: str  # hook_event_name as sent
    session_id: str | None
    cwd: str | None
    transcript_path: str | None
    source: str | None  # SessionStart's startup | resume | clear | compact
    prompt: str | None


@dataclass(frozen=True, slots=True)
class Plan:
    """``action``: "search" (for ``query``), "pointer" (say ``POINTER``), "skip" (say nothing, ``reason``)."""

    action: Literal["search", "pointer", "skip"]
    start: bool = False
    query: str = ""
    reason: str = ""
    budget: int = 0


def read_input(tool: str, raw: str) -> HookInput:
    """The hook's stdin; ValueError says in one sentence what is wrong with it."""
    if tool not in TOOLS:
        raise ValueError(f"--for {tool!r}: use one of {', '.join(TOOLS)}")
    try:
        data = json.loads(raw)
    except ValueError:
        raise ValueError(f"the hook's stdin is not JSON ({len(raw)} characters): is this {tool}'s hook?") from None
    if not isinstance(data, dict):
        raise ValueError(f"the hook's stdin is JSON but not an object: is this {tool}'s hook?")  # noqa: TRY004
    event = data.get("hook_event_name")
    if not isinstance(event, str) or not event:
        raise ValueError(f"the hook's stdin has no hook_event_name: is this {tool}'s hook?")

    def text(key: str) -> str | None:
        value = data.get(key)
        return value if isinstance(value, str) and value else None

    return HookInput(
        tool=tool,
        event=event,
        session_id=text("session_id"),
        cwd=text("cwd"),
        transcript_path=text("transcript_path"),
        source=text("source") or text("trigger"),
        prompt=text("prompt"),
    )


def is_short(prompt: str) -> bool:
    """A prompt of a few words that names nothing in particular."""
    words = prompt.split()
    few = len(" ".join(words)) < SHORT_PROMPT_CHARS or len(words) < SHORT_PROMPT_WORDS
    return few and not identifiers(prompt)


def plan(hook: HookInput, *, project: str | None, last_prompt: str | None = None, budget: int | None = None) -> Plan:
    """What to do for this hook call. ``project``: the project's name (from ``cwd``); ``last_prompt``:
    a resumed session's last prompt, if known; ``budget``: characters asked for (``--budget-*``)."""
    if hook.event == START_EVENT:
        if hook.source == "compact":
            return Plan("pointer", reason="after a compaction the session's start block is not repeated")
        parts = [p for p in (project, last_prompt if hook.source == "resume" else None) if p]
        if not parts:
            return Plan("skip", reason="a session start with no project and no prompt to search for")
        query = " ".join(parts)[:QUERY_MAX]
        return Plan("search", start=True, query=query, budget=_budget(hook.tool, budget, START_BUDGET))
    if hook.event == PROMPT_EVENTS[hook.tool]:
        prompt = " ".join((hook.prompt or "").split())
        if is_short(prompt):
            return Plan("skip", reason="a prompt of a few words gets no memories")
        return Plan("search", query=prompt[:QUERY_MAX], budget=_budget(hook.tool, budget, PROMPT_BUDGET))
    known = f"{START_EVENT} and {PROMPT_EVENTS[hook.tool]}"
    return Plan("skip", reason=f"memsync context answers {hook.tool}'s {known}, not {hook.event}")


def _budget(tool: str, asked: int | None, default: int) -> int:
    return min(CAPS[tool], asked if asked is not None else default)


def render(tool: str, event: str, context: str) -> str:
    """The tool's stdout for this context ("" : nothing to add)."""
    if not context:
        return "{}\n" if tool == "gemini" else ""
    payload = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}}
    return json.dumps(payload, ensure_ascii=False) + "\n"


def fitted(tool: str, event: str, budget: int, make: Callable[[int], tuple[str, Any]]) -> tuple[str, Any]:
    """The stdout for the largest block ``make(budget)`` gives whose answer fits the tool's cap (the
    JSON around the block and its escapes count too), and what ``make`` returned with it."""
    for _ in range(8):
        context, extra = make(budget)
        out = render(tool, event, context)
        over = len(out) - CAPS[tool]
        if over <= 0:
            return out, extra
        budget -= over
    return render(tool, event, ""), None


def reply_for_error(tool: str | None) -> str:
    """What to print when the hook cannot answer: nothing, or for Gemini the empty JSON it expects."""
    return "{}\n" if tool == "gemini" else ""


def parse_wire(results: Any) -> list[Mapping[str, Any]]:
    """The daemon's results as a list of mappings (anything else: none)."""
    if not isinstance(results, list):
        return []
    return [r for r in results if isinstance(r, Mapping)]


__all__ = [
    "CAPS",
    "POINTER",
    "TOOLS",
    "HookInput",
    "Plan",
    "fitted",
    "is_short",
    "plan",
    "read_input",
    "render",
    "reply_for_error",
]
