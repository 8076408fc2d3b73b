"""Redaction before egress: the rules on a committed corpus of realistic episodes with planted
secrets of many kinds and look-alikes that must survive; then end to end, a real AgentDB file
synced to the hub and the search index, both read around memsync for the secrets."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from sync.episode import Attribution, Episode, convert
from sync.redaction import Redactor, redact_fields

CORPUS: list[dict[str, Any]] = json.loads(
    (Path(__file__).parents[1] / "data" / "secrets_corpus.json").read_text(encoding="utf-8")
)["episodes"]
FIELDS = ("task", "input", "output", "critique", "tags", "metadata")


@pytest.mark.parametrize("planted", CORPUS, ids=[e["task"] for e in CORPUS])
def test_every_planted_secret_goes_and_every_look_alike_stays(planted: dict[str, Any]) -> None:
    fields = {name: planted.get(name) for name in FIELDS}
    out, counts = redact_fields(Redactor(), fields)
    text = json.dumps(out, ensure_ascii=False)
    assert [s for s in planted["secrets"] if s in text] == []
    assert [s for s in planted["lookalikes"] if s not in text] == []
    assert set(planted["kinds"]) <= set(counts), counts
    for kind in planted["kinds"]:
        assert f"[redacted:{kind}]" in text
    again, more = redact_fields(Redactor(), out)
    assert (again, more) == (out, Counter())  # a marker is never redacted again


def test_the_allow_list_and_the_sites_own_patterns() -> None:
    redactor = Redactor.configured(
        {"acme-key": r"acme_live_[0-9a-f]{24}", "vault-token": r"vault token (\w{12,})"},
        ["AKIAIOSFODNN7EXAMPLE"],  # AWS's documented example key: harmless, keep it readable
    )
    counts: Counter[str] = Counter()
    text = redactor.text(
        "keys AKIAIOSFODNN7EXAMPLE AKIAQYLPMN5HHHFPZAM2 acme_live_0123456789abcdef01234567 vault token hvs0123456789ab",
        counts,
    )
    assert text == (
        "keys AKIAIOSFODNN7EXAMPLE [redacted:aws-access-key] [redacted:acme-key] vault token [redacted:vault-token]"
    )
    assert counts == Counter({"aws-access-key": 1, "acme-key": 1, "vault-token": 1})
    with pytest.raises(ValueError, match=r"privacy.patterns.bad: not a regular expression"):
        Redactor.configured({"bad": "(unclosed"}, [])


def _row(planted: dict[str, Any], local_id: int = 1) -> dict[str, Any]:
    return {
        "id": local_id,
        "ts": 1_763_900_000,
        "created_at": 1_763_900_000,
        "session_id": b"s1",
        "task": planted["task"].encode(),
        "input": (planted.get("input") or "").encode(),
        "output": (planted.get("output") or "").encode(),
        "critique": None if planted.get("critique") is None else planted["critique"].encode(),
        "reward": 0.5,
        "success": 1,
        "latency_ms": 10,
        "tokens_used": 20,
        "tags": json.dumps(planted.get("tags") or []).encode(),
        "metadata": json.dumps(planted.get("metadata") or {}).encode(),
    }


def test_the_redacted_episode_is_what_is_hashed_and_its_identity_stays_the_rows() -> None:
    row = _row(CORPUS[0])
    plain, redacted = convert(row, Attribution()), convert(row, Attribution(), Redactor())
    assert isinstance(plain, Episode)
    assert isinstance(redacted, Episode)
    assert redacted.redacted == 2
    assert plain.redacted == 0
    assert b"AKIAQYLPMN5HHHFPZAM2" in plain.body
    assert b"AKIAQYLPMN5HHHFPZAM2" not in redacted.body
    assert redacted.content_hash != plain.content_hash  # turning redaction on updates the episode once
    assert redacted.identity_hash == plain.identity_hash  # ...in place, not as a conflicting fork
    again = convert(row, Attribution(), Redactor())
    assert isinstance(again, Episode)
    assert again.content_hash == redacted.content_hash  # and it is not pushed again on every pass


def as_stored(planted: dict[str, Any]) -> dict[str, Any]:
    """A corpus episode as an agent stores it (ReflexionMemory.storeEpisode's fields)."""
    return {
        "sessionId": "s1",
        "task": planted["task"],
        "input": planted.get("input") or "",
        "output": planted.get("output") or "",
        "critique": planted.get("critique") or "",
        "reward": 0.5,
        "success": True,
        "latencyMs": 10,
        "tokensUsed": 20,
        "tags": planted.get("tags") or [],
        "metadata": planted.get("metadata") or {},
    }
