"""LoCoMo's candidate pools, computed once through the real store and kept: the data of the fold lab.

``bench/recall_folds.py`` chooses every tuned constant of search on some conversations and measures
it on the others. Choosing means trying many rankings over the same candidates, so this module does
the slow part once: the development half's turns, written as ``bench/recall.py`` writes them (task
``"<speaker>: <text>"`` plus the photo's caption, input ``"conversation between A and B"``, session
``<conv>-s<N>``, tag ``<conv>``; each conversation's newest session an hour before a fixed clock,
30 s between turns), embedded by the product's ``LocalEmbedder`` (vectors kept in
``bench/.cache/``, keyed by the text's hash, so a new index key re-embeds only new texts), upserted
into a real ``EdgeStore`` with the payload the indexer writes, and every question of categories 1-4
run through the store's own hybrid prefetch (dense and BM25 under the conversation's tag) at a depth
of ``POOL``. What comes back, the two lists with their scores, is all any ranking may use, together
with each turn's payload and BM25 vector: that is what the product's search has in hand.

An *index key* is what a turn is indexed by. ``raw`` is the product's (the episode's text); the
others add to what the BM25 and dense vectors are computed from (``KEYS``) while the payload's text
stays the turn's own.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from bench import recall
from bench.common import CACHE, progress

NOW_S: Final = 1_790_000_000  # the fixed clock: each conversation's newest session began an hour before
POOL: Final = 200  # candidates taken from each list
SITE: Final = "locomo"
AGENT: Final = "locomo"
KS: Final = (5, 10, 25, 50)


@dataclass(frozen=True, slots=True)
class Turn:
    conv: str
    session: int
    index: int  # within its session
    dia_id: str
    text: str  # the episode's text, as the indexer builds it
    ts_ms: int


@dataclass(frozen=True, slots=True)
class Question:
    conv: str
    text: str
    evidence: frozenset[str]
    category: int


def load(folder: Path, *, keep_calendar: bool = False) -> tuple[list[Turn], list[Question]]:
    """The turns and questions. With ``keep_calendar`` the sessions move by whole years instead (the
    newest within a year before the clock), and the years a question names move alike: a question
    about "June 2022" then asks about the month its memories are dated in."""
    from sync.search.indexing.text import episode_text

    turns: list[Turn] = []
    questions: list[Question] = []
    for conv in recall.load_locomo(folder):
        years = _years_to_move(conv) if keep_calendar else 0
        planned = recall.plan_conversation(conv, NOW_S)
        position = 0
        for session in conv.sessions:
            began = _moved(session.began, years) if keep_calendar else None
            for i, _turn in enumerate(session.turns):
                p = planned[position]
                position += 1
                ts = int(began.timestamp()) + i * recall.TURN_SPACING_S if began else p.ts
                turns.append(Turn(conv.name, session.number, i, p.key, episode_text(p.episode), ts * 1000))
        for q in conv.questions:
            text = _moved_years(q.text, years) if years else q.text
            questions.append(Question(conv.name, text, q.evidence, q.category))
    return turns, questions


def _years_to_move(conv: recall.Conversation) -> int:
    newest = max(s.began for s in conv.sessions)
    clock = datetime.fromtimestamp(NOW_S - recall.NEWEST_AGE_S, tz=UTC)
    years = clock.year - newest.year
    return years - 1 if _moved(newest, years) > clock else years


def _moved(moment: datetime, years: int) -> datetime:
    try:
        return moment.replace(year=moment.year + years)
    except ValueError:  # 29 February into a year without one
        return moment.replace(year=moment.year + years, day=28)


def _moved_years(text: str, years: int) -> str:
    return re.sub(r"\b(19|20)\d\d\b", lambda m: str(int(m[0]) + years), text)


# -- index keys ------------------------------------------------------------------------------------
KeyFn = Callable[[Sequence[Turn], int], str]


def key_raw(turns: Sequence[Turn], i: int) -> str:
    return turns[i].text


def key_previous(turns: Sequence[Turn], i: int) -> str:
    """The turn, then the turn before it in its session (a reply's question)."""
    t = turns[i]
    before = turns[i - 1] if i > 0 and turns[i - 1].conv == t.conv and turns[i - 1].session == t.session else None
    return t.text if before is None else f"{t.text}\n{_first_line(before.text)}"


def key_date(turns: Sequence[Turn], i: int) -> str:
    """The turn, then its date in words (``8 May 2023``): what a "when" question's words meet."""
    t = turns[i]
    moment = datetime.fromtimestamp(t.ts_ms / 1000, tz=UTC)
    return f"{t.text}\n{moment.day} {moment:%B %Y}"


def key_identifiers(turns: Sequence[Turn], i: int) -> str:
    """The turn, then its identifiers split at case changes and digits (``memoryLeak42`` -> memory leak 42)."""
    t = turns[i]
    parts = [" ".join(_split_identifier(w)) for w in re.findall(r"\w*[a-z][A-Z0-9]\w*", t.text)]
    return t.text if not parts else f"{t.text}\n{' '.join(parts)}"


def _split_identifier(word: str) -> list[str]:
    return re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", word)


def _first_line(text: str) -> str:
    return text.split("\n", 1)[0]


KEYS: Final[Mapping[str, KeyFn]] = {
    "raw": key_raw,
    "previous": key_previous,
    "date": key_date,
    "identifiers": key_identifiers,
}


# -- embeddings, kept ------------------------------------------------------------------------------
class EmbeddingCache:
    """Dense vectors by text hash, kept in one ``.npz`` per model: the lab never embeds a text twice."""

    def __init__(self, embedder: Any, folder: Path = CACHE) -> None:
        self._embedder = embedder
        self.name, self.dims = embedder.name, embedder.dims
        self._file = folder / f"embeddings-{_slug(embedder.name)}.npz"
        self._vectors: dict[str, npt.NDArray[np.float32]] = {}
        if self._file.exists():
            with np.load(self._file) as held:
                self._vectors = {k: held[k] for k in held.files}
        self._dirty = False

    def documents(self, texts: Sequence[str]) -> Any:
        return self._many(texts, self._embedder.embed_documents)

    def queries(self, texts: Sequence[str]) -> Any:
        embed = getattr(self._embedder, "embed_queries", None) or (
            lambda batch: [self._embedder.embed_query(t) for t in batch]
        )
        return self._many([f"\0query\0{t}" for t in texts], lambda b: embed([t.split("\0", 2)[2] for t in b]))

    def _many(self, texts: Sequence[str], embed: Callable[[list[str]], Sequence[Sequence[float]]]) -> Any:
        keys = [hashlib.sha256(t.encode()).hexdigest()[:32] for t in texts]
        missing = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in self._vectors}.items())
        if missing:
            progress(f"embedding {len(missing)} texts with {self.name} (kept for next time)")
            for start in range(0, len(missing), 256):
                chunk = missing[start : start + 256]
                for (k, _), v in zip(chunk, embed([t for _, t in chunk]), strict=True):
                    self._vectors[k] = np.asarray(v, dtype=np.float32)
            self._dirty = True
            self.save()
        return np.stack([self._vectors[k] for k in keys]) if keys else np.zeros((0, self.dims), np.float32)

    def save(self) -> None:
        if self._dirty:
            self._file.parent.mkdir(parents=True, exist_ok=True)
            tmp = self._file.with_suffix(".tmp.npz")
            _savez(tmp, self._vectors)
            tmp.replace(self._file)
            self._dirty = False


def _savez(path: Path, arrays: Mapping[str, npt.NDArray[Any]]) -> None:
    save: Any = np.savez  # numpy's stub reads a ** of arrays as its allow_pickle flag
    save(path, **arrays)


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:80]


# -- the pools -------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Pool:
    """One question's two prefetched lists, as turn indexes and scores, best first."""

    dense: npt.NDArray[np.int32]
    dense_scores: npt.NDArray[np.float32]
    sparse: npt.NDArray[np.int32]
    sparse_scores: npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class Corpus:
    """Everything a ranking may read: the turns, their payloads' facts, BM25 vectors, dense vectors,
    the questions' vectors and each question's pool."""

    name: str
    turns: list[Turn]
    questions: list[Question]
    doc_dense: npt.NDArray[np.float32]  # (turns, dims)
    doc_sparse: list[tuple[tuple[int, ...], tuple[float, ...]]]  # each turn's BM25 (indices, weights)
    query_dense: npt.NDArray[np.float32]  # (questions, dims)
    query_sparse: list[tuple[int, ...]]  # each question's BM25 term ids
    pools: list[Pool]
    idf: dict[int, float]  # the collection's IDF per term, as the engine computes it


def point_ids(turns: Sequence[Turn]) -> list[str]:
    from sync.search.stores import point_id

    return [point_id(SITE, f"{t.conv}:{t.dia_id}") for t in turns]


def build(
    turns: Sequence[Turn],
    questions: Sequence[Question],
    embeddings: EmbeddingCache,
    key: str = "raw",
    *,
    dense_key: bool = True,
    query_text: Callable[[Question], str] | None = None,
    cache: Path = CACHE,
) -> Corpus:
    """The corpus under index key ``key`` (``dense_key``: the dense vectors too, else BM25 only),
    its pools read from a real EdgeStore; kept in ``cache`` keyed by everything it is built from."""
    from sync.search.embedders import bm25

    keyed = [KEYS[key](turns, i) for i in range(len(turns))]
    dense_texts = keyed if dense_key else [t.text for t in turns]
    asked = [query_text(q) if query_text else q.text for q in questions]
    digest = hashlib.sha256(
        json.dumps(
            [embeddings.name, POOL, [[t.conv, t.dia_id, t.ts_ms] for t in turns], keyed, dense_texts, asked]
        ).encode()
    ).hexdigest()[:12]
    file = cache / f"recall_pool-{key}{'' if dense_key else '-bm25only'}-{digest}.npz"
    doc_dense = embeddings.documents(dense_texts)
    query_dense = embeddings.queries(asked)
    doc_sparse = [(tuple(v.indices), tuple(v.values)) for v in (bm25.embed_document(t) for t in keyed)]
    query_sparse = [tuple(bm25.embed_query(t).indices) for t in asked]
    if not file.exists():
        _prefetch_all(file, turns, questions, keyed, doc_dense, query_dense, asked, embeddings)
    with np.load(file, allow_pickle=False) as held:
        pools = [Pool(held[f"d{i}"], held[f"ds{i}"], held[f"s{i}"], held[f"ss{i}"]) for i in range(len(questions))]
    return Corpus(
        f"{key}{'' if dense_key else ' (bm25 only)'}",
        list(turns),
        list(questions),
        doc_dense,
        doc_sparse,
        query_dense,
        query_sparse,
        pools,
        _idf(doc_sparse),
    )


def _idf(doc_sparse: Sequence[tuple[tuple[int, ...], tuple[float, ...]]]) -> dict[int, float]:
    """Qdrant's IDF (``Modifier.IDF``): ln(1 + (N - n + 0.5) / (n + 0.5)) over the collection."""
    counts: dict[int, int] = {}
    for indices, _ in doc_sparse:
        for term in indices:
            counts[term] = counts.get(term, 0) + 1
    n = len(doc_sparse)
    return {term: float(np.log(1 + (n - c + 0.5) / (c + 0.5))) for term, c in counts.items()}


def _prefetch_all(
    file: Path,
    turns: Sequence[Turn],
    questions: Sequence[Question],
    keyed: Sequence[str],
    doc_dense: npt.NDArray[np.float32],
    query_dense: npt.NDArray[np.float32],
    asked: Sequence[str],
    embeddings: EmbeddingCache,
) -> None:
    import tempfile

    from sync.search.embedders import bm25
    from sync.search.request import SearchFilter
    from sync.search.stores import EdgeStore, WarmPoint

    ids = point_ids(turns)
    index = {pid: i for i, pid in enumerate(ids)}
    progress(f"indexing {len(turns)} turns and prefetching {len(questions)} questions into {file.name}")
    with tempfile.TemporaryDirectory(prefix="recall-pool-") as tmp:
        store = EdgeStore(Path(tmp) / "qdrant")
        try:
            store.open_or_create("locomo", embeddings.name, embeddings.dims)
            points = [
                WarmPoint(pid, doc_dense[i].tolist(), bm25.embed_document(keyed[i]), payload(t))
                for i, (pid, t) in enumerate(zip(ids, turns, strict=True))
            ]
            for start in range(0, len(points), 500):
                store.upsert(points[start : start + 500])
            held: dict[str, npt.NDArray[Any]] = {}
            for qi, (q, text) in enumerate(zip(questions, asked, strict=True)):
                found = store.prefetch(
                    query_dense[qi].tolist(), bm25.embed_query(text), limit=POOL, filter=SearchFilter(tags=(q.conv,))
                )
                held[f"d{qi}"] = np.array([index[h.id] for h in found.dense], dtype=np.int32)
                held[f"ds{qi}"] = np.array([h.score for h in found.dense], dtype=np.float32)
                held[f"s{qi}"] = np.array([index[h.id] for h in found.sparse], dtype=np.int32)
                held[f"ss{qi}"] = np.array([h.score for h in found.sparse], dtype=np.float32)
        finally:
            store.close()
    file.parent.mkdir(parents=True, exist_ok=True)
    tmp_file = file.with_suffix(".tmp.npz")
    _savez(tmp_file, held)
    shutil.move(tmp_file, file)


def payload(t: Turn) -> dict[str, Any]:
    """What the indexer's payload holds for the turn's episode (``sync.search.indexing.passages.payload_for``)."""
    return {
        "site": SITE,
        "sourceId": f"{t.conv}:{t.dia_id}",
        "agent": AGENT,
        "session": f"{t.conv}-s{t.session}",
        "task": t.text.split("\n", 1)[0],
        "ts": t.ts_ms,
        "reward": 0,
        "success": False,
        "tags": [t.conv],
        "text": t.text,
    }
