"""Tier: e2e (the CLI in child processes, a real AgentDB file and hub). ``memsync retag``: a saved
memory's type and tags corrected in the journal reach the hub as an edit of the same key on the
next pass; what cannot be corrected (an agent's episode, a memory not in the journal, a correction
of nothing) is one sentence with its exit code, never a traceback."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import hub_episodes, memsync


def test_a_correction_reaches_the_hub_and_what_cannot_be_one_is_said(
    site_files: Callable[..., Any], make_agentdb: Callable[..., Path]
) -> None:
    site = site_files("laptop", agentdb=make_agentdb(3, seed=1, name="laptop.db"))
    config = ("--config", str(site.config))
    saved = memsync(
        "remember",
        "the okapi cron runs at 02:00 UTC",
        "--type",
        "warning",
        "--tag",
        "ops",
        "--project",
        "okapi",
        "--json",
        *config,
    )
    assert saved.returncode == 0, saved.stderr
    assert memsync("sync", *config).returncode == 0

    def held() -> dict[str, Any]:
        (memory,) = [e for e in hub_episodes(site.hub) if e["sourceId"] == "m1"]
        return memory

    before = held()
    assert (before["metadata"]["memory_type"], before["tags"]) == ("warning", ["ops", "project:okapi"])

    done = memsync("retag", "m1", "--type", "decision", "--tag", "billing", "--by", "ana", "--json", *config)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["changed"] is True
    assert answer["was"] == {"memoryType": "warning", "tags": ["ops", "project:okapi"]}
    synced = memsync("sync", *config)
    assert synced.returncode == 0, synced.stderr
    after = held()
    assert after["metadata"]["memory_type"] == "decision"
    assert after["tags"] == ["billing", "project:okapi"]
    assert after["metadata"]["corrections"][0]["by"] == "ana"
    assert after["task"] == before["task"]
    assert len([e for e in hub_episodes(site.hub) if e["task"] == before["task"]]) == 1  # an edit, not a copy

    for argv, code, said in (
        (("laptop:1", "--type", "decision"), 2, "an agent's own episode"),
        (("laptop:m9", "--type", "decision"), 64, "not in this site's journal"),
        (("vm:m1", "--tag", "x"), 2, "was saved on vm"),
        (("m1",), 2, "nothing to correct"),
        (("m1", "--type", "bugfix"), 2, "invalid choice"),
    ):
        refused = memsync("retag", *argv, *config)
        assert refused.returncode == code, (argv, refused.stderr)
        assert said in refused.stderr, (argv, refused.stderr)
        assert "Traceback" not in refused.stderr
