"""From a raw AgentDB row to the episode the backbone stores: pure, no I/O.

A row either becomes an ``Episode`` (camelCase fields, as the Convex tables will have them) or a
``Rejected`` with a reason that names the problem. Problems that leave the meaning intact are
repaired and recorded instead of rejected, so that one malformed JSON column does not hold back an
agent's whole episode: the original text is kept under ``metadata._memsync.raw``.

Two hashes travel with each episode:
- ``content_hash`` covers every field: a change means the episode must be pushed again.
- ``identity_hash`` covers what a genuine edit never changes (session, task, creation time, input).
  Same id, same identity, new content: an edit. Same id, different identity: a different episode
  written over a reused id (racing sql.js writers do this), which must not overwrite the first.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import orjson

from sync.episode import Attribution, Episode, Rejected, canonical_json, parse_json, sha256_hex
from sync.source.redaction import Redactor, redact_fields

# Columns every AgentDB episodes table has (agentdb 1.3.9, 1.6.1, 3.0.0-alpha).
BASE_COLUMNS = (
    "id",
    "ts",
    "session_id",
    "task",
    "input",
    "output",
    "critique",
    "reward",
    "success",
    "latency_ms",
    "tokens_used",
    "tags",
    "metadata",
    "created_at",
)
# Columns some sites added by hand; the same facts may instead live in ``metadata``.
ATTRIBUTION_COLUMNS = (
    "agent_name",
    "agent_platform",
    "agent_interface",
    "parent_agent",
    "llm_provider",
    "llm_model",
)
TEXT_COLUMNS = ("session_id", "task", "input", "output", "critique")

# Seconds before 5138 AD; anything larger is already milliseconds.
_MS_THRESHOLD = 100_000_000_000


def camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(part.title() for part in rest)


# (AgentDB column, camelCase field) for each attribution column, computed once.
_ATTRIBUTION_KEYS = tuple((column, camel(column)) for column in ATTRIBUTION_COLUMNS)


class _Reject(Exception):
    pass


def raw_row_hash(row: Mapping[str, object]) -> str:
    """A hash of the row as stored, so a quarantined row that gets fixed is noticed."""
    return sha256_hex(canonical_json(json_safe(row)))


def json_safe(row: Mapping[str, object]) -> dict[str, Any]:
    """The row with undecodable bytes shown as escapes: for quarantine listings, never for sync."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, bytes):
            out[key] = value.decode("utf-8", errors="backslashreplace")
        elif isinstance(value, float) and not math.isfinite(value):
            out[key] = repr(value)
        else:
            out[key] = value
    return out


def _text(row: Mapping[str, object], column: str) -> str | None:
    value = row.get(column)
    if value.__class__ is bytes:
        try:
            return value.decode()
        except UnicodeDecodeError as exc:
            bad = value[exc.start]
            raise _Reject(f"column {column!r} is not valid UTF-8 (byte 0x{bad:02x} at offset {exc.start})") from None
    return None if value is None else str(value)


def _epoch_ms(value: object, column: str) -> int:
    if isinstance(value, bytes):
        text = value.decode("utf-8", errors="replace").strip()
        try:
            value = float(text)
        except ValueError:
            raise _Reject(f"column {column!r} is not a Unix time: {text[:40]!r}") from None
    if value is None:
        raise _Reject(f"column {column!r} is NULL but an episode needs it")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _Reject(f"column {column!r} is not a Unix time: {value!r}")
    if value >= _MS_THRESHOLD:
        return int(value)
    return round(value * 1000)


def _number(value: object, name: str, issues: list[str], *, integer: bool) -> float | int | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        text = value.decode("utf-8", errors="replace").strip()
        try:
            value = float(text)
        except ValueError:
            issues.append(f"{name} is not a number: {text[:40]!r}")
            return None
    if isinstance(value, bool):
        value = int(value)
    if not isinstance(value, int | float) or not math.isfinite(value):
        issues.append(f"{name} is not a finite number: {value!r}")
        return None
    if integer:
        if float(value) != int(value):
            issues.append(f"{name} is not a whole number: {value!r}")
        return int(value)
    return float(value)


def _success(value: object, issues: list[str]) -> bool:
    if value is None:
        return False
    if isinstance(value, int | float):
        return bool(value)
    text = value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)
    word = text.strip().lower()
    if word in {"1", "true", "yes", "t", "y"}:
        return True
    if word not in {"0", "false", "no", "f", "n", ""}:
        issues.append(f"success is not a boolean: {text[:40]!r}")
    return False


def _problem(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at char {exc.pos}"
    return str(exc)


def _tags(raw: str | None, issues: list[str], kept: dict[str, str]) -> list[str]:
    if raw is None or raw.strip() == "":
        return []
    try:
        parsed = parse_json(raw)
    except ValueError:
        issues.append("tags is not a JSON array; split on commas")
        kept["tags"] = raw
        return [part.strip() for part in raw.split(",") if part.strip()]
    if isinstance(parsed, list):
        return [item if isinstance(item, str) else canonical_json(item).decode() for item in parsed if item is not None]
    issues.append("tags is JSON but not an array")
    kept["tags"] = raw
    return [parsed if isinstance(parsed, str) else canonical_json(parsed).decode()]


def _metadata(row: Mapping[str, object], issues: list[str], kept: dict[str, str]) -> dict[str, Any]:
    value = row.get("metadata")
    if value is None:
        return {}
    if isinstance(value, int | float):
        # The column is declared JSON, which SQLite treats as NUMERIC: a bare number arrives as one.
        issues.append("metadata is a bare number, not a JSON object")
        return {"value": value if math.isfinite(value) else None}
    text = _text(row, "metadata") or ""
    if text.strip() == "":
        return {}
    try:
        parsed = parse_json(text)
    except ValueError as exc:
        issues.append(f"metadata is not valid JSON ({_problem(exc)}); kept as text")
        kept["metadata"] = text
        return {}
    if isinstance(parsed, dict):
        return parsed
    issues.append("metadata is JSON but not an object")
    return {"value": parsed}


def _attribution(
    row: Mapping[str, object], column: str, key: str, metadata: Mapping[str, Any], defaults: Attribution
) -> str | None:
    if row.get(column):
        return _text(row, column)
    from_meta = metadata.get(column) or metadata.get(key)
    if isinstance(from_meta, str) and from_meta:
        return from_meta
    return getattr(defaults, column)  # type: ignore[no-any-return]


def convert(row: Mapping[str, object], defaults: Attribution, redactor: Redactor | None = None) -> Episode | Rejected:
    """Turn one raw AgentDB row (TEXT columns may arrive as bytes) into an Episode or a Rejected;
    with ``redactor``, its secrets are replaced by markers before it is hashed (the redacted episode
    is what is stored, hashed and compared, so it is not pushed again on every pass)."""
    local_id = row.get("id")
    if not isinstance(local_id, int):
        raise TypeError(f"row has no integer id: {local_id!r}")
    try:
        return _convert(local_id, row, defaults, redactor)
    except _Reject as problem:
        return Rejected(local_id, str(problem), raw_row_hash(row), json_safe(row))
    except Exception as exc:  # noqa: BLE001 - a row no rule foresaw must not stop the rows after it
        reason = f"could not convert the row ({type(exc).__name__}: {exc})"
        return Rejected(local_id, reason, raw_row_hash(row), json_safe(row))


def _probe(fields: Mapping[str, Any]) -> str:
    """The text redaction looks at, in one string: the text fields, tags and metadata (keys too)."""
    parts = [fields.get(name) for name in ("task", "input", "output", "critique")]
    tags_and_metadata = orjson.dumps([fields.get("tags"), fields.get("metadata")], default=str).decode()
    return "\n".join([*(p for p in parts if isinstance(p, str)), tags_and_metadata])


def _convert(local_id: int, row: Mapping[str, object], defaults: Attribution, redactor: Redactor | None) -> Episode:
    issues: list[str] = []
    kept: dict[str, str] = {}
    texts = {column: _text(row, column) for column in TEXT_COLUMNS}
    session_id, task = texts["session_id"], texts["task"]
    for column, value in (("session_id", session_id), ("task", task)):
        # Blank is as good as missing: nothing to group the episode by, or to say what it was.
        if value is None or not value.strip():
            state = "NULL" if value is None else "empty"
            raise _Reject(f"column {column!r} is {state} but an episode needs it")
    # Some schemas (agentdb 1.3.9's MCP init) have no created_at; a row then dates from its ts.
    ts_raw, created_raw = row.get("ts"), row.get("created_at")
    created_at = _epoch_ms(created_raw if created_raw is not None else ts_raw, "created_at")
    ts = _epoch_ms(ts_raw if ts_raw is not None else created_raw, "ts")
    tags_text = _text(row, "tags")
    metadata = _metadata(row, issues, kept)
    fields: dict[str, Any] = {
        "sessionId": session_id,
        "task": task,
        "input": texts["input"],
        "output": texts["output"],
        "critique": texts["critique"],
        "reward": _number(row.get("reward"), "reward", issues, integer=False),
        "success": _success(row.get("success"), issues),
        "latencyMs": _number(row.get("latency_ms"), "latency_ms", issues, integer=True),
        "tokensUsed": _number(row.get("tokens_used"), "tokens_used", issues, integer=True),
        "tags": _tags(tags_text, issues, kept),
        "metadata": metadata,
        "ts": ts,
        "createdAt": created_at,
    }
    for column, key in _ATTRIBUTION_KEYS:
        fields[key] = _attribution(row, column, key, metadata, defaults)
    if issues:
        # Repaired, not rejected: say what was wrong and keep the original text beside it.
        note: dict[str, Any] = {"issues": issues}
        if kept:
            note["raw"] = kept
        fields["metadata"] = {**metadata, "_memsync": note}
    found = 0
    # One look at all of the episode's text says whether any field could hold a secret; most hold none.
    if redactor is not None and redactor.may_hold_secrets(_probe(fields)):
        fields, counts = redact_fields(redactor, fields)
        found = sum(counts.values())
    body = canonical_json(fields)
    # The identity stays the raw row's (a one-way hash): turning redaction on updates an episode in
    # place instead of forking it into a conflict.
    identity = canonical_json([session_id, task, created_at, texts["input"]])
    return Episode(local_id, fields, sha256_hex(identity), sha256_hex(body), body, tuple(issues), found)
