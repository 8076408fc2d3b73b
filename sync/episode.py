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

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

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

# The episode fields the backbone stores and ``export`` prints, in this order.
EXPORT_FIELDS = (
    "sourceSite",
    "sourceId",
    "sessionId",
    "task",
    "input",
    "output",
    "critique",
    "reward",
    "success",
    "latencyMs",
    "tokensUsed",
    "tags",
    "metadata",
    "ts",
    "createdAt",
    "agentName",
    "agentPlatform",
    "agentInterface",
    "parentAgent",
    "llmProvider",
    "llmModel",
    "contentHash",
    "syncedAt",
)
# Seconds before 5138 AD; anything larger is already milliseconds.
_MS_THRESHOLD = 100_000_000_000


def camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(part.title() for part in rest)


@dataclass(frozen=True, slots=True)
class Attribution:
    """The site's defaults for who wrote an episode, used when neither column nor metadata says."""

    agent_name: str | None = None
    agent_platform: str | None = None
    agent_interface: str | None = None
    parent_agent: str | None = None
    llm_provider: str | None = None
    llm_model: str | None = None

    def get(self, column: str) -> str | None:
        value: str | None = getattr(self, column)
        return value


@dataclass(frozen=True, slots=True)
class Episode:
    local_id: int
    fields: dict[str, Any]
    identity_hash: str
    content_hash: str
    size: int
    issues: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Rejected:
    local_id: int
    reason: str
    content_hash: str
    raw: dict[str, Any] = field(default_factory=dict)


class _Reject(Exception):
    pass


def canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


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
    if value is None:
        return None
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad = value[exc.start]
            raise _Reject(f"column {column!r} is not valid UTF-8 (byte 0x{bad:02x} at offset {exc.start})") from None
    return str(value)


def _required_text(row: Mapping[str, object], column: str) -> str:
    value = _text(row, column)
    if value is None:
        raise _Reject(f"column {column!r} is NULL but an episode needs it")
    return value


def _epoch_ms(row: Mapping[str, object], column: str) -> int:
    value = row.get(column)
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


def _tags(raw: str | None, issues: list[str], kept: dict[str, str]) -> list[str]:
    if raw is None or raw.strip() == "":
        return []
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError:
        issues.append("tags is not a JSON array; split on commas")
        kept["tags"] = raw
        return [part.strip() for part in raw.split(",") if part.strip()]
    if isinstance(parsed, list):
        return [item if isinstance(item, str) else json.dumps(item) for item in parsed if item is not None]
    issues.append("tags is JSON but not an array")
    kept["tags"] = raw
    return [parsed if isinstance(parsed, str) else json.dumps(parsed)]


def _metadata(value: object, issues: list[str], kept: dict[str, str]) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, int | float):
        # The column is declared JSON, which SQLite treats as NUMERIC: a bare number arrives as one.
        issues.append("metadata is a bare number, not a JSON object")
        return {"value": value}
    text = value.decode("utf-8") if isinstance(value, bytes) else str(value)
    if text.strip() == "":
        return {}
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        issues.append(f"metadata is not valid JSON ({exc.msg} at char {exc.pos}); kept as text")
        kept["metadata"] = text
        return {}
    if isinstance(parsed, dict):
        return parsed
    issues.append("metadata is JSON but not an object")
    return {"value": parsed}


def _attribution(
    row: Mapping[str, object], column: str, metadata: Mapping[str, Any], defaults: Attribution
) -> str | None:
    from_column = _text(row, column)
    if from_column:
        return from_column
    for key in (column, camel(column)):
        from_meta = metadata.get(key)
        if isinstance(from_meta, str) and from_meta:
            return from_meta
    return defaults.get(column)


def convert(row: Mapping[str, object], defaults: Attribution) -> Episode | Rejected:
    """Turn one raw AgentDB row (TEXT columns may arrive as bytes) into an Episode or a Rejected."""
    local_id = row.get("id")
    if not isinstance(local_id, int):
        raise TypeError(f"row has no integer id: {local_id!r}")
    try:
        return _convert(local_id, row, defaults)
    except _Reject as problem:
        return Rejected(local_id, str(problem), raw_row_hash(row), json_safe(row))


def _convert(local_id: int, row: Mapping[str, object], defaults: Attribution) -> Episode:
    issues: list[str] = []
    kept: dict[str, str] = {}
    texts = {column: _text(row, column) for column in TEXT_COLUMNS}
    session_id = _required_text(row, "session_id")
    task = _required_text(row, "task")
    # Some schemas (agentdb 1.3.9's MCP init) have no created_at; a row then dates from its ts.
    timing = dict(row)
    if timing.get("created_at") is None:
        timing["created_at"] = timing.get("ts")
    if timing.get("ts") is None:
        timing["ts"] = timing.get("created_at")
    created_at = _epoch_ms(timing, "created_at")
    ts = _epoch_ms(timing, "ts")
    tags_text = _text(row, "tags")
    metadata = _metadata(row.get("metadata"), issues, kept)
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
    for column in ATTRIBUTION_COLUMNS:
        fields[camel(column)] = _attribution(row, column, metadata, defaults)
    if issues:
        # Repaired, not rejected: say what was wrong and keep the original text beside it.
        note: dict[str, Any] = {"issues": issues}
        if kept:
            note["raw"] = kept
        fields["metadata"] = {**metadata, "_memsync": note}
    body = canonical_json(fields)
    identity = canonical_json([session_id, task, created_at, texts["input"]])
    return Episode(local_id, fields, sha256_hex(identity), sha256_hex(body), len(body), tuple(issues))
