"""Tier: unit. The context set (tests/data/context_set.json) holds what its benchmark claims, and the
benchmark's scoring (bench/context_set.py) reads a block as an agent gets it: the fact whole,
entries told apart, unrelated ones counted, silence recognised, failures said."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import ROOT

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # bench/ is a folder of scripts, not an installed package

from bench.context_set import (
    SET,
    Case,
    block_of,
    breakdown,
    entries,
    hook_stdin,
    load_set,
    plan_set,
    score,
    squeezed,
    summary_of,
    transcript,
)
from daemon.context.compose import compose
from daemon.context.files import last_prompt
from daemon.context.hook import read_input, render
from sync.search.request import SearchResult, Why

DATA = load_set()
RAW = json.loads(SET.read_text(encoding="utf-8"))


def test_the_set_is_a_few_hundred_episodes_of_every_kind_over_projects_agents_and_sites() -> None:
    episodes = RAW["episodes"]
    assert 250 <= len(episodes) <= 400
    assert len({e["project"] for e in episodes if e["project"]}) >= 6
    assert {e["agent"] for e in episodes} == {"claude-code", "codex", "gemini-cli"}
    assert len({e["site"] for e in episodes}) == 3
    failed = [e for e in episodes if not e["success"]]
    assert len(failed) >= 20
    assert all(0 < e["reward"] < 0.5 for e in failed)
    assert sum(1 for e in episodes if len(DATA.episodes[e["id"]].text) > 2_000) >= 3  # long logs
    tasks = Counter(e["task"] for e in episodes)
    assert sum(n for n in tasks.values() if n > 1) >= 6  # retries stored twice


def test_every_answerable_case_names_a_memory_that_holds_its_fact() -> None:
    for case in DATA.cases:
        if case.memory is None:
            assert case.kind in ("chatty", "off-topic", "absent"), case.id
            continue
        assert case.fact is not None
        assert squeezed(case.fact) in DATA.episodes[case.memory].text, case.id
        assert case.memory not in case.also
        assert case.also <= DATA.episodes.keys(), case.id


def test_both_halves_hold_every_kind_of_case() -> None:
    kinds = Counter((c.kind, c.split) for c in DATA.cases)
    for kind in ("answer", "chatty", "off-topic", "absent", "startup", "resume"):
        assert kinds[(kind, "tune")] >= 3, kind
        assert kinds[(kind, "check")] >= 3, kind
    assert sum(n for (kind, _), n in kinds.items() if kind == "answer") >= 150
    assert sum(n for (kind, _), n in kinds.items() if kind in ("chatty", "off-topic", "absent")) >= 50
    prompts = [c.prompt for c in DATA.cases if not c.start]
    assert len(prompts) == len(set(prompts))


def test_the_issues_own_examples_are_in_it() -> None:
    by_prompt = {c.prompt: c for c in DATA.cases}
    oom = by_prompt[
        "the web build now dies with exit code 137 during npm ci after the React 19 upgrade, what did we do last time?"
    ]
    assert oom.fact == "raised Docker Desktop memory to 6 GB and added --max-old-space-size=2048"
    for chatty in ("ok go ahead and run the tests", "thanks", "looks good, commit it"):
        assert by_prompt[chatty].kind == "chatty"
    assert by_prompt["E11000"].kind == "answer"
    absent = [c for c in DATA.cases if c.kind == "absent" and c.prompt and "ZQX_7781_A" in c.prompt]
    assert absent
    assert not any("ZQX_7781_A" in e.text for e in DATA.episodes.values())
    assert any("ZQX_7781_B" in e.text for e in DATA.episodes.values())
    assert any(not e.success and e.fields["reward"] == 0.4 for e in DATA.episodes.values())


def test_the_episodes_are_planned_as_the_agentdb_package_stores_them() -> None:
    now = 1_780_000_000.0
    planned = plan_set(RAW["episodes"][:3], now)
    first = RAW["episodes"][0]
    assert planned[0].key == first["id"]
    assert planned[0].ts == int(now) - 600 - int(first["age_days"] * 86_400)
    assert planned[0].episode["metadata"]["agent_name"] == first["agent"]
    assert f"project:{first['project']}" in planned[0].episode["tags"]
    assert planned[0].episode["success"] is first["success"]


def found(n: int, set_id: str, relevance: float) -> SearchResult:
    """The set's episode as a search result, judged ``relevance`` by the search."""
    e = DATA.episodes[set_id]
    fields = e.fields
    text = "\n".join(str(fields[k]) for k in ("task", "input", "output", "critique") if fields[k])
    return SearchResult(
        id=f"p{n}",
        site="bench",
        source_id=str(n),
        score=1.0,
        similarity=0.5,
        ts=None,
        agent=str(fields["agent"]),
        session=str(fields["session"]),
        task=str(fields["task"]),
        tags=list(fields["tags"]),
        reward=float(fields["reward"]),
        success=bool(fields["success"]),
        text=text,
        relevance=relevance,
        why=Why("learned"),
    )


KEYS = {"bench#1": "web-001", "bench#2": "web-002", "bench#3": "shop-006", "bench#4": "infra-001"}
OOM_CASE = next(c for c in DATA.cases if c.id == "web-p01")
CHATTY_CASE = next(c for c in DATA.cases if c.prompt == "ok go ahead and run the tests")


def block_with(*items: tuple[str, float]) -> tuple[str, dict[str, str]]:
    """The block compose gives for the OOM prompt from these memories (and a flat pool), and its
    site#sourceId -> set id keys."""
    flat = [(f"infra-0{10 + i}", 0.02) for i in range(6)]
    results = [found(n, set_id, sim) for n, (set_id, sim) in enumerate([*items, *flat], start=1)]
    keys = {f"bench#{n}": set_id for n, (set_id, _) in enumerate([*items, *flat], start=1)}
    return compose(results, budget=3000, start=False, query=OOM_CASE.prompt or "").text, keys


def test_a_block_with_the_answer_whole_and_a_failed_attempt_said_as_such() -> None:
    block, keys = block_with(("web-001", 0.95), ("web-002", 0.80))
    scored = score(OOM_CASE, "claude-code", block, keys, DATA.episodes)
    assert scored.fact_whole is True
    assert scored.shown == ("web-001", "web-002")
    assert scored.unrelated == 0  # web-002 is the failed attempt the set accepts beside it
    assert (scored.failed_shown, scored.failed_said) == (1, 1)
    assert scored.chars == len(block)


def test_a_fact_cut_short_is_not_whole_and_unrelated_entries_count() -> None:
    text = DATA.episodes["web-001"].text
    cut = text[: text.index("--max-old-space-size")] + "…"
    block = (
        "<memsync-memories>\n- [bench#1 · claude-code · x] " + cut + "\n- [bench#3 · codex · x] Stripe key\n"
        "- [bench#4 · codex · x] xz\n</memsync-memories>\n"
    )
    scored = score(OOM_CASE, "codex", block, KEYS, DATA.episodes)
    assert scored.fact_whole is False
    assert scored.unrelated == 2
    assert [ref for ref, _ in entries(block)] == ["bench#1", "bench#3", "bench#4"]


@pytest.mark.parametrize(
    ("block", "silent"),
    [
        ("", True),
        ("memsync: see `memsync search QUERY`.", True),
        ("<memsync-memories>\n- [bench#3 · a · b] x\n</memsync-memories>\n", False),
    ],
)
def test_silence_is_nothing_or_one_line(block: str, silent: bool) -> None:
    scored = score(CHATTY_CASE, "gemini", block, KEYS, DATA.episodes)
    assert scored.silent is silent
    assert scored.fact_whole is None


def test_the_summary_counts_each_kind_apart() -> None:
    block, keys = block_with(("web-001", 0.95))
    answer = score(OOM_CASE, "codex", block, keys, DATA.episodes, ms=80)
    noise = score(CHATTY_CASE, "codex", "", KEYS, DATA.episodes, ms=60)
    row = summary_of([answer, noise])
    assert (row["answerable"], row["fact_whole_pct"], row["nothing"], row["silent_pct"]) == (1, 100.0, 1, 100.0)
    assert row["ms_p50"] == 70
    table = breakdown([answer, noise])
    assert {"all", "tool:codex", "split:tune", "kind:answer", "kind:chatty", "codex:tune"} <= table.keys()


@pytest.mark.parametrize("tool", ["claude-code", "codex", "gemini"])
def test_the_hook_input_is_each_tools_documented_shape_and_the_block_comes_back_out(tool: str, tmp_path: Path) -> None:
    event = "BeforeAgent" if tool == "gemini" else "UserPromptSubmit"
    stdin = hook_stdin(tool, event, cwd=str(tmp_path), session_id="s1", prompt="why exit 137?")
    hook = read_input(tool, stdin)
    assert (hook.event, hook.prompt, hook.cwd) == (event, "why exit 137?", str(tmp_path))
    assert block_of(tool, render(tool, event, "<memsync-memories>\nx\n</memsync-memories>\n")).startswith("<memsync")
    assert block_of(tool, render(tool, event, "")) == ""


@pytest.mark.parametrize("tool", ["claude-code", "codex"])
def test_a_resumed_sessions_transcript_gives_its_last_prompt(tool: str, tmp_path: Path) -> None:
    assert last_prompt(transcript(tool, tmp_path / "t.jsonl", "the ranker runs out of CUDA memory")) == (
        "the ranker runs out of CUDA memory"
    )


def test_cases_are_start_or_prompt() -> None:
    start = Case("s", "resume", "tune", "web", "p", "web-001", "x")
    assert start.start
    assert start.answerable
    assert not Case("c", "chatty", "tune", "web", "thanks").start
