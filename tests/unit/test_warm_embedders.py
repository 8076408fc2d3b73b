"""Embedders: the local ONNX model for real, and the cloud clients (the official google-genai and
voyageai packages) against real HTTP servers on 127.0.0.1 that speak their REST APIs."""

from __future__ import annotations

import base64
import email.utils
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fake_providers import (
    KEY,
    NOW,
    FakeProvider,
    Reply,
    Sleeps,
    assert_key_hidden,
    closed_url,
    fake_vector,
    fast_policy,
    gemini_respond,
    google_error,
    serve,
)

from sync.errors import ConfigError, ModelFileError, PermanentError, QuotaExhausted, TransientError
from sync.retry import RetryPolicy
from sync.search.embedders.base import Embedder
from sync.search.embedders.gemini import GeminiEmbedder
from sync.search.embedders.local import LocalEmbedder
from sync.search.embedders.voyage import VoyageEmbedder


def cosine(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def unit(vector: list[float]) -> np.ndarray[Any, np.dtype[np.float64]]:
    array = np.asarray(vector, dtype=np.float64)
    result: np.ndarray[Any, np.dtype[np.float64]] = array / np.linalg.norm(array)
    return result


# ---------------------------------------------------------------------------------------------
# ---------------------------------------------------------------------------------------------
# Local model, for real


def test_local_shapes_norms_and_determinism(local: LocalEmbedder) -> None:
    embedder: Embedder = local
    texts = ["The deploy failed with error E1042.", "Rotate the API keys every quarter.", "x"]
    vectors = embedder.embed_documents(texts)
    assert embedder.dims == 384
    assert embedder.name.startswith("all-MiniLM-L6-v2-onnx-int8@")
    assert [len(v) for v in vectors] == [384, 384, 384]
    assert all(abs(float(np.linalg.norm(v)) - 1.0) < 1e-5 for v in vectors)
    assert embedder.embed_documents(texts) == vectors
    assert len(set(map(tuple, vectors))) == 3
    assert embedder.embed_documents([]) == []


def test_local_paraphrase_beats_unrelated(local: LocalEmbedder) -> None:
    query = local.embed_query("How do I restart the sync daemon after changing its config?")
    paraphrase, unrelated = local.embed_documents(
        [
            "After editing the configuration file, restart the memsync service so it picks up the change.",
            "The bakery sells sourdough bread and croissants every morning.",
        ]
    )
    assert cosine(query, paraphrase) > cosine(query, unrelated) + 0.3


def test_local_query_and_document_of_same_text_agree(local: LocalEmbedder) -> None:
    text = "Timeout while uploading episode batch to the backbone"
    assert cosine(local.embed_query(text), local.embed_documents([text])[0]) >= 0.99


def test_local_padding_is_masked_and_order_kept(local: LocalEmbedder) -> None:
    # Batched with much longer texts, a short text is padded: masked pooling must ignore the padding,
    # and the length-sorted batching must hand the vectors back in the caller's order.
    texts = ["short", "a much longer sentence about agents, memory, vectors and search " * 6, "medium length text"]
    batched = local.embed_documents(texts)
    for text, vector in zip(texts, batched, strict=True):
        assert cosine(vector, local.embed_query(text)) > 0.9999


def test_local_truncates_at_256_tokens_not_128(local: LocalEmbedder) -> None:
    head = " ".join(f"word{i}" for i in range(80))  # 176 word pieces: over 128, under 256
    past_128_a = head + " the database migration failed and rolled back"
    past_128_b = head + " a sunny afternoon picnic in the park with friends"
    a, b = local.embed_documents([past_128_a, past_128_b])
    assert cosine(a, b) < 0.9999, "text after token 128 must still count"

    long_head = " ".join(f"token{i}" for i in range(200))  # 531 word pieces
    c, d = local.embed_documents([long_head + " alpha beta gamma", long_head + " completely different tail"])
    assert cosine(c, d) > 0.99999, "text after token 256 must be cut"


def test_local_refuses_wrong_checksum_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ModelFileError, match="sha256") as wrong:
        LocalEmbedder(expected_sha256="0" * 64)
    assert isinstance(wrong.value, ConfigError)
    with pytest.raises(ModelFileError, match="missing"):
        LocalEmbedder(model_path=tmp_path / "model.onnx", expected_sha256="0" * 64)
    with pytest.raises(ModelFileError, match="tokenizer"):
        LocalEmbedder(tokenizer_path=tmp_path / "tokenizer.json")


# ---------------------------------------------------------------------------------------------
# Gemini: POST /v1/models/{model}:batchEmbedContents (google-genai 3.4 calls v1, not v1beta)


@pytest.fixture
def gemini_server() -> Iterator[FakeProvider]:
    yield from serve(gemini_respond)


@pytest.fixture
def gemini(gemini_server: FakeProvider, policy: RetryPolicy) -> GeminiEmbedder:
    return GeminiEmbedder(KEY, base_url=gemini_server.url, retry=policy, clock=lambda: NOW)


def test_gemini_batches_250_texts_into_3_calls_with_document_task(
    gemini: GeminiEmbedder, gemini_server: FakeProvider
) -> None:
    texts = [f"episode {i}" for i in range(250)]
    vectors = gemini.embed_documents(texts)
    assert [len(r.body["requests"]) for r in gemini_server.requests] == [100, 100, 50]
    sent = [req for r in gemini_server.requests for req in r.body["requests"]]
    assert {req["taskType"] for req in sent} == {"RETRIEVAL_DOCUMENT"}
    assert {req["outputDimensionality"] for req in sent} == {768}
    assert {req["model"] for req in sent} == {"models/gemini-embedding-001"}
    assert [req["content"]["parts"][0]["text"] for req in sent] == texts
    assert all(r.headers.get("x-goog-api-key") == KEY for r in gemini_server.requests)
    assert gemini.dims == 768
    assert gemini.name == "gemini/gemini-embedding-001"
    for text, vector in zip(texts, vectors, strict=True):
        assert len(vector) == 768
        assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-9  # re-normalised: the server's are length ~83
        assert np.allclose(vector, unit(fake_vector(text, 768)))


def test_gemini_query_uses_query_task(gemini: GeminiEmbedder, gemini_server: FakeProvider) -> None:
    vector = gemini.embed_query("where did the deploy fail?")
    (request,) = gemini_server.requests
    assert [r["taskType"] for r in request.body["requests"]] == ["RETRIEVAL_QUERY"]
    assert np.allclose(vector, unit(fake_vector("where did the deploy fail?", 768)))


def test_gemini_retries_429_honouring_retry_after_and_5xx(
    gemini: GeminiEmbedder, gemini_server: FakeProvider, sleeps: Sleeps
) -> None:
    gemini_server.fail(429, google_error(429, "RESOURCE_EXHAUSTED", "Too many requests"), {"Retry-After": "7"})
    gemini_server.fail(500, google_error(500, "INTERNAL", "Internal error encountered."))
    gemini_server.fail(503, google_error(503, "UNAVAILABLE", "The model is overloaded."), {"Retry-After": "3"})
    assert len(gemini.embed_documents(["a", "b"])) == 2
    assert len(gemini_server.requests) == 4
    assert sleeps.waits == [7.0, pytest.approx(0.01), 3.0]


def test_gemini_per_minute_quota_is_a_rate_limit_using_the_body_hint(
    gemini: GeminiEmbedder, gemini_server: FakeProvider, sleeps: Sleeps
) -> None:
    details = [
        {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [{"quotaId": "EmbedContentRequestsPerMinutePerProjectPerModel-FreeTier"}],
        },
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "12s"},
    ]
    gemini_server.fail(429, google_error(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota.", details))
    assert len(gemini.embed_query("q")) == 768
    assert sleeps.waits == [12.0]


def test_gemini_exhausted_quota_raises_quota_exhausted_without_retrying(
    gemini: GeminiEmbedder, gemini_server: FakeProvider, sleeps: Sleeps
) -> None:
    daily = [
        {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [{"quotaId": "EmbedContentRequestsPerDayPerProjectPerModel-FreeTier"}],
        }
    ]
    message = f"You exceeded your current quota, please check your plan and billing details. key={KEY}"
    gemini_server.fail(429, google_error(429, "RESOURCE_EXHAUSTED", message, daily))
    with pytest.raises(QuotaExhausted) as caught:
        gemini.embed_documents(["a"])
    assert caught.value.retry_after == 3000.0  # until the next hour
    assert caught.value.provider == "Gemini"
    assert len(gemini_server.requests) == 1
    assert sleeps.waits == []
    assert_key_hidden(caught.value)

    hint = [*daily, {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "20000s"}]
    gemini_server.fail(429, google_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded for metric", hint))
    with pytest.raises(QuotaExhausted) as hinted:
        gemini.embed_query("a")
    assert hinted.value.retry_after == 20000.0  # the server's longer hint wins


def test_gemini_400_is_permanent_and_not_retried(
    gemini: GeminiEmbedder, gemini_server: FakeProvider, sleeps: Sleeps
) -> None:
    gemini_server.fail(400, google_error(400, "INVALID_ARGUMENT", f"Request payload is invalid (key {KEY})"))
    with pytest.raises(PermanentError, match="INVALID_ARGUMENT") as caught:
        gemini.embed_documents(["a"])
    assert len(gemini_server.requests) == 1
    assert sleeps.waits == []
    assert_key_hidden(caught.value)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (401, google_error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")),
        (403, google_error(403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers.")),
        (
            400,
            google_error(
                400,
                "INVALID_ARGUMENT",
                "API key not valid. Please pass a valid API key.",
                [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}],
            ),
        ),
    ],
)
def test_gemini_bad_key_is_a_config_error(
    gemini: GeminiEmbedder, gemini_server: FakeProvider, status: int, body: Any
) -> None:
    gemini_server.fail(status, body)
    with pytest.raises(ConfigError, match="API key") as caught:
        gemini.embed_query("a")
    assert len(gemini_server.requests) == 1
    assert_key_hidden(caught.value)


def test_gemini_unreachable_is_transient() -> None:
    once = fast_policy(Sleeps(), give_up_after=0.0)
    embedder = GeminiEmbedder(KEY, base_url=closed_url(), retry=once, timeout=5)
    with pytest.raises(TransientError) as caught:
        embedder.embed_query("a")
    assert_key_hidden(caught.value)


def test_gemini_config_checks() -> None:
    with pytest.raises(ConfigError, match="no Gemini API key"):
        GeminiEmbedder("")
    with pytest.raises(ConfigError, match="batch_size"):
        GeminiEmbedder(KEY, batch_size=101)
    assert KEY not in repr(GeminiEmbedder(KEY, base_url="http://127.0.0.1:9"))


# ---------------------------------------------------------------------------------------------
# Voyage: POST /v1/embeddings


def voyage_respond(path: str, body: Any) -> Reply:
    if path != "/v1/embeddings":
        return 404, {}, {"detail": "Not Found"}
    data = []
    for i, text in enumerate(body["input"]):
        vector = fake_vector(text, body["output_dimension"])
        embedding: Any = vector
        if body.get("encoding_format") == "base64":
            embedding = base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode()
        data.append({"object": "embedding", "embedding": embedding, "index": i})
    return 200, {}, {"object": "list", "data": data, "model": body["model"], "usage": {"total_tokens": 3}}


@pytest.fixture
def voyage_server() -> Iterator[FakeProvider]:
    yield from serve(voyage_respond)


@pytest.fixture
def voyage(voyage_server: FakeProvider, policy: RetryPolicy) -> VoyageEmbedder:
    return VoyageEmbedder(KEY, base_url=voyage_server.url + "/v1", retry=policy, clock=lambda: NOW)


def test_voyage_batches_with_document_input_type(voyage: VoyageEmbedder, voyage_server: FakeProvider) -> None:
    texts = [f"episode {i}" for i in range(300)]
    vectors = voyage.embed_documents(texts)
    assert [len(r.body["input"]) for r in voyage_server.requests] == [128, 128, 44]
    assert {r.body["input_type"] for r in voyage_server.requests} == {"document"}
    assert {r.body["output_dimension"] for r in voyage_server.requests} == {1024}
    assert {r.body["model"] for r in voyage_server.requests} == {"voyage-3.5"}
    assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in voyage_server.requests)
    assert voyage.dims == 1024
    assert voyage.name == "voyage/voyage-3.5"
    for text, vector in zip(texts, vectors, strict=True):
        assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-9
        assert np.allclose(vector, unit(fake_vector(text, 1024)), atol=1e-6)  # float32 on the wire


def test_voyage_query_uses_query_input_type(voyage_server: FakeProvider, policy: RetryPolicy) -> None:
    embedder = VoyageEmbedder(KEY, dims=256, base_url=voyage_server.url + "/v1", retry=policy)
    vector = embedder.embed_query("where did the deploy fail?")
    (request,) = voyage_server.requests
    assert request.body["input_type"] == "query"
    assert request.body["output_dimension"] == 256
    assert len(vector) == 256


@pytest.mark.parametrize("dims", [768, 384, 3072, 0])
def test_voyage_refuses_unsupported_dimensions(dims: int) -> None:
    with pytest.raises(ConfigError, match="256, 512, 1024, 2048"):
        VoyageEmbedder(KEY, dims=dims)


def test_voyage_retries_429_honouring_retry_after_and_5xx(
    voyage: VoyageEmbedder, voyage_server: FakeProvider, sleeps: Sleeps
) -> None:
    voyage_server.fail(429, {"detail": "You have exceeded the rate limit."}, {"Retry-After": "9"})
    voyage_server.fail(500, {"detail": "Internal server error"})
    voyage_server.fail(503, {"detail": "Service unavailable"}, {"Retry-After": "2"})
    assert len(voyage.embed_documents(["a", "b"])) == 2
    assert len(voyage_server.requests) == 4
    assert sleeps.waits == [9.0, pytest.approx(0.01), 2.0]


def test_voyage_400_is_permanent_and_not_retried(
    voyage: VoyageEmbedder, voyage_server: FakeProvider, sleeps: Sleeps
) -> None:
    voyage_server.fail(400, {"detail": f"Input cannot be empty (key {KEY})"})
    with pytest.raises(PermanentError, match="400") as caught:
        voyage.embed_documents([""])
    assert len(voyage_server.requests) == 1
    assert sleeps.waits == []
    assert_key_hidden(caught.value)


@pytest.mark.parametrize("status", [401, 403])
def test_voyage_bad_key_is_a_config_error(voyage: VoyageEmbedder, voyage_server: FakeProvider, status: int) -> None:
    voyage_server.fail(status, {"detail": f"Provided API key is invalid: {KEY}"})
    with pytest.raises(ConfigError, match="API key") as caught:
        voyage.embed_query("a")
    assert len(voyage_server.requests) == 1
    assert_key_hidden(caught.value)


@pytest.mark.parametrize(
    ("status", "detail"),
    [(429, "Your monthly token quota has been exhausted."), (402, "Payment required: out of credits")],
)
def test_voyage_exhausted_quota_raises_quota_exhausted(
    voyage: VoyageEmbedder, voyage_server: FakeProvider, sleeps: Sleeps, status: int, detail: str
) -> None:
    voyage_server.fail(status, {"detail": detail})
    with pytest.raises(QuotaExhausted) as caught:
        voyage.embed_documents(["a"])
    assert caught.value.retry_after == 3000.0
    assert caught.value.provider == "Voyage"
    assert len(voyage_server.requests) == 1
    assert sleeps.waits == []
    assert_key_hidden(caught.value)


def test_voyage_config_checks() -> None:
    with pytest.raises(ConfigError, match="no Voyage API key"):
        VoyageEmbedder("  ")
    assert KEY not in repr(VoyageEmbedder(KEY))


def test_voyage_retry_after_as_http_date(voyage: VoyageEmbedder, voyage_server: FakeProvider, sleeps: Sleeps) -> None:
    when = email.utils.formatdate(NOW + 30, usegmt=True)
    voyage_server.fail(429, {"detail": "You have exceeded the rate limit."}, {"Retry-After": when})
    assert len(voyage.embed_query("a")) == 1024
    assert sleeps.waits == [30.0]


def test_local_refuses_a_tokenizer_whose_checksum_is_wrong(tmp_path: Path) -> None:
    """The tokenizer ships in memsync's package data: a changed byte is refused, naming both sums."""
    from sync.search.embedders.local import TOKENIZER_SHA256, _packaged_tokenizer

    damaged = tmp_path / "tokenizer.json"
    damaged.write_bytes(_packaged_tokenizer().read_bytes().replace(b"[UNK]", b"[UNQ]", 1))
    with pytest.raises(ModelFileError, match=f"tokenizer {damaged} has sha256 .* expected {TOKENIZER_SHA256}"):
        LocalEmbedder(tokenizer_path=damaged)
