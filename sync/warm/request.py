"""What a search asks for and what it answers, as plain data: the control socket's wire format.

Standard library only: ``memsync search`` builds a request and reads the answer through a running
daemon without importing the search pipeline (numpy, the embedders, the vector stores).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Literal

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


@dataclass(frozen=True, slots=True)
class SearchFilter:
    """Conditions every hit must meet (all of them); ``tags`` matches a point carrying any of them."""

    site: str | None = None
    agent: str | None = None
    session: str | None = None
    tags: tuple[str, ...] = field(default=())
    since_ms: int | None = None

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
    def from_wire(cls, data: Mapping[str, Any]) -> SearchResult:
        fields: dict[str, Any] = {name: data.get(WIRE_NAMES.get(name, name)) for name in cls.__dataclass_fields__}
        fields["archived"] = fields.get("archived") is True  # absent from an older daemon's answer
        fields["duplicates"] = fields.get("duplicates") or 0
        passage = fields.get("passage")
        fields["passage"] = Passage(**passage) if isinstance(passage, Mapping) else None
        return cls(**fields)
