"""Tier: unit. The tools' output schemas written flat (``daemon.mcp.schema``) accept and refuse
exactly what pydantic's own schemas do, for every published model and a table of changed results."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel

from daemon.mcp import models
from daemon.mcp.schema import flat_schema

PUBLISHED = [models.Memories, models.Episode, models.Related, models.Saved, models.Health, models.Approval]

MEMORY = {
    "pointId": "0b6a4c1e-0000-4000-8000-000000000001",
    "sourceSite": "laptop",
    "sourceId": "17",
    "score": 0.8,
    "similarity": 0.61,
    "ts": 1_700_000_000_000,
    "when": "3 days ago",
    "agentName": "coder",
    "sessionId": "s1",
    "task": "fix the build",
    "tags": ["ci"],
    "reward": 1.0,
    "success": True,
    "text": "exit code 137 during npm ci: raise the memory limit",
    "duplicates": 0,
    "archived": False,
    "approvalStatus": None,
    "memoryType": "error_fix",
    "passage": {"index": 1, "count": 3, "start": 10, "end": 90, "text": "raise the memory limit"},
    "dream": None,
    "relevance": 0.9,
    "why": {
        "ranker": "learned",
        "score": 0.7,
        "exact": ["137"],
        "lookalike": [],
        "terms": 3,
        "of": 4,
        "words": ["npm"],
        "meaning": 0.6,
        "lead": None,
        "meaningRank": 1,
        "keywordRank": None,
        "inWindow": False,
        "sessionOf": None,
    },
}


def variants(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Each place in ``value`` replaced by null, by a value of another type, and (in an object) a
    key added or taken away: what a validator must tell apart."""
    replacements: tuple[Any, ...] = (None, "text", 3, 2.5, True, [], {})
    for replacement in replacements:
        yield path, replacement
    if isinstance(value, dict):
        yield (*path, "__add__"), "unexpected"
        for key, inner in value.items():
            yield (*path, "__drop__", key), None
            yield from variants(inner, (*path, key))
    if isinstance(value, list) and value:
        yield from variants(value[0], (*path, 0))


def changed(document: Any, path: tuple[Any, ...], replacement: Any) -> Any:
    out = copy.deepcopy(document)
    if not path:
        return replacement
    *parents, last = path
    target = out
    if parents and parents[-1] == "__drop__":
        *parents, _ = parents
        for step in parents:
            target = target[step]
        del target[last]
        return out
    for step in parents:
        target = target[step]
    if last == "__add__":
        target["extraField"] = replacement
    else:
        target[last] = replacement
    return out


def verdict(schema: dict[str, Any], document: Any) -> bool:
    valid: bool = jsonschema.validators.validator_for(schema)(schema).is_valid(document)
    return valid


@pytest.mark.parametrize("model", PUBLISHED, ids=lambda m: m.__name__)
def test_the_flat_schema_has_no_alternatives_or_references_left_to_descend(model: type[BaseModel]) -> None:
    flat = json.dumps(flat_schema(model.model_json_schema()))
    assert '"$ref"' not in flat
    assert '"$defs"' not in flat
    assert '{"type": "null"}' not in flat


def test_the_flat_schema_accepts_and_refuses_what_the_original_does() -> None:
    original = models.Memories.model_json_schema()
    flat = flat_schema(original)
    document = {"results": [MEMORY], "notFound": [], "source": "daemon", "behind": None}
    document = {k: v for k, v in document.items() if k in original["properties"]}
    assert verdict(original, document), "the table's result is one the model writes"
    checked = accepted = 0
    for path, replacement in variants(document):
        candidate = changed(document, path, replacement)
        expected = verdict(original, candidate)
        assert verdict(flat, candidate) is expected, f"{path} = {replacement!r}"
        checked += 1
        accepted += expected
    assert checked > 300
    assert 0 < accepted < checked, "the table holds results both accepted and refused"


def test_an_optional_enum_keeps_null_and_only_its_values() -> None:
    schema = {"properties": {"dream": {"anyOf": [{"enum": ["merged", "superseded"], "type": "string"}, NULL_SCHEMA]}}}
    flat = flat_schema(schema)
    assert flat["properties"]["dream"]["type"] == ["string", "null"]
    for value, ok in (("merged", True), (None, True), ("other", False), (3, False)):
        assert verdict(flat, {"dream": value}) is ok is verdict(schema, {"dream": value})


NULL_SCHEMA = {"type": "null"}


def test_a_reference_outside_defs_is_refused() -> None:
    with pytest.raises(ValueError, match="only references into"):
        flat_schema({"properties": {"x": {"$ref": "https://example.invalid/s.json"}}})
