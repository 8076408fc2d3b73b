"""The Voyage reranker: the official voyageai client against a real HTTP server on 127.0.0.1 that
speaks Voyage's rerank API (POST /v1/rerank)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from fake_providers import (
    KEY,
    NOW,
    FakeProvider,
    Reply,
    Sleeps,
    assert_key_hidden,
    closed_url,
    fast_policy,
    serve,
)

from sync.errors import ConfigError, PermanentError, QuotaExhausted, TransientError
from sync.resilience.retry import RetryPolicy
from sync.search.query.ranking.rerank import VOYAGE_MAX_DOCUMENTS, Reranker, VoyageReranker

DOCUMENTS = [
    "The bakery sells sourdough bread every morning.",
    "Restart the sync daemon after editing its config file.",
    "The daemon logs every sync to the journal.",
    "Edit the config, then restart the daemon so the sync picks it up.",
]
QUERY = "restart the sync daemon after a config edit"


def relevance(query: str, document: str) -> float:
    """The fake model: the share of the query's words found in the document."""
    words = set(re.findall(r"\w+", query.lower()))
    return len(words & set(re.findall(r"\w+", document.lower()))) / len(words)


def ranking(query: str, documents: list[str]) -> list[tuple[int, float]]:
    """What the fake server ranks: by relevance, best first, ties by index."""
    scored = [(i, relevance(query, d)) for i, d in enumerate(documents)]
    return sorted(scored, key=lambda pair: (-pair[1], pair[0]))


def rerank_body(data: list[dict[str, Any]], model: str = "rerank-2.5") -> Any:
    return {"object": "list", "data": data, "model": model, "usage": {"total_tokens": 42}}


def rerank_respond(path: str, body: Any) -> Reply:
    if path != "/v1/rerank":
        return 404, {}, {"detail": "Not Found"}
    if len(body["documents"]) > 1000:
        return 400, {}, {"detail": "The number of documents cannot exceed 1000."}
    ranked = ranking(body["query"], body["documents"])[: body.get("top_k") or None]
    data = [{"index": i, "relevance_score": score} for i, score in ranked]
    return 200, {}, rerank_body(data, body["model"])


@pytest.fixture
def server() -> Iterator[FakeProvider]:
    yield from serve(rerank_respond)


@pytest.fixture
def reranker(server: FakeProvider, policy: RetryPolicy) -> VoyageReranker:
    return VoyageReranker(KEY, base_url=server.url + "/v1", retry=policy, clock=lambda: NOW)


def test_rerank_returns_indices_and_scores_best_first(reranker: VoyageReranker, server: FakeProvider) -> None:
    narrow: Reranker = reranker
    result = narrow.rerank(QUERY, DOCUMENTS)
    assert result == ranking(QUERY, DOCUMENTS)
    assert [i for i, _ in result] == [1, 3, 2, 0]
    assert result[:2] == [(1, 0.75), (3, 0.75)]  # 6 of the query's 8 words each; a tie keeps the server's order
    assert [score for _, score in result] == sorted((score for _, score in result), reverse=True)
    assert narrow.name == "voyage/rerank-2.5"

    (request,) = server.requests
    assert request.path == "/v1/rerank"
    assert request.body["query"] == QUERY
    assert request.body["documents"] == DOCUMENTS
    assert request.body["model"] == "rerank-2.5"
    assert request.body["top_k"] is None
    assert request.body["truncation"] is True
    assert request.headers["authorization"] == f"Bearer {KEY}"


def test_top_k_is_sent_and_only_the_best_come_back(reranker: VoyageReranker, server: FakeProvider) -> None:
    assert reranker.rerank(QUERY, DOCUMENTS, top_k=2) == ranking(QUERY, DOCUMENTS)[:2]
    assert server.requests[-1].body["top_k"] == 2
    # More than there are documents asks for all of them, and sends no more than there are.
    assert reranker.rerank(QUERY, DOCUMENTS, top_k=50) == ranking(QUERY, DOCUMENTS)
    assert server.requests[-1].body["top_k"] == len(DOCUMENTS)


def test_another_model_is_sent_and_named(server: FakeProvider, policy: RetryPolicy) -> None:
    lite = VoyageReranker(KEY, model="rerank-2.5-lite", base_url=server.url + "/v1", retry=policy)
    assert lite.name == "voyage/rerank-2.5-lite"
    assert lite.rerank("q", ["a"]) == [(0, 0.0)]
    assert server.requests[0].body["model"] == "rerank-2.5-lite"


def test_result_is_best_first_whatever_order_the_server_sends(reranker: VoyageReranker, server: FakeProvider) -> None:
    scores = [0.2, 0.9, 0.2, 0.5]
    server.fail(200, rerank_body([{"index": i, "relevance_score": s} for i, s in enumerate(scores)]))
    assert reranker.rerank(QUERY, DOCUMENTS) == [(1, 0.9), (3, 0.5), (0, 0.2), (2, 0.2)]


def test_no_documents_makes_no_call(reranker: VoyageReranker, server: FakeProvider) -> None:
    assert reranker.rerank(QUERY, []) == []
    assert reranker.rerank(QUERY, [], top_k=3) == []
    assert server.requests == []


def test_more_documents_than_voyage_takes_are_refused_before_any_call(
    reranker: VoyageReranker, server: FakeProvider
) -> None:
    too_many = [f"candidate {i}" for i in range(VOYAGE_MAX_DOCUMENTS + 1)]
    with pytest.raises(PermanentError, match="at most 1000 documents"):
        reranker.rerank(QUERY, too_many)
    assert server.requests == []
    assert len(reranker.rerank(QUERY, too_many[:VOYAGE_MAX_DOCUMENTS], top_k=5)) == 5
    assert len(server.requests[0].body["documents"]) == VOYAGE_MAX_DOCUMENTS


@pytest.mark.parametrize("top_k", [0, -1])
def test_top_k_below_one_is_refused_before_any_call(reranker: VoyageReranker, server: FakeProvider, top_k: int) -> None:
    with pytest.raises(PermanentError, match="top_k"):
        reranker.rerank(QUERY, DOCUMENTS, top_k=top_k)
    assert server.requests == []


def test_retries_429_honouring_retry_after_and_5xx(
    reranker: VoyageReranker, server: FakeProvider, sleeps: Sleeps
) -> None:
    server.fail(429, {"detail": "You have exceeded the rate limit."}, {"Retry-After": "9"})
    server.fail(500, {"detail": "Internal server error"})
    server.fail(503, {"detail": "Service unavailable"}, {"Retry-After": "2"})
    assert reranker.rerank(QUERY, DOCUMENTS, top_k=1) == ranking(QUERY, DOCUMENTS)[:1]
    assert len(server.requests) == 4
    assert all(r.body == server.requests[0].body for r in server.requests)
    assert sleeps.waits == [9.0, pytest.approx(0.01), 2.0]


def test_400_is_permanent_and_not_retried(reranker: VoyageReranker, server: FakeProvider, sleeps: Sleeps) -> None:
    server.fail(400, {"detail": f"Request to model 'rerank-2.5' failed: too many tokens (key {KEY})"})
    with pytest.raises(PermanentError, match=r"Voyage rerank request failed \(HTTP 400\)") as caught:
        reranker.rerank(QUERY, DOCUMENTS)
    assert len(server.requests) == 1
    assert sleeps.waits == []
    assert_key_hidden(caught.value)


@pytest.mark.parametrize("status", [401, 403])
def test_bad_key_is_a_config_error(reranker: VoyageReranker, server: FakeProvider, status: int) -> None:
    server.fail(status, {"detail": f"Provided API key is invalid: {KEY}"})
    with pytest.raises(ConfigError, match="API key") as caught:
        reranker.rerank(QUERY, DOCUMENTS)
    assert len(server.requests) == 1
    assert_key_hidden(caught.value)


@pytest.mark.parametrize(
    ("status", "detail"),
    [(429, "Your monthly token quota has been exhausted."), (402, "Payment required: out of credits")],
)
def test_exhausted_quota_raises_quota_exhausted(
    reranker: VoyageReranker, server: FakeProvider, sleeps: Sleeps, status: int, detail: str
) -> None:
    server.fail(status, {"detail": f"{detail} ({KEY})"})
    with pytest.raises(QuotaExhausted) as caught:
        reranker.rerank(QUERY, DOCUMENTS)
    assert caught.value.retry_after == 3000.0  # until the next hour
    assert caught.value.provider == "Voyage"
    assert len(server.requests) == 1
    assert sleeps.waits == []
    assert_key_hidden(caught.value)


def test_unreachable_is_transient() -> None:
    once = fast_policy(Sleeps(), give_up_after=0.0)
    reranker = VoyageReranker(KEY, base_url=closed_url() + "/v1", retry=once, timeout=5)
    with pytest.raises(TransientError, match="Voyage unreachable") as caught:
        reranker.rerank(QUERY, DOCUMENTS)
    assert_key_hidden(caught.value)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (rerank_body([{"index": 4, "relevance_score": 0.5}]), "unusable"),  # past the end
        (rerank_body([{"index": -1, "relevance_score": 0.5}]), "index -1"),  # would wrap in Python
        (rerank_body([{"index": 0, "relevance_score": 0.5}, {"index": 0, "relevance_score": 0.4}]), "index 0"),
        (rerank_body([{"index": 0, "relevance_score": None}]), "score None"),
        (rerank_body([{"index": 0, "relevance_score": 0.5}]), "1 rerank results, expected 4"),
        ({"object": "list", "data": [{"index": i, "relevance_score": 0.1} for i in range(4)]}, "unusable"),
        ({"object": "list", "usage": {"total_tokens": 1}}, "unusable"),
    ],
)
def test_a_malformed_response_is_permanent_and_not_retried(
    reranker: VoyageReranker, server: FakeProvider, sleeps: Sleeps, body: Any, problem: str
) -> None:
    server.fail(200, body)
    with pytest.raises(PermanentError, match=problem):
        reranker.rerank(QUERY, DOCUMENTS)
    assert len(server.requests) == 1
    assert sleeps.waits == []


def test_config_checks() -> None:
    with pytest.raises(ConfigError, match="no Voyage API key"):
        VoyageReranker(" ")
    reranker = VoyageReranker(KEY, base_url="http://127.0.0.1:9/v1")
    assert KEY not in repr(reranker)
