"""From a raw AgentDB row to an episode: a table of cases, no I/O."""

from __future__ import annotations

from typing import Any

import pytest

from sync.episode import Attribution, Episode, Rejected, convert

BASE: dict[str, Any] = {
    "id": 7,
    "ts": 1735689600,
    "session_id": b"s-1",
    "task": b"fix_login_bug",
    "input": b"in",
    "output": b"out",
    "critique": b"ok",
    "reward": 0.5,
    "success": 1,
    "latency_ms": 120,
    "tokens_used": 900,
    "tags": b'["a","b"]',
    "metadata": b'{"agent_name":"coder","llm_model":"m1"}',
    "created_at": 1735689601,
    "agent_name": None,
    "agent_platform": None,
    "agent_interface": None,
    "parent_agent": None,
    "llm_provider": None,
    "llm_model": None,
}


def row(**changes: Any) -> dict[str, Any]:
    return {**BASE, **changes}


def ok(result: Episode | Rejected) -> Episode:
    assert isinstance(result, Episode), getattr(result, "reason", result)
    return result


def test_a_plain_row_becomes_camel_case_fields_with_ms_times() -> None:
    ep = ok(convert(row(), Attribution()))
    assert ep.local_id == 7
    assert ep.fields == {
        "sessionId": "s-1",
        "task": "fix_login_bug",
        "input": "in",
        "output": "out",
        "critique": "ok",
        "reward": 0.5,
        "success": True,
        "latencyMs": 120,
        "tokensUsed": 900,
        "tags": ["a", "b"],
        "metadata": {"agent_name": "coder", "llm_model": "m1"},
        "ts": 1735689600000,
        "createdAt": 1735689601000,
        "agentName": "coder",
        "agentPlatform": None,
        "agentInterface": None,
        "parentAgent": None,
        "llmProvider": None,
        "llmModel": "m1",
    }
    assert ep.issues == ()


@pytest.mark.parametrize(
    ("column", "meta", "default", "expected"),
    [
        pytest.param(b"from-column", b'{"agent_name":"from-meta"}', "from-config", "from-column", id="column wins"),
        pytest.param(None, b'{"agent_name":"from-meta"}', "from-config", "from-meta", id="then snake metadata"),
        pytest.param(None, b'{"agentName":"camel"}', "from-config", "camel", id="then camel metadata"),
        pytest.param(b"", b'{"other":1}', "from-config", "from-config", id="empty column -> config default"),
        pytest.param(None, None, None, None, id="nothing anywhere"),
        pytest.param(None, b'{"agent_name":42}', "from-config", "from-config", id="non-string metadata ignored"),
    ],
)
def test_attribution_comes_from_column_then_metadata_then_config(
    column: bytes | None, meta: bytes | None, default: str | None, expected: str | None
) -> None:
    ep = ok(convert(row(agent_name=column, metadata=meta), Attribution(agent_name=default)))
    assert ep.fields["agentName"] == expected


@pytest.mark.parametrize(
    ("changes", "field", "value", "issue"),
    [
        pytest.param({"metadata": b"{not json"}, "metadata", None, "metadata is not valid JSON", id="bad metadata"),
        pytest.param({"metadata": b"[1,2]"}, "metadata", {"value": [1, 2]}, "not an object", id="array metadata"),
        pytest.param({"metadata": 17}, "metadata", {"value": 17}, "bare number", id="numeric metadata"),
        pytest.param({"metadata": b'{"score": NaN}'}, "metadata", None, "metadata is not valid JSON", id="NaN"),
        pytest.param({"metadata": b'{"x": Infinity}'}, "metadata", None, "Infinity is not JSON", id="Infinity"),
        pytest.param({"tags": b"a, b"}, "tags", ["a", "b"], "not a JSON array", id="comma tags"),
        pytest.param({"tags": b'"solo"'}, "tags", ["solo"], "not an array", id="string tags"),
        pytest.param({"reward": float("nan")}, "reward", None, "not a finite number", id="nan reward"),
        pytest.param({"reward": b"high"}, "reward", None, "not a number", id="text reward"),
        pytest.param({"success": b"maybe"}, "success", False, "not a boolean", id="odd success"),
        pytest.param({"latency_ms": 1.5}, "latencyMs", 1, "not a whole number", id="fractional latency"),
    ],
)
def test_repairable_problems_deliver_the_episode_and_say_what_was_wrong(
    changes: dict[str, Any], field: str, value: Any, issue: str
) -> None:
    ep = ok(convert(row(**changes), Attribution()))
    if value is not None:
        got = ep.fields[field]
        if isinstance(got, dict):
            got = {k: v for k, v in got.items() if k != "_memsync"}
        assert got == value
    assert any(issue in text for text in ep.issues), ep.issues
    assert any(issue in text for text in ep.fields["metadata"]["_memsync"]["issues"])


def test_integers_beyond_64_bits_are_still_json() -> None:
    ep = ok(convert(row(metadata=b'{"big": 1180591620717411303424}', tags=b"[1180591620717411303424]"), Attribution()))
    assert ep.fields["metadata"] == {"big": 2**70}
    assert ep.fields["tags"] == ["1180591620717411303424"]
    assert ep.issues == ()


def test_invalid_utf8_in_metadata_names_the_column() -> None:
    result = convert(row(metadata=b'{"a": "\xff"}'), Attribution())
    assert isinstance(result, Rejected)
    assert "column 'metadata' is not valid UTF-8" in result.reason


def test_malformed_metadata_keeps_the_original_text() -> None:
    ep = ok(convert(row(metadata=b'{"agent_name": "x",'), Attribution()))
    assert ep.fields["metadata"]["_memsync"]["raw"] == {"metadata": '{"agent_name": "x",'}


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        pytest.param(
            {"output": b"ok \xc3\xff bad"},
            "column 'output' is not valid UTF-8 (byte 0xc3 at offset 3)",
            id="invalid utf-8",
        ),
        pytest.param({"session_id": None}, "column 'session_id' is NULL", id="no session"),
        pytest.param({"task": None}, "column 'task' is NULL", id="no task"),
        pytest.param({"session_id": b"", "task": b""}, "column 'session_id' is empty", id="empty session and task"),
        pytest.param({"task": b" \n"}, "column 'task' is empty", id="blank task"),
        pytest.param({"ts": None, "created_at": None}, "column 'created_at' is NULL", id="no time at all"),
        pytest.param({"created_at": b"yesterday", "ts": None}, "not a Unix time", id="text time"),
    ],
)
def test_rows_that_cannot_become_episodes_are_rejected_with_a_reason(changes: dict[str, Any], reason: str) -> None:
    result = convert(row(**changes), Attribution())
    assert isinstance(result, Rejected)
    assert reason in result.reason
    assert result.local_id == 7
    # The raw row is kept for `quarantine list`, undecodable bytes shown as escapes.
    assert result.raw["id"] == 7


def test_nulls_in_every_nullable_column_still_deliver() -> None:
    nullable = ("input", "output", "critique", "reward", "success", "latency_ms", "tokens_used", "tags", "metadata")
    ep = ok(convert(row(**dict.fromkeys(nullable)), Attribution()))
    assert ep.fields["input"] is None
    assert ep.fields["output"] is None
    assert ep.fields["critique"] is None
    assert ep.fields["reward"] is None
    assert ep.fields["success"] is False
    assert ep.fields["latencyMs"] is None
    assert ep.fields["tokensUsed"] is None
    assert ep.fields["tags"] == []
    assert ep.fields["metadata"] == {}
    assert ep.issues == ()


@pytest.mark.parametrize(
    ("ts", "created", "want_ts", "want_created"),
    [
        pytest.param(1735689600, 1735689601, 1735689600000, 1735689601000, id="seconds"),
        pytest.param(1735689600123, 1735689600123, 1735689600123, 1735689600123, id="already ms"),
        pytest.param(1735689600, None, 1735689600000, 1735689600000, id="no created_at (agentdb 1.3.9 MCP)"),
        pytest.param(None, 1735689601, 1735689601000, 1735689601000, id="no ts"),
        pytest.param(b"1735689600", 1735689600, 1735689600000, 1735689600000, id="text seconds"),
    ],
)
def test_times_become_milliseconds(ts: Any, created: Any, want_ts: int, want_created: int) -> None:
    ep = ok(convert(row(ts=ts, created_at=created), Attribution()))
    assert (ep.fields["ts"], ep.fields["createdAt"]) == (want_ts, want_created)


@pytest.mark.parametrize(
    ("changes", "same_identity", "same_content"),
    [
        pytest.param({}, True, True, id="identical"),
        pytest.param({"reward": 0.9, "critique": b"better"}, True, False, id="an edit"),
        pytest.param({"output": b"new output"}, True, False, id="output rewritten"),
        pytest.param({"input": b"another input"}, False, False, id="another episode"),
        pytest.param({"task": b"other", "created_at": 1735689999}, False, False, id="another task"),
        pytest.param({"session_id": b"s-2"}, False, False, id="another session"),
    ],
)
def test_identity_separates_edits_from_other_episodes(
    changes: dict[str, Any], same_identity: bool, same_content: bool
) -> None:
    before = ok(convert(row(), Attribution()))
    after = ok(convert(row(**changes), Attribution()))
    assert (before.identity_hash == after.identity_hash) is same_identity
    assert (before.content_hash == after.content_hash) is same_content


def test_size_is_the_canonical_json_length() -> None:
    big = ok(convert(row(output=b"x" * 2 * 1024 * 1024), Attribution()))
    assert big.size > 2 * 1024 * 1024
    assert ok(convert(row(), Attribution())).size < 1000
