"""The ``context`` op's request and answer on the control socket: what a hook asks the daemon to
compose (``BlockAsk``) and what it gets back (``BlockReply``), as plain data.

Standard library only: the hook's client imports this and the socket, nothing of the search, so
that an agent's prompt pays for a Python start and one round trip. The daemon, which has the search
loaded, runs the search, the project's latest episodes and the composition in one request
(``daemon.context.answer.compose_reply``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class BlockAsk:
    """A block for ``query``: ``limit`` results weighed, the ``project``'s latest episodes too when
    named, only memories of ``types`` when given, within ``budget`` characters; ``start``: a
    session's first block; ``exclude``: point ids the session was given already. With a ``tool``
    (and its hook ``event``) the answer is that tool's hook stdout, fitted to the tool's cap."""

    query: str
    limit: int
    budget: int
    project: str | None = None
    types: tuple[str, ...] = ()
    start: bool = False
    exclude: tuple[str, ...] = ()
    tool: str | None = None
    event: str = ""

    def to_wire(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "limit": self.limit,
            "budget": self.budget,
            "project": self.project,
            "types": list(self.types),
            "start": self.start,
            "exclude": list(self.exclude),
            "tool": self.tool,
            "event": self.event,
        }

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> BlockAsk:
        """ValueError naming the field for anything malformed (the daemon answers it as invalid)."""
        query = wire.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ValueError("a context request needs a query (text)")
        numbers = {}
        for name in ("limit", "budget"):
            value = wire.get(name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"a context request's {name} must be a positive whole number, got {value!r}")
            numbers[name] = value
        project, tool = wire.get("project"), wire.get("tool")
        return cls(
            query=query,
            limit=numbers["limit"],
            budget=numbers["budget"],
            project=str(project) if project else None,
            types=tuple(str(t) for t in wire.get("types") or ()),
            start=bool(wire.get("start")),
            exclude=tuple(str(i) for i in wire.get("exclude") or ()),
            tool=str(tool) if tool else None,
            event=str(wire.get("event") or ""),
        )


@dataclass(frozen=True, slots=True)
class BlockReply:
    """The block's ``text`` ("" : nothing to give), the tool's stdout for it (``out``, with a tool),
    the point ids of the memories in it, their memory keys (``handed``: site and source id, for the
    use spool), and why the daemon could not give the project's latest episodes, if it could not."""

    text: str
    out: str = ""
    ids: tuple[str, ...] = ()
    handed: tuple[tuple[str, str], ...] = field(default=())
    recent_refused: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "out": self.out,
            "ids": list(self.ids),
            "handed": [list(k) for k in self.handed],
            "recentRefused": self.recent_refused,
        }

    @classmethod
    def from_wire(cls, wire: Any) -> BlockReply:
        """The daemon's answer; ValueError when it is not one."""
        if not isinstance(wire, Mapping) or not isinstance(wire.get("text"), str):
            raise ValueError("the daemon's context answer is not a block")  # noqa: TRY004 - a wire answer, said as bad data
        handed = tuple((str(k[0]), str(k[1])) for k in wire.get("handed") or () if isinstance(k, list) and len(k) == 2)
        refused = wire.get("recentRefused")
        return cls(
            text=wire["text"],
            out=str(wire.get("out") or ""),
            ids=tuple(str(i) for i in wire.get("ids") or ()),
            handed=handed,
            recent_refused=str(refused) if refused is not None else None,
        )


__all__ = ["BlockAsk", "BlockReply"]
