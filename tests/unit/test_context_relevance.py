"""Tier: unit. The context block's relevance floor (daemon.context.relevance): which identifiers a
prompt names, which are siblings, and which search results are admitted, from tables."""

from __future__ import annotations

from typing import Any

import pytest

from daemon.context.relevance import Rules, identifiers, is_identifier, judge, siblings
from sync.search.request import SearchResult


def result(name: str, similarity: float | None, text: str = "", **extra: Any) -> SearchResult:
    fields: dict[str, Any] = {
        "id": name,
        "site": "laptop",
        "source_id": name,
        "score": 1.0,
        "similarity": similarity,
        "ts": None,
        "agent": "claude-code",
        "session": f"s-{name}",
        "task": None,
        "tags": extra.pop("tags", []),
        "reward": None,
        "success": None,
        "text": text or f"memory {name}",
    }
    return SearchResult(**fields, **extra)


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("E11000", True),
        ("ZQX_7781_A", True),
        ("exp-4471", True),
        ("ranker-v7.2.1", True),
        ("40P01", True),
        ("CVE-2024-3094", True),
        ("parse_retry_after", True),
        ("findOneAndUpdate", True),
        ("getStaticProps", True),
        ("ECONNRESET", True),
        ("next.config.js", True),
        ("137", False),  # a plain number: exit codes, counts, years
        ("tests", False),
        ("Docker", False),
        ("TypeError", False),  # one hump: as often a product or a class name
        ("GitHub", False),
        ("iPhones", False),
        ("S3", False),  # letters and digits, but a kind of thing
        ("bf16", False),
        ("CUDA", False),  # a capitalised word, not a code
        ("e.g", False),
        ("_", False),
    ],
)
def test_what_counts_as_an_identifier(token: str, expected: bool) -> None:
    assert is_identifier(token) is expected


def test_identifiers_are_read_from_prose_case_folded_and_without_punctuation() -> None:
    prompt = "Why does `ZQX_7781_A` fail with E11000 (see next.config.js), exit 137?"
    assert identifiers(prompt) == {"zqx_7781_a", "e11000", "next.config.js"}
    assert identifiers("ok go ahead and run the tests") == frozenset()


@pytest.mark.parametrize(
    ("named", "other", "expected"),
    [
        ("zqx_7781_a", "zqx_7781_b", True),  # one character apart
        ("exp-4471", "exp-4417", True),  # the same letters around other digits
        ("ranker-v7.4.0", "ranker-v7.2.11", True),
        ("ranker-v7.2.1", "ranker-v7.2.11", True),
        ("clicks_v12_eu", "clicks_v12_us", True),
        ("zqx_7781_a", "zqx_7781_a", False),  # itself
        ("e11000", "e0277", False),  # codes of one letter say nothing of a family
        ("1mb", "1m", False),  # too short
        ("idempotencykey_1", "idempotencykey", False),  # a field and its index, not two members
        ("exp-4471", "ranker-v7.2.1", False),
    ],
)
def test_siblings(named: str, other: str, expected: bool) -> None:
    assert siblings(named, other) is expected


RULES = Rules(floor=0.45, lead=0.15, margin=0.15, max_entries=3, exact=0.35, project=0.05)
FLAT = [0.20, 0.22, 0.25, 0.18, 0.21, 0.19]  # a pool that nothing stands out of


def admitted(query: str, results: list[SearchResult], **kwargs: Any) -> list[str]:
    return [j.result.id for j in judge(query, results, RULES, **kwargs) if j.admitted]


@pytest.mark.parametrize(
    ("cosines", "expected"),
    [
        ([0.70, *FLAT], ["a"]),  # the answer stands out
        ([0.70, 0.62, *FLAT], ["a", "b"]),  # two answers, close to each other
        ([0.70, 0.50, *FLAT], ["a"]),  # one that merely relates: too far below the best
        ([0.40, *FLAT], []),  # the best is under the floor
        ([0.50, 0.48, 0.47, 0.46, 0.49, 0.45], []),  # over the floor, but nothing stands out of the pool
        ([0.50, 0.48], ["a", "b"]),  # a pool too small for a median: the floor alone
    ],
)
def test_the_floor_from_the_cosines(cosines: list[float], expected: list[str]) -> None:
    names = "abcdefgh"
    assert admitted("why does the deploy fail", [result(names[i], c) for i, c in enumerate(cosines)]) == expected


def test_an_identifier_the_prompt_names_lifts_a_memory_and_its_siblings_are_left_out() -> None:
    results = [
        result("sib", 0.66, "ZQX_7781_B: new tax calculation behind the flag"),
        result("hit", 0.14, "exp-4471: warmup 2000 steps gave NDCG 0.421"),
        result("other", 0.40, "exp-4417 label smoothing lowered NDCG"),
        *(result(f"f{i}", c) for i, c in enumerate(FLAT)),
    ]
    judged = {j.result.id: j for j in judge("what did exp-4471 show about ZQX_7781_A?", results, RULES)}
    assert judged["hit"].admitted
    assert "holds exp-4471" in judged["hit"].why
    assert not judged["sib"].admitted
    assert judged["sib"].why == "names zqx_7781_b, not exp-4471, zqx_7781_a"
    assert not judged["other"].admitted
    assert "names exp-4417" in judged["other"].why


def test_an_absent_identifier_with_only_siblings_gets_nothing() -> None:
    results = [
        result("b", 0.60, "Feature flag ZQX_7781_B for EU orders"),
        *(result(f"f{i}", c) for i, c in enumerate(FLAT)),
    ]
    assert admitted("how did we fix the ZQX_7781_A flag?", results) == []


def test_a_pasted_log_naming_many_identifiers_does_not_make_siblings() -> None:
    log = "E11000 at db.users_1; ECONNRESET on redis_2; OOMKilled pod api-7d9"
    results = [
        result("near", 0.70, "db.users_2 and redis_1 were fine"),
        *(result(f"f{i}", c) for i, c in enumerate(FLAT)),
    ]
    assert admitted(log, results) == ["near"]


def test_the_agents_project_tips_a_close_call() -> None:
    results = [
        result("theirs", 0.70, "orders export command for the CLI", tags=["project:shopctl"]),
        result("mine", 0.54, "orders CSV export on the web app", tags=["project:web"]),
        *(result(f"f{i}", c) for i, c in enumerate(FLAT)),
    ]
    assert admitted("where did I leave off with the orders export?", results) == ["theirs"]
    assert admitted("where did I leave off with the orders export?", results, project="web") == ["theirs", "mine"]


def test_results_come_best_first_and_without_a_cosine_never_pass() -> None:
    results = [
        result("low", 0.60),
        result("high", 0.72),
        result("none", None),
        *(result(f"f{i}", c) for i, c in enumerate(FLAT)),
    ]
    judged = judge("deploy", results, RULES)
    assert [j.result.id for j in judged[:2]] == ["high", "low"]
    assert not next(j for j in judged if j.result.id == "none").admitted
