"""BM25 sparse vectors computed exactly as Qdrant's server-side ``qdrant/bm25`` (and ``qdrant_edge.Bm25``) does.

Computing them here rather than asking the server means one code path for the embedded engine, a
Qdrant server and Qdrant Cloud, and no model download. The recipe (Qdrant's word tokenizer and BM25):

1. split the text on every character that is not alphanumeric in Rust's sense (``Alphabetic`` or
   ``Numeric``; see ``_unicode`` for where that differs from ``str.isalnum``);
2. lowercase each token on its own (per token, not the whole text: it decides Greek final sigma),
   with the engine's newer Unicode case mappings where Python 3.11's database lacks them;
3. drop English stopwords (NLTK's list), checked *before* stemming ("does" goes, "others" stays);
4. stem with the Snowball English stemmer of rust-stemmers (``py-rust-stemmers``; the
   ``snowballstemmer`` package differs, e.g. "adding");
5. token id = ``abs(murmur3_32(utf8(token), seed 0))`` read as a signed 32-bit integer;
6. document weight ``tf*(k+1) / (tf + k*(1 - b + b*len/avg_len))`` where ``len`` counts the tokens
   left after step 3; query weight 1.0 per distinct token. IDF is applied by the collection
   (``Modifier.IDF``), never here.

The result is pure and deterministic; changing any setting changes the vectors, so a collection
records the ``Bm25Config`` it was built with and refuses another.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass
from functools import cache
from typing import Any, Protocol, cast

import mmh3
from py_rust_stemmers import SnowballStemmer  # ships no stubs

from sync.errors import ConfigError
from sync.search.embedders._unicode import EXTRA_ALNUM_RANGES, LOWERCASE_OVERRIDES

# NLTK's English stopword list (179 words), the list Qdrant's ``english`` stopwords use. Entries with
# an apostrophe can never match a token (the apostrophe splits it) but are kept so the list stays
# recognisably NLTK's.
ENGLISH_STOPWORDS: frozenset[str] = frozenset(
    """
    i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves
    he him his himself she she's her hers herself it it's its itself they them their theirs themselves
    what which who whom this that that'll these those am is are was were be been being have has had
    having do does did doing a an the and but if or because as until while of at by for with about
    against between into through during before after above below to from up down in out on off over
    under again further then once here there when where why how all any both each few more most other
    some such no nor not only own same so than too very s t can will just don don't should should've
    now d ll m o re ve y ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn
    hasn't haven haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn
    shouldn't wasn wasn't weren weren't won won't wouldn wouldn't
    """.split()  # noqa: SIM905 - a word block is easier to check against NLTK than 179 strings
)


@dataclass(frozen=True, slots=True)
class Bm25Config:
    """The settings a collection's sparse vectors were built with; any change means re-indexing them.

    Only ``k``, ``b`` and ``avg_len`` are tunable; the other fields name the fixed recipe above so
    that a future change to it (another stemmer, another stopword list) is recorded as a different
    config and refused by an old collection instead of silently mixing vectors.
    """

    k: float = 1.2
    b: float = 0.75
    avg_len: float = 256.0
    tokenizer: str = "word"
    lowercase: bool = True
    stopwords: str = "english-nltk-179"
    stemmer: str = "snowball-english-rust-stemmers"
    hashing: str = "abs-murmur3-32-seed0"

    def __post_init__(self) -> None:
        # The same bounds qdrant_edge.Bm25 enforces, so a config we accept the server accepts too.
        if self.k < 0:
            raise ConfigError(f"bm25.k must be >= 0 (got {self.k})")
        if not 0.0 <= self.b <= 1.0:
            raise ConfigError(f"bm25.b must be between 0 and 1 (got {self.b})")
        if self.avg_len <= 0:
            raise ConfigError(f"bm25.avg_len must be > 0 (got {self.avg_len})")
        fixed = Bm25Config.__dataclass_fields__
        for name in ("tokenizer", "lowercase", "stopwords", "stemmer", "hashing"):
            if getattr(self, name) != fixed[name].default:
                raise ConfigError(f"bm25.{name}={getattr(self, name)!r} is not supported (only the Qdrant recipe)")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record of the settings, stored with the collection."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Bm25Config:
        """The inverse of ``to_dict``; an unknown or unsupported recorded setting is a ``ConfigError``."""
        try:
            return cls(**data)
        except TypeError as exc:
            raise ConfigError(f"unrecognised BM25 settings {data!r}: {exc}") from exc


DEFAULT_BM25 = Bm25Config()


@dataclass(frozen=True, slots=True)
class SparseVector:
    """A sparse vector: strictly increasing ``indices`` and their ``values``, the same length."""

    indices: tuple[int, ...]
    values: tuple[float, ...]


def _token_pattern() -> re.Pattern[str]:
    # ``[^\W_]`` is exactly ``str.isalnum``; the extra ranges make it Rust's ``char::is_alphanumeric``.
    extra = "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in EXTRA_ALNUM_RANGES)
    return re.compile(rf"(?:[^\W_]|[{extra}])+")


_TOKEN = _token_pattern()


class _Stemmer(Protocol):
    def stem_word(self, word: str) -> str: ...


@cache
def _stemmer() -> _Stemmer:
    return cast(_Stemmer, SnowballStemmer("english"))


def tokenize(text: str) -> list[str]:
    """The tokens Qdrant's BM25 would index for ``text``, in order, duplicates kept."""
    stem = _stemmer().stem_word
    tokens: list[str] = []
    for raw in _TOKEN.findall(text):
        token = raw.translate(LOWERCASE_OVERRIDES).lower()
        if token in ENGLISH_STOPWORDS:
            continue
        tokens.append(stem(token))
    return tokens


def query_terms(text: str) -> list[tuple[str, int]]:
    """The query's distinct BM25 terms as ``(word as the text spells it, token id)``, in the order
    the text first names each: the ids ``embed_query`` gives, with a word a person can read."""
    stem = _stemmer().stem_word
    terms: dict[int, str] = {}
    for raw in _TOKEN.findall(text):
        token = raw.translate(LOWERCASE_OVERRIDES).lower()
        if token not in ENGLISH_STOPWORDS:
            terms.setdefault(token_id(stem(token)), raw)
    return [(word, tid) for tid, word in terms.items()]


def token_id(token: str) -> int:
    """Qdrant's sparse index for a token: |murmur3_32(utf-8, seed 0)| as a signed 32-bit integer."""
    return abs(mmh3.hash(token, 0, signed=True))


def embed_document(text: str, config: Bm25Config = DEFAULT_BM25) -> SparseVector:
    """The BM25 document vector (term-frequency part only; the collection applies IDF)."""
    tokens = tokenize(text)
    length_norm = config.k * (1.0 - config.b + config.b * len(tokens) / config.avg_len)
    weights: dict[int, float] = {}
    for token, tf in Counter(tokens).items():
        # Two distinct tokens with the same 32-bit hash in one text: Qdrant keeps one of them in an
        # unspecified order; we keep the larger weight. Practically never happens (2^31 ids).
        weight = tf * (config.k + 1.0) / (tf + length_norm)
        tid = token_id(token)
        weights[tid] = max(weight, weights.get(tid, 0.0))
    return _sorted(weights)


def embed_query(text: str) -> SparseVector:
    """The BM25 query vector: weight 1.0 for each distinct token (Qdrant ignores k, b, avg_len here)."""
    return _sorted(dict.fromkeys((token_id(t) for t in tokenize(text)), 1.0))


def _sorted(weights: dict[int, float]) -> SparseVector:
    indices = tuple(sorted(weights))
    return SparseVector(indices=indices, values=tuple(weights[i] for i in indices))
