"""What a search asks for and what it answers, as plain data: the control socket's wire format.

Standard library only (and ``sync.search.payload``'s key names): ``memsync search`` builds a
request and reads the answer through a running daemon without importing the search pipeline (numpy,
the embedders, the vector stores).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Final, Literal

from sync.search.payload import (
    AGENT_KEY,
    APPROVAL_STATUS_KEY,
    ARCHIVED_KEY,
    DREAM_KEY,
    REWARD_KEY,
    SESSION_KEY,
    SITE_KEY,
    SOURCE_ID_KEY,
    SUCCESS_KEY,
    TAGS_KEY,
    TASK_KEY,
    TEXT_KEY,
    TS_KEY,
    memory_type_of,
    task_key_of,
    type_given_of,
    written_entities,
)
from sync.source.type_names import check_type

MAX_LIMIT: Final = 100
# How a memory went, as a filter names it: ``success`` is a memory whose success is true, ``failure``
# one whose success is false (one that recorded neither matches no outcome filter).
OUTCOMES: Final = ("success", "failure")
Mode = Literal["hybrid", "dense", "bm25"]
Ranker = Literal["learned", "fusion", "dense", "bm25"]
# SearchResult's fields under the names the backbone's episodes use (``memsync export``).
WIRE_NAMES: Final = {
    "id": "pointId",
    "site": "sourceSite",
    "source_id": "sourceId",
    "agent": "agentName",
    "session": "sessionId",
    "approval_status": "approvalStatus",
    "memory_type": "memoryType",
    "type_given": "typeGiven",
    "task_key": "taskKey",
}


def when_words(ts_ms: int | None) -> str | None:
    """An episode's time as a person writes it, ``8 May 2023, 1:56 pm UTC``: an agent answering
    "when did ...?" reads the date, not a count of milliseconds."""
    if ts_ms is None:
        return None
    moment = datetime.fromtimestamp(ts_ms / 1000, tz=UTC)
    hour = moment.hour % 12 or 12
    return f"{moment.day} {moment:%B %Y}, {hour}:{moment:%M} {'am' if moment.hour < 12 else 'pm'} UTC"


def _int(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass(frozen=True, slots=True)
class SearchFilter:
    """Conditions every hit must meet (all of them); ``tags`` matches a point carrying any of them."""

    site: str | None = None
    agent: str | None = None
    session: str | None = None
    tags: tuple[str, ...] = field(default=())
    since_ms: int | None = None
    # One episode's points (its first and its passages) by its key: an adopted episode lives under
    # its seed's point id, not the one memsync derives from the key (``sync.search.query.browse``).
    source_id: str | None = None
    # Memory types (``sync.source.types``), any of them: read from each point after the store's
    # filter, so that points indexed before types existed are typed by the same rules.
    types: tuple[str, ...] = field(default=())
    # The memories a standing dream step hides (a fold's members, superseded facts) are left out
    # unless asked for (``--include-merged``).
    include_merged: bool = False
    # How it went (``OUTCOMES``): read from each point after the store's filter, as the types are:
    # qdrant-edge-py 0.9.0 matches no point with MatchValue(True) on the bool-indexed ``success``
    # field (tried: 3 points, 2 true, none found), so the store is not asked to.
    outcome: str | None = None

    def is_empty(self) -> bool:
        """No condition but the default one (hidden memories left out)."""
        return replace(self, include_merged=False) == SearchFilter()


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    limit: int = 10
    filter: SearchFilter = field(default_factory=SearchFilter)
    collapse: bool = True
    rerank: bool = False
    mmr: bool = False
    mode: Mode = "hybrid"  # dense-only and BM25-only exist to measure what hybrid buys
    # The least relevance a result needs to be shown (``sync.search.query.judgement``): None, the
    # default floor; 0, every result up to ``limit`` (``--all``). ``limit`` is a maximum either way.
    floor: float | None = None
    # Follow one hop from the best hits: their session's neighbours (``sync.search.query.hops``).
    follow: bool = False

    def to_wire(self) -> dict[str, Any]:
        wire = asdict(self)
        wire["filter"] = _filter_wire(self.filter)
        return wire

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> SearchRequest:
        """A request from the control socket; ValueError names what is wrong with it."""
        try:
            request = cls(
                query=str(data["query"]),
                limit=int(data.get("limit", 10)),
                filter=_filter_from_wire(data),
                collapse=bool(data.get("collapse", True)),
                rerank=bool(data.get("rerank", False)),
                mmr=bool(data.get("mmr", False)),
                mode=data.get("mode", "hybrid"),
                floor=None if data.get("floor") is None else float(data["floor"]),
                follow=bool(data.get("follow", False)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"malformed search request: {exc}") from None
        request.check()
        return request

    def check(self) -> None:
        if not self.query.strip():
            raise ValueError("the query is empty")
        if not 1 <= self.limit <= MAX_LIMIT:
            raise ValueError(f"limit must be 1..{MAX_LIMIT}, got {self.limit}")
        if self.mode not in ("hybrid", "dense", "bm25"):
            raise ValueError(f"mode must be hybrid, dense or bm25, got {self.mode!r}")
        if self.floor is not None and not 0.0 <= self.floor <= 1.0:
            raise ValueError(f"the relevance floor must be within 0..1, got {self.floor:g}")
        check_outcome(self.filter.outcome)


def check_outcome(outcome: str | None) -> str | None:
    """``outcome`` if it is one of ``OUTCOMES`` (or None: any); ValueError otherwise."""
    if outcome is not None and outcome not in OUTCOMES:
        raise ValueError(f"outcome must be {' or '.join(OUTCOMES)}, got {outcome!r}")
    return outcome


def outcome_matches(outcome: str | None, payload: Mapping[str, Any]) -> bool:
    """Whether a point's payload meets an outcome filter (None: any point does)."""
    if outcome is None:
        return True
    success = payload.get(SUCCESS_KEY)
    return isinstance(success, bool) and success is (outcome == "success")


@dataclass(frozen=True, slots=True)
class Passage:
    """The part of a long episode that matched best: passage ``index`` of ``count``, ``text[start:end]``
    of the result's text."""

    index: int
    count: int
    start: int
    end: int
    text: str


# Why's fields under the wire's names (camel case, as the rest of a result's).
_WHY_WIRE: Final = {
    "meaning_rank": "meaningRank",
    "keyword_rank": "keywordRank",
    "in_window": "inWindow",
    "session_of": "sessionOf",
}


@dataclass(frozen=True, slots=True)
class Why:
    """Why a result ranked where it did, and what its relevance was judged from
    (``sync.search.query.judgement``): plain facts about the hit, shown in place of a raw score."""

    ranker: Ranker  # what ordered the results: the learned model, the hand-weighted fusion, one list alone
    score: float = 0.0  # the ranker's score (learned: its probability; fusion: relative, within the query)
    exact: tuple[str, ...] = ()  # identifiers the query names that the memory holds verbatim
    lookalike: tuple[str, ...] = ()  # identifiers it holds that look like a named one it does not hold
    terms: int = 0  # the query's BM25 terms the matched passage holds ...
    of: int = 0  # ... of the query's BM25 terms
    words: tuple[str, ...] = ()  # those terms, as the query spells them
    meaning: float | None = None  # cosine of the matched passage to the query (None: not compared)
    lead: float | None = None  # that cosine minus the median cosine of the query's nearest memories
    meaning_rank: int | None = None  # place among the query's nearest in meaning (1 = first; None: not there)
    keyword_rank: int | None = None  # place in the BM25 list (1 = first; None: shares no term)
    in_window: bool = False  # its time lies in a time the query names ("last week", "in June 2023")
    session_of: int | None = None  # the number of an earlier result of the same session

    def to_wire(self) -> dict[str, Any]:
        return {_WHY_WIRE.get(name, name): value for name, value in asdict(self).items()}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Why:
        fields = {name: data.get(_WHY_WIRE.get(name, name)) for name in cls.__dataclass_fields__}
        return cls(
            ranker=fields["ranker"] or "fusion",
            score=float(fields["score"] or 0.0),
            exact=tuple(fields["exact"] or ()),
            lookalike=tuple(fields["lookalike"] or ()),
            terms=int(fields["terms"] or 0),
            of=int(fields["of"] or 0),
            words=tuple(fields["words"] or ()),
            meaning=fields["meaning"],
            lead=fields["lead"],
            meaning_rank=fields["meaning_rank"],
            keyword_rank=fields["keyword_rank"],
            in_window=fields["in_window"] is True,
            session_of=fields["session_of"],
        )


@dataclass(frozen=True, slots=True)
class SearchResult:
    id: str
    site: str
    source_id: str
    score: float
    similarity: float | None
    ts: int | None
    agent: str | None
    session: str | None
    task: str | None
    tags: list[str]
    reward: float | None
    success: bool | None
    text: str
    duplicates: int = 0  # near-duplicates collapsed into this result
    archived: bool = False  # its body is in the cold archive (``memsync archive restore`` brings it back)
    approval_status: str | None = None  # the decision on an approval about it, if one was asked
    memory_type: str | None = None  # sync.source.types: given by its writer or read by the rules
    dream: str | None = None  # "merged" | "superseded": a standing dream step hides it (shown on request)
    type_given: bool | None = None  # whether its writer gave the type (None: an older daemon's answer)
    # sync.source.entities: the identifiers it names, as written when indexed (None: indexed before
    # them; reading them from the text here would cost the context hook milliseconds a result).
    entities: list[str] | None = None
    task_key: str | None = None  # sync.source.entities: its task's normalised hash ("" without a task)
    passage: Passage | None = None  # a long episode's best-matching passage (None: one passage, the text)
    when: str | None = None  # ``ts`` in words (``when_words``)
    # The probability that it is relevant, comparable across queries (``sync.search.query.judgement``);
    # None where it is not judged (``--mode dense|bm25``, an episode read without a query).
    relevance: float | None = None
    why: Why | None = None  # why it ranked (None: read without a query)

    def to_wire(self) -> dict[str, Any]:
        """The result in the backbone's field names (``export`` uses the same): the control
        socket's format and ``search --json``'s."""
        wire = {WIRE_NAMES.get(name, name): value for name, value in asdict(self).items() if name != "why"}
        wire["why"] = None if self.why is None else self.why.to_wire()
        return wire

    @classmethod
    def from_payload(
        cls,
        point: str,
        payload: Mapping[str, Any],
        *,
        score: float = 0.0,
        similarity: float | None = None,
        duplicates: int = 0,
        passage: Passage | None = None,
    ) -> SearchResult:
        """An episode's point payload as a result: a search's hit, or an episode read without a
        query (``sync.search.query.browse``: score 0, no similarity)."""
        reward = payload.get(REWARD_KEY)
        success = payload.get(SUCCESS_KEY)
        ts = _int(payload.get(TS_KEY))
        approval = payload.get(APPROVAL_STATUS_KEY)
        return cls(
            id=point,
            site=str(payload.get(SITE_KEY, "")),
            source_id=str(payload.get(SOURCE_ID_KEY, "")),
            score=score,
            similarity=similarity,
            ts=ts,
            agent=payload.get(AGENT_KEY),
            session=payload.get(SESSION_KEY),
            task=payload.get(TASK_KEY),
            tags=[str(t) for t in payload.get(TAGS_KEY) or []],
            reward=float(reward) if isinstance(reward, int | float) and not isinstance(reward, bool) else None,
            success=success if isinstance(success, bool) else None,
            text=str(payload.get(TEXT_KEY, "")),
            duplicates=max(0, duplicates),
            archived=payload.get(ARCHIVED_KEY) is True,
            approval_status=str(approval) if approval else None,
            memory_type=memory_type_of(payload),
            dream=str(payload[DREAM_KEY]) if payload.get(DREAM_KEY) else None,
            type_given=type_given_of(payload),
            entities=written_entities(payload),
            task_key=task_key_of(payload),
            passage=passage,
            when=when_words(ts),
        )

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> SearchResult:
        fields: dict[str, Any] = {name: data.get(WIRE_NAMES.get(name, name)) for name in cls.__dataclass_fields__}
        fields["archived"] = fields.get("archived") is True  # absent from an older daemon's answer
        fields["duplicates"] = fields.get("duplicates") or 0
        passage = fields.get("passage")
        fields["passage"] = Passage(**passage) if isinstance(passage, Mapping) else None
        why = fields.get("why")
        fields["why"] = Why.from_wire(why) if isinstance(why, Mapping) else None
        return cls(**fields)


@dataclass(frozen=True, slots=True)
class SearchAnswer:
    """What a search answers: its results, best first, and what the judgement says beside them."""

    results: list[SearchResult]
    cut: int = 0  # results among the first ``limit`` under the floor, not shown
    floor: float | None = None  # the relevance floor applied (None: none, the mode judges no relevance)
    named: tuple[str, ...] = ()  # the identifiers the query names (``sync.identifiers``)
    absent: tuple[str, ...] = ()  # those no memory searched holds (under the request's filter)
    unchecked: tuple[str, ...] = ()  # those too common a word to check every memory for
    lookalikes: tuple[str, ...] = ()  # identifiers results hold (shown or cut) that look like an absent one

    def to_wire(self) -> dict[str, Any]:
        return {
            "results": [r.to_wire() for r in self.results],
            "cut": self.cut,
            "floor": self.floor,
            "named": list(self.named),
            "absent": list(self.absent),
            "unchecked": list(self.unchecked),
            "lookalikes": list(self.lookalikes),
        }

    @classmethod
    def from_wire(cls, data: Any) -> SearchAnswer:
        """An answer from the control socket; a list is a daemon older than the judgement's, whose
        answer was its results."""
        if isinstance(data, list):
            return cls([SearchResult.from_wire(r) for r in data if isinstance(r, Mapping)])
        if not isinstance(data, Mapping):
            raise ValueError(f"a search answer is an object, got {type(data).__name__}")  # noqa: TRY004 - what from_wire raises
        floor = data.get("floor")
        return cls(
            results=[SearchResult.from_wire(r) for r in data.get("results") or () if isinstance(r, Mapping)],
            cut=int(data.get("cut") or 0),
            floor=None if floor is None else float(floor),
            named=tuple(str(n) for n in data.get("named") or ()),
            absent=tuple(str(n) for n in data.get("absent") or ()),
            unchecked=tuple(str(n) for n in data.get("unchecked") or ()),
            lookalikes=tuple(str(n) for n in data.get("lookalikes") or ()),
        )


# --- episodes read without a query (``sync.search.query.browse``): the ``recent`` and ``episode`` ops

MAX_NEIGHBOURS: Final = 20


def _filter_from_wire(data: Mapping[str, Any]) -> SearchFilter:
    flt = dict(data.get("filter") or {})
    return SearchFilter(
        site=flt.get("site"),
        agent=flt.get("agent"),
        session=flt.get("session"),
        tags=tuple(str(t) for t in flt.get("tags") or ()),
        since_ms=None if flt.get("since_ms") is None else int(flt["since_ms"]),
        source_id=None if flt.get("source_id") is None else str(flt["source_id"]),
        types=tuple(check_type(str(t)) for t in flt.get("types") or ()),
        include_merged=bool(flt.get("include_merged", False)),
        outcome=check_outcome(None if flt.get("outcome") is None else str(flt["outcome"])),
    )


def _filter_wire(flt: SearchFilter) -> dict[str, Any]:
    return {**asdict(flt), "tags": list(flt.tags), "types": list(flt.types)}


@dataclass(frozen=True, slots=True)
class RecentRequest:
    """The latest episodes under a filter, newest first."""

    limit: int = 10
    filter: SearchFilter = field(default_factory=SearchFilter)

    def to_wire(self) -> dict[str, Any]:
        return {"limit": self.limit, "filter": _filter_wire(self.filter)}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> RecentRequest:
        """ValueError names what is wrong with it."""
        try:
            request = cls(limit=int(data.get("limit", 10)), filter=_filter_from_wire(data))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"malformed recent request: {exc}") from None
        request.check()
        return request

    def check(self) -> None:
        if not 1 <= self.limit <= MAX_LIMIT:
            raise ValueError(f"limit must be 1..{MAX_LIMIT}, got {self.limit}")


@dataclass(frozen=True, slots=True)
class EpisodeRequest:
    """One episode, by its point id or by (site, sourceId), and up to ``neighbours`` episodes of its
    session on each side of it."""

    id: str | None = None
    site: str | None = None
    source_id: str | None = None
    neighbours: int = 3

    def to_wire(self) -> dict[str, Any]:
        return {"id": self.id, "site": self.site, "sourceId": self.source_id, "neighbours": self.neighbours}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> EpisodeRequest:
        """ValueError names what is wrong with it."""
        try:
            request = cls(
                id=None if data.get("id") is None else str(data["id"]),
                site=None if data.get("site") is None else str(data["site"]),
                source_id=None if data.get("sourceId") is None else str(data["sourceId"]),
                neighbours=int(data.get("neighbours", 3)),
            )
        except (TypeError, ValueError) as exc:
            raise ValueError(f"malformed episode request: {exc}") from None
        request.check()
        return request

    def check(self) -> None:
        by_id = bool(self.id and self.id.strip())
        by_source = bool(self.site and self.source_id)
        if by_id == by_source:
            raise ValueError("name the episode by its id (pointId), or by its site and sourceId, not both")
        if not 0 <= self.neighbours <= MAX_NEIGHBOURS:
            raise ValueError(f"neighbours must be 0..{MAX_NEIGHBOURS}, got {self.neighbours}")


@dataclass(frozen=True, slots=True)
class EpisodeView:
    """An episode (None: no such episode in the index) and its session's episodes just before and
    just after it, each list in time order."""

    episode: SearchResult | None
    before: list[SearchResult] = field(default_factory=list)
    after: list[SearchResult] = field(default_factory=list)

    def to_wire(self) -> dict[str, Any]:
        return {
            "episode": None if self.episode is None else self.episode.to_wire(),
            "before": [r.to_wire() for r in self.before],
            "after": [r.to_wire() for r in self.after],
        }

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> EpisodeView:
        found = data.get("episode")
        return cls(
            episode=SearchResult.from_wire(found) if isinstance(found, Mapping) else None,
            before=[SearchResult.from_wire(r) for r in data.get("before") or ()],
            after=[SearchResult.from_wire(r) for r in data.get("after") or ()],
        )
