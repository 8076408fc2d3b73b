"""The episode every room shares: what a source makes of one of its rows (an ``Episode``, or a
``Rejected`` with its reason), the site's defaults for who wrote it (``Attribution``), the fields
the backbone stores and ``export`` prints, and the one canonical JSON its hashes are taken over.
Pure, no I/O; from an AgentDB row to an episode is ``sync.source.agentdb.rows``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import orjson

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
    body: bytes  # the fields as canonical JSON: what content_hash covers, and what the hub stores
    issues: tuple[str, ...] = ()
    redacted: int = 0  # secrets replaced by markers before hashing (sync/source/redaction.py)

    @property
    def size(self) -> int:
        return len(self.body)


@dataclass(frozen=True, slots=True)
class Rejected:
    local_id: int
    reason: str
    content_hash: str
    raw: dict[str, Any] = field(default_factory=dict)


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no spaces, UTF-8: the same value always gives the same bytes (and hash)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # integers beyond 64 bits, which orjson refuses and JSON allows
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json(text: str) -> Any:
    """Strict JSON: NaN and Infinity, which Python's parser lets through by default, are refused.

    Not orjson: it reads integers beyond 64 bits as floats, silently losing digits."""
    return _STRICT_JSON.decode(text)


# One decoder: json.loads(text, parse_constant=...) would build a new one for every call.
_STRICT_JSON = json.JSONDecoder(parse_constant=_refuse_constant)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
