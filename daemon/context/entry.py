"""One memory as the block shows it: where it is from, how it went, and its text, labelled and whole.

    - [laptop#12 · claude-code · 3 May 2026, 2:10 pm UTC] FAILED attempt · reward 0.40
      Task: Try to fix the web build dying at npm ci (exit 137) by regenerating the lockfile
      Context: Suspected a corrupted package-lock.json after the React 19 upgrade; ...
      Result: Build still died at the same step with exit 137. ...
      Lesson: Lockfile was not the problem; 137 means the process was killed.

- **How it went**: ``success`` false is a FAILED attempt, said so, so that an agent does not repeat
  it; true is "worked"; the reward beside either. AgentDB stores success 0 and reward 0 when an
  agent does not say (a captured session, a conversation turn): success false with reward 0 cannot
  be told from that, so it reads "no outcome recorded" rather than calling a plain note a failure.
- **Labels**: an episode's text is its task, input, output and critique, one per line, blank ones
  left out (``sync.search.indexing.text.episode_text``). The task is known from the result; when exactly three
  lines follow it, they are the input (Context), the output (Result) and the critique (Lesson).
  Otherwise which line is which cannot be told (a field left blank, or a log of many lines), and
  the rest is shown under Details. Search results do not carry the fields apart yet (the issue's
  search-side design: field spans in the payload).
- **Whole, or not at all**: a memory is shown whole up to ``limit`` characters of text. A longer
  one is shown by its task, the passage the search matched (when the search matched one past its
  start) and its last lines (where an agent's episode says what happened and what it learned),
  each whole; unless its last two lines fit, nothing: ``render`` says None and the memory is left
  out rather than cut before its point. A memory is never shortened to fit what is left of a
  budget: it is left out, and a shorter one may take its place.
- **Fenced**: every line starts with the block's own marks and labels, and a memory's text is one
  line per field with anything like the fence's tag neutralised (``neutralise``): a memory cannot
  close the fence or start a line of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from sync.search.query.results_text import outcome
from sync.search.request import SearchResult

_FENCE_LIKE = re.compile(r"<(?=\s*/?\s*memsync)", re.IGNORECASE)
_GUARD: Final = "\u2039"  # a single left angle quotation mark: reads as "<", opens no tag
INDENT: Final = "  "
FIELDS: Final = ("Context", "Result", "Lesson")  # input, output, critique
TAIL_LINES: Final = 3  # last lines a long memory shows, at most
TASK_MAX: Final = 300  # characters of a long memory's task line (its first line may be a whole log)


def neutralise(text: str) -> str:
    """A memory's text as one line that cannot open or close the fence: whitespace runs become one
    space, and a ``<`` that starts anything like the fence's tag becomes ``_GUARD``."""
    return _FENCE_LIKE.sub(_GUARD, " ".join(text.split()))


def trimmed(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters, cut at a word where one is near, marked by ``…``."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return "…"[:limit]
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip() + "…"


def header(result: SearchResult, folded: int = 0) -> str:
    where = " · ".join(
        part
        for part in (
            f"{result.site}#{result.source_id}",
            (result.memory_type or "").replace("_", " "),
            result.agent or "unknown agent",
            result.when or "date unknown",
        )
        if part
    )
    how = outcome(result)
    more = f" (+{folded} more from this session)" if folded else ""
    return f"- [{neutralise(where)}]{' ' + how if how else ''}{more}\n"


@dataclass(frozen=True, slots=True)
class Parts:
    """A memory's text cut where its fields are known to start: the task and the labelled rest."""

    task: str | None
    fields: tuple[tuple[str, str], ...]  # (label, text), in order


def parts(result: SearchResult) -> Parts:
    text = result.text
    task = result.task
    if not task or not text.startswith(task):
        return Parts(None, (("Details", text),) if text.strip() else ())
    rest = text[len(task) :].lstrip("\n")
    lines = rest.split("\n") if rest.strip() else []
    if len(lines) == len(FIELDS):
        return Parts(task, tuple(zip(FIELDS, lines, strict=True)))
    return Parts(task, (("Details", rest),) if lines else ())


def _line(label: str, text: str) -> str:
    return f"{INDENT}{label}: {neutralise(text)}\n"


def whole(result: SearchResult, folded: int = 0) -> str:
    """The entry with the memory's whole text."""
    shown = parts(result)
    lines = [_line("Task", shown.task)] if shown.task is not None else []
    lines += [_line(label, text) for label, text in shown.fields]
    return header(result, folded) + "".join(lines)


def _long(result: SearchResult, limit: int, folded: int) -> str | None:
    """A long memory by its task, its matched passage and its last lines, each whole, within
    ``limit`` characters of text; None unless its last two lines (what happened, and the lesson)
    fit beside its task."""
    lines = [line for line in result.text.splitlines() if line.strip()]
    first = result.task or (lines[0] if lines else "")
    task = _line("Task", trimmed(neutralise(first), TASK_MAX))
    room = limit - len(task)
    passage = result.passage
    covered = neutralise(passage.text) if passage is not None else ""
    ends = lines[1:][-TAIL_LINES:]
    tail: list[str] = []
    shown = 0
    for line in reversed(ends):
        if covered and neutralise(line) in covered:
            shown += 1  # the passage shows it already
            continue
        candidate = _line("Ends", line)
        if len(candidate) + sum(len(t) for t in tail) > room:
            break
        tail.insert(0, candidate)
        shown += 1
    if shown < min(2, len(ends)):
        return None
    matched = ""
    if passage is not None and passage.index > 0:
        matched = _line(f"Matched passage ({passage.index + 1} of {passage.count})", passage.text)
        if len(matched) + sum(len(t) for t in tail) > room:
            matched = ""  # the last lines say what happened; a passage that does not fit as well is left out
            if shown > len(tail):
                return None  # ...unless it held some of them
    if not (matched or tail):
        return None
    return header(result, folded) + task + matched + "".join(tail)


def render(result: SearchResult, *, limit: int, folded: int = 0, room: int | None = None) -> str | None:
    """The entry: whole if its text fits in ``limit`` characters (whatever ``room`` is left: the
    caller leaves out what does not fit), else its long form within ``limit`` and ``room``, else None."""
    entry = whole(result, folded)
    if len(entry) - len(header(result, folded)) <= limit:
        return entry
    return _long(result, limit if room is None else min(limit, room), folded)


__all__ = ["header", "neutralise", "outcome", "parts", "render", "trimmed", "whole"]
