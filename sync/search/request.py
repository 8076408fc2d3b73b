"""What a search asks for and what it answers, as plain data: the control socket's wire format.

Standard library only (and ``sync.search.payload``'s key names): ``memsync search`` builds a
request and reads the answer through a running daemon without importing the search pipeline (numpy,
the embedders, the vector stores).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Literal

from sync.search.payload import (
    AGENT_KEY,
    APPROVAL_STATUS_KEY,
    ARCHIVED_KEY,
    REWARD_KEY,
    SESSION_KEY,
    SITE_KEY,
    SOURCE_ID_KEY,
    SUCCESS_KEY,
    TAGS_KEY,
    TASK_KEY,
    TEXT_KEY,
    TS_KEY,
)

MAX_LIMIT: Final = 100
Mode = Literal["hybrid", "dense", "bm25"]
# SearchResult's fields under the names the backbone's episodes use (``memsync export``).
WIRE_NAMES: Final = {
    "id": "pointId",
    "site": "sourceSite",
    "source_id": "sourceId",
    "agent": "agentName",
    "session": "sessionId",
    "approval_status": "approvalStatus",
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

    def is_empty(self) -> bool:
        return self == SearchFilter()


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    limit: int = 10
    filter: SearchFilter = field(default_factory=SearchFilter)
    collapse: bool = True
    rerank: bool = False
    mmr: bool = False
    mode: Mode = "hybrid"  # dense-only and BM25-only exist to measure what hybrid buys

    def to_wire(self) -> dict[str, Any]:
        wire = asdict(self)
        wire["filter"] = {**asdict(self.filter), "tags": list(self.filter.tags)}
        return wire

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> SearchRequest:
        """A request from the control socket; ValueError names what is wrong with it."""
        try:
            flt = dict(data.get("filter") or {})
            request = cls(
                query=str(data["query"]),
                limit=int(data.get("limit", 10)),
                filter=SearchFilter(
                    site=flt.get("site"),
                    agent=flt.get("agent"),
                    session=flt.get("session"),
                    tags=tuple(str(t) for t in flt.get("tags") or ()),
                    since_ms=None if flt.get("since_ms") is None else int(flt["since_ms"]),
                    source_id=None if flt.get("source_id") is None else str(flt["source_id"]),
                ),
                collapse=bool(data.get("collapse", True)),
                rerank=bool(data.get("rerank", False)),
                mmr=bool(data.get("mmr", False)),
                mode=data.get("mode", "hybrid"),
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


@dataclass(frozen=True, slots=True)
class Passage:
    """The part of a long episode that matched best: passage ``index`` of ``count``, ``text[start:end]``
    of the result's text."""

    index: int
    count: int
    start: int
    end: int
    text: str


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
    passage: Passage | None = None  # a long episode's best-matching passage (None: one passage, the text)
    when: str | None = None  # ``ts`` in words (``when_words``)

    def to_wire(self) -> dict[str, Any]:
        """The result in the backbone's field names (``export`` uses the same): the control
        socket's format and ``search --json``'s."""
        return {WIRE_NAMES.get(name, name): value for name, value in asdict(self).items()}

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
        return cls(**fields)


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
    )


@dataclass(frozen=True, slots=True)
class RecentRequest:
    """The latest episodes under a filter, newest first."""

    limit: int = 10
    filter: SearchFilter = field(default_factory=SearchFilter)

    def to_wire(self) -> dict[str, Any]:
        return {"limit": self.limit, "filter": {**asdict(self.filter), "tags": list(self.filter.tags)}}

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
