"""Tier: unit.

Whether a source may feed a site (``sync.source.decide``), from a table: one site name, one AgentDB
file on one machine."""

from __future__ import annotations

import pytest

from sync.backbone.base import SourceRecord
from sync.source import SourceIdentity, Verdict, decide, refusal

OURS = SourceRecord("inst-a", "machine-1", "laptop", "/home/me/agent/agentdb.db")


@pytest.mark.parametrize(
    ("recorded", "take_over", "verdict"),
    [
        pytest.param(None, False, Verdict.CLAIM, id="nothing recorded"),
        pytest.param(OURS, False, Verdict.OURS, id="this instance, this file"),
        pytest.param(
            SourceRecord("inst-b", "machine-1", "laptop", OURS.agentdb_path), False, Verdict.CLAIM, id="reset sidecar"
        ),
        pytest.param(
            SourceRecord("inst-a", "machine-1", "laptop", "/home/me/other.db"),
            False,
            Verdict.REFUSE,
            id="this instance, another file",
        ),
        pytest.param(
            SourceRecord("inst-a", "machine-1", "laptop", "/home/me/other.db"),
            True,
            Verdict.CLAIM,
            id="another file, taken over",
        ),
        pytest.param(
            SourceRecord("inst-b", "machine-1", "laptop", "/home/me/other.db"),
            False,
            Verdict.REFUSE,
            id="another data dir, another file",
        ),
        pytest.param(
            SourceRecord("inst-b", "machine-2", "vm", OURS.agentdb_path), False, Verdict.REFUSE, id="another machine"
        ),
        pytest.param(
            SourceRecord("inst-b", "machine-2", "vm", OURS.agentdb_path),
            True,
            Verdict.CLAIM,
            id="another machine, taken over",
        ),
    ],
)
def test_decide(recorded: SourceRecord | None, take_over: bool, verdict: Verdict) -> None:
    assert decide(recorded, OURS, take_over=take_over) is verdict


def test_a_second_file_on_this_machine_is_refused_naming_both_files() -> None:
    recorded = SourceRecord("inst-a", "machine-1", "laptop", "/home/me/first.db")
    ours = SourceIdentity("inst-a", "machine-1", "laptop", "/home/me/second.db")
    why = refusal(recorded, ours, "laptop")
    assert why is not None
    assert "/home/me/first.db" in why
    assert "/home/me/second.db" in why
    assert "site.name" in why
    assert "--take-over" in why
    assert refusal(recorded, SourceIdentity("inst-a", "machine-1", "laptop", "/home/me/first.db"), "laptop") is None
