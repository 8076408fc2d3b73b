"""Tier: e2e. The search's judgement as a user meets it through the CLI and a running daemon: only
what shares something with the query, the rest cut and counted (``--all`` shows it), an exact
identifier said as such, an absent one said absent even when its look-alike ranks first, and why
each hit ranked in place of a raw score (issue 29's own examples).

Real parts: the agentdb package writes the episodes, the daemon runs as a process, the local model
embeds, qdrant-edge stores."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import AgentProcess, SiteFiles, episode, memsync, wait_for, wait_started

Daemons = Callable[..., subprocess.Popen[bytes]]

E11000_FIX = "MongoDB insert failed with E11000 duplicate key error on users.email"
E11000_TRY = "Tried rebuilding the users.email unique index to stop E11000"
FLAG_B = "Feature flag ZQX_7781_B gates the new EU tax calculation"
OTHERS = (
    "Rotated the Stripe API key after the leak scare",
    "Patched xz after CVE-2024-3094 on every runner image",
    "Nightly deploy failed: the docker cache expired",
    "Web build killed with exit code 137 during npm ci",
    "Renamed the orders CSV export command in shopctl",
    "Reviewed the websocket reconnect backoff pull request",
)


def search(site: SiteFiles, *args: str) -> dict[str, Any]:
    done = memsync("search", *args, "--json", "--config", str(site.config))
    assert done.returncode == 0, done.stderr
    reply: dict[str, Any] = json.loads(done.stdout)
    return reply


def test_search_says_what_it_found_exactly_what_is_absent_and_cuts_what_shares_nothing(
    site_files: Callable[..., SiteFiles],
    short_dir: Path,
    tmp_path: Path,
    agents: Callable[[Path], AgentProcess],
    daemons: Daemons,
) -> None:
    site = site_files(warm=f'path = "{tmp_path / "warm"}"\nsocket = "{short_dir / "laptop.sock"}"\n')
    agent = agents(site.agentdb)
    agent.store(
        episode(
            1,
            task=E11000_FIX,
            output="made the signup idempotent with findOneAndUpdate and upsert",
            success=True,
            reward=0.9,
            tags=["mongodb", "fix"],
        )
    )
    agent.store(episode(2, task=E11000_TRY, output="E11000 came back on the next retry", success=False, reward=0.4))
    agent.store(episode(3, task=FLAG_B, output="enabled for AT and DE"))
    for n, task in enumerate(OTHERS, 4):
        agent.store(episode(n, task=task, output="done"))
    proc = daemons(site.config, tmp_path / "daemon.log")
    wait_started(site, proc, tmp_path / "daemon.log")
    wait_for(lambda: len(search(site, "anything", "--all")["results"]) == 3 + len(OTHERS), timeout=120, what="index")

    # `search "E11000"`: only what shares something with the query; the rest cut and counted.
    found = search(site, "E11000")
    assert found["via"] == "daemon"
    assert {r["task"] for r in found["results"]} == {E11000_FIX, E11000_TRY}
    assert found["cut"] == len(OTHERS) + 1
    assert (found["named"], found["absent"]) == (["E11000"], [])
    for r in found["results"]:
        assert r["why"]["exact"] == ["E11000"]
        assert 0.0 < r["relevance"] <= 1.0
    assert len(search(site, "E11000", "--all")["results"]) == 3 + len(OTHERS)
    assert len(search(site, "E11000", "-n", "1")["results"]) == 1  # -n is a maximum

    human = memsync("search", "E11000", "--config", str(site.config))
    assert human.returncode == 0, human.stderr
    assert "exact E11000" in human.stdout
    assert "FAILED attempt · reward 0.40" in human.stdout
    assert "worked · reward 0.90 · error_fix · relevance " in human.stdout, human.stdout
    assert f"{len(OTHERS) + 1} more under the relevance floor: --all shows them" in human.stdout
    assert "similarity" not in human.stdout

    # `--mode bm25 "ZQX_7781_A"` with only _B stored: _B ranks first, and A is said to be absent.
    bm25 = search(site, "ZQX_7781_A", "--mode", "bm25")
    assert bm25["results"][0]["task"] == FLAG_B
    assert bm25["results"][0]["why"]["lookalike"] == ["ZQX_7781_B"]
    assert bm25["results"][0]["why"]["exact"] == []
    assert (bm25["absent"], bm25["lookalikes"]) == (["ZQX_7781_A"], ["ZQX_7781_B"])
    said = memsync("search", "ZQX_7781_A", "--mode", "bm25", "--config", str(site.config)).stdout
    assert "absent: ZQX_7781_A (no memory searched holds it; look-alike held: ZQX_7781_B)" in said
    hybrid = search(site, "ZQX_7781_A")
    assert hybrid["absent"] == ["ZQX_7781_A"]
    held = search(site, "ZQX_7781_B")
    assert held["absent"] == []
    assert held["results"][0]["why"]["exact"] == ["ZQX_7781_B"]
