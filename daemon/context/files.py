"""What ``memsync context`` reads and keeps on disk, beside the daemon's answers: the project a hook
runs in, a resumed session's last prompt, and the memories already given to a session.

- **Project**: the basename of the git top-level of the hook's ``cwd`` (the nearest folder up holding
  ``.git``), or of ``cwd`` itself outside a repository; episodes of it carry ``project:<name>``.
- **Last prompt**: read from the end of the session's transcript (at most ``TRANSCRIPT_TAIL``
  bytes), the last line that is the user's text. Claude Code's and Codex's transcripts are JSON
  lines of different shapes; both are walked for a user message's text. Anything else: none.
- **Given**: the point ids a session has been given, so that the next prompt does not repeat them:
  one small file per session under ``<state file>.context/`` (the session id hashed), the latest
  ``GIVEN_PER_SESSION`` ids, at most ``GIVEN_SESSIONS`` files (the oldest removed). Losing it only
  costs a repeat.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

TRANSCRIPT_TAIL: Final = 256 * 1024
GIVEN_PER_SESSION: Final = 300
GIVEN_SESSIONS: Final = 200


def project_name(cwd: str | Path) -> str | None:
    """The project of a working directory: its git top-level's name, else its own."""
    here = Path(cwd)
    if not here.is_absolute():
        return None
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder.name or None
    return here.name or None


def _user_text(item: Any) -> str | None:
    """The user's words in one transcript line, if it is a user's message (Claude Code: ``type``
    user with ``message.content``; Codex: a ``user_message`` event or a user ``message`` item)."""
    if not isinstance(item, dict):
        return None
    inner = item.get("payload")
    payload: dict[str, Any] = inner if isinstance(inner, dict) else item
    message = payload.get("message")
    if payload.get("type") == "user_message" and isinstance(message, str):
        return message
    if isinstance(message, dict) and message.get("role") == "user":
        return _text_of(message.get("content"))
    if payload.get("role") == "user" and payload.get("type") in ("message", None):
        return _text_of(payload.get("content"))
    return None


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        # Text parts only: a tool's result comes back as a "user" message too, and is not a prompt.
        texts = [
            part["text"]
            for part in content
            if isinstance(part, dict)
            and part.get("type") in ("text", "input_text")
            and isinstance(part.get("text"), str)
        ]
        return "\n".join(texts) or None
    return None


def last_prompt(transcript: str | Path) -> str | None:
    """The last prompt a person wrote in this transcript, or None."""
    try:
        with open(transcript, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - TRANSCRIPT_TAIL))
            tail = handle.read()
    except OSError:
        return None
    for line in reversed(tail.splitlines()):
        try:
            text = _user_text(json.loads(line))
        except ValueError:
            continue  # the first line of the tail, cut; or not JSON lines at all
        # Claude Code logs its own notes to the model as user lines in angle brackets.
        if text and text.strip() and not text.lstrip().startswith("<"):
            return " ".join(text.split())
    return None


def given_file(state: Path, tool: str, session: str) -> Path:
    digest = hashlib.sha256(f"{tool}\0{session}".encode()).hexdigest()[:32]
    return state.with_name(state.name + ".context") / f"{digest}.json"


def given(state: Path, tool: str, session: str) -> frozenset[str]:
    """The point ids this session has been given."""
    try:
        ids = json.loads(given_file(state, tool, session).read_text(encoding="utf-8"))["ids"]
    except (OSError, ValueError, KeyError, TypeError):
        return frozenset()
    return frozenset(i for i in ids if isinstance(i, str)) if isinstance(ids, list) else frozenset()


def remember_given(state: Path, tool: str, session: str, ids: Iterable[str], *, fresh: bool) -> None:
    """Add ``ids`` to what this session has been given (``fresh``: a session starting: forget the
    rest). A file that cannot be written only costs a repeat later."""
    target = given_file(state, tool, session)
    try:
        earlier: list[str] = []
        if not fresh:
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
                earlier = [i for i in json.loads(target.read_text(encoding="utf-8"))["ids"] if isinstance(i, str)]
        kept = list(dict.fromkeys([*earlier, *ids]))[-GIVEN_PER_SESSION:]
        target.parent.mkdir(mode=0o700, exist_ok=True)
        temporary = target.with_name(f".{target.name}.{os.getpid()}")
        temporary.write_text(json.dumps({"ids": kept}), encoding="utf-8")
        temporary.replace(target)
        _prune(target.parent)
    except OSError:
        pass


def _prune(folder: Path) -> None:
    files = [p for p in folder.glob("*.json") if p.is_file()]
    if len(files) <= GIVEN_SESSIONS:
        return
    files.sort(key=lambda p: p.stat().st_mtime_ns)
    for old in files[: len(files) - GIVEN_SESSIONS]:
        old.unlink(missing_ok=True)


__all__ = ["given", "given_file", "last_prompt", "project_name", "remember_given"]
