"""BM25 parity: our pure vectors against the engine's own ``qdrant_edge.Bm25`` (the server's code)."""

from __future__ import annotations

import mmh3
import pytest
import qdrant_edge as qe

from sync.errors import ConfigError
from sync.search.embedders import bm25

CORPUS = [
    "",
    "   \t\n ",
    "the and of a",  # stopwords only
    "getUserById threw NullPointerException in UserService.getUserById()",
    "snake_case_identifier and CONSTANT_VALUE and __dunder__ names",
    "Error E1234 then ERR_CONN_RESET (errno=104) on retry #3",
    "Ticket JIRA-4821 blocks PROJ-17; see https://example.com/browse/JIRA-4821?focus=true",
    "adding added adds running runner ran generously generalization",  # stemmer-sensitive
    "Does it work? Others said it doesn't, won't, couldn't: they're wrong.",
    "Straße café naïve ÉCOLE Ærøskøbing İstanbul \u0391\u03a3'\u0392 Σοφός",  # Greek final sigma
    "Unicode: 日本語のテキスト, 中文文本, हिन्दी भाषा, العربية, 한국어 텍스트, emoji 🚀🔥 ok",
    "x²+y² = z², Ⅻ ⅰⅱ Ⓐbc ﬁle ½ 3.14159 1e-9 0xDEADBEEF",
    "tabs\tand\nnewlines\r\nand---dashes...and///slashes\\\\back",
    "repeat " * 5 + "unique",
    ("long episode text about the deployment pipeline failing on step 7 " * 60).strip(),
    " ".join(f"token{i}" for i in range(700)),
    "a" * 5000,
]


def _engine() -> qe.Bm25:
    return qe.Bm25()


@pytest.mark.parametrize("text", CORPUS)
def test_document_vectors_match_the_engine(text: str) -> None:
    ours = bm25.embed_document(text)
    theirs = _engine().embed_document(text)
    assert list(ours.indices) == theirs.indices
    assert ours.values == pytest.approx(theirs.values, abs=1e-6)


@pytest.mark.parametrize("text", CORPUS)
def test_query_vectors_match_the_engine(text: str) -> None:
    ours = bm25.embed_query(text)
    theirs = _engine().embed_query(text)
    assert list(ours.indices) == theirs.indices
    assert list(ours.values) == theirs.values


@pytest.mark.parametrize(("k", "b", "avg_len"), [(0.9, 0.4, 100.0), (2.0, 1.0, 32.0), (1.2, 0.0, 256.0)])
def test_other_k_b_avg_len_match_the_engine(k: float, b: float, avg_len: float) -> None:
    config = bm25.Bm25Config(k=k, b=b, avg_len=avg_len)
    engine = qe.Bm25(qe.Bm25Config(k=k, b=b, avg_len=avg_len))
    for text in CORPUS:
        ours, theirs = bm25.embed_document(text, config), engine.embed_document(text)
        assert list(ours.indices) == theirs.indices
        assert ours.values == pytest.approx(theirs.values, abs=1e-6)


def _probe_batches(size: int = 256) -> list[list[int]]:
    points = [cp for cp in range(0x110000) if not 0xD800 <= cp < 0xE000]
    return [points[i : i + size] for i in range(0, len(points), size)]


def test_every_code_point_tokenizes_and_lowercases_like_the_engine() -> None:
    # Each code point three ways: between letters (does it split a word?), alone, and upper/lower
    # around a letter (case mapping). Unique numbered prefixes keep the probes' tokens apart.
    engine = _engine()
    mismatched: list[str] = []
    for batch in _probe_batches():
        text = " ".join(
            f"p{n}x{chr(cp)}y{n} {chr(cp)} {chr(cp).upper()}q{chr(cp).lower()}" for n, cp in enumerate(batch)
        )
        if list(bm25.embed_query(text).indices) != engine.embed_query(text).indices:
            mismatched += [
                hex(cp)
                for cp in batch
                if list(bm25.embed_query(f"zqa{chr(cp)}zqb {chr(cp)}").indices)
                != engine.embed_query(f"zqa{chr(cp)}zqb {chr(cp)}").indices
            ] or [f"batch at {hex(batch[0])}"]
    assert mismatched == []


def test_stopword_list_is_nltks_and_is_applied_before_stemming() -> None:
    engine = _engine()
    assert len(bm25.ENGLISH_STOPWORDS) == 179
    assert all(engine.embed_query(w).indices == [] for w in bm25.ENGLISH_STOPWORDS if "'" not in w)
    assert bm25.tokenize("does") == []  # a stopword, though its stem "doe" is not
    assert bm25.tokenize("others") == ["other"]  # not a stopword, though its stem is
    assert engine.embed_query("others").indices == [bm25.token_id("other")]


def test_tokens_are_split_lowercased_and_stemmed_the_rust_way() -> None:
    assert bm25.tokenize("getUserById ERR_CONN_RESET JIRA-4821 adding") == [
        "getuserbyid",
        "err",
        "conn",
        "reset",
        "jira",
        "4821",
        "ad",  # rust-stemmers; the snowballstemmer package says "add"
    ]


def test_token_id_is_the_absolute_signed_murmur3() -> None:
    negative = next(t for t in ("alpha", "beta", "gamma", "delta", "epsilon") if mmh3.hash(t) < 0)
    assert bm25.token_id(negative) == -mmh3.hash(negative)
    assert bm25.token_id("getuserbyid") == _engine().embed_query("getUserById").indices[0]


def test_document_weights_follow_the_formula() -> None:
    vector = bm25.embed_document("alpha alpha beta")
    k, b, avg_len, length = 1.2, 0.75, 256.0, 3
    norm = k * (1 - b + b * length / avg_len)
    expected = {bm25.token_id("alpha"): 2 * (k + 1) / (2 + norm), bm25.token_id("beta"): (k + 1) / (1 + norm)}
    assert dict(zip(vector.indices, vector.values, strict=True)) == pytest.approx(expected)
    assert list(vector.indices) == sorted(vector.indices)


def test_config_defaults_match_the_engine_and_round_trip() -> None:
    engine_defaults = qe.Bm25Config()
    config = bm25.Bm25Config()
    assert (config.k, config.b, config.avg_len) == (engine_defaults.k, engine_defaults.b, engine_defaults.avg_len)
    assert bm25.Bm25Config.from_dict(config.to_dict()) == config
    assert bm25.Bm25Config(k=1.5) != config


@pytest.mark.parametrize(
    "kwargs", [{"k": -1.0}, {"b": 1.5}, {"avg_len": 0.0}, {"stemmer": "porter"}, {"stopwords": "none"}]
)
def test_invalid_or_unsupported_config_is_a_config_error(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        bm25.Bm25Config(**kwargs)  # type: ignore[arg-type]


def test_unknown_recorded_setting_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unrecognised BM25 settings"):
        bm25.Bm25Config.from_dict({**bm25.Bm25Config().to_dict(), "ascii_folding": True})
