"""Convex as ``Dreams`` (``dreams.ts``): the dream cycle's steps, links and marks, every site's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sync.backbone.convex.connection import ConvexConnection
from sync.backbone.dreams import DreamLink, DreamStep, Key, NewStep, check_steps
from sync.errors import BackboneRejected

MAX_STEPS_A_CALL = 200  # dreams.ts's MAX_STEPS


def _key(value: Mapping[str, Any]) -> Key:
    return str(value["site"]), str(value["sourceId"])


def _wire(key: Key) -> dict[str, str]:
    return {"site": key[0], "sourceId": key[1]}


def step_of(value: Mapping[str, Any]) -> DreamStep:
    return DreamStep(
        step_id=str(value["stepId"]),
        kind=str(value["kind"]),
        canonical=_key(value["canonical"]),
        members=tuple(_key(m) for m in value["members"]),
        at=int(value["at"]),
        run=str(value["run"]),
        reason=str(value["reason"]),
        undone_at=None if value.get("undoneAt") is None else int(value["undoneAt"]),
        undone_by=value.get("undoneBy"),
        synthesis=value.get("synthesis"),
    )


class ConvexDreams(ConvexConnection):
    def record_dream(self, steps: Sequence[NewStep], run: str) -> list[DreamStep]:
        try:
            check_steps(steps)
        except ValueError as exc:
            raise BackboneRejected(str(exc)) from None
        done: list[DreamStep] = []
        for start in range(0, len(steps), MAX_STEPS_A_CALL):
            wire = [
                {
                    "kind": s.kind,
                    "canonical": _wire(s.canonical),
                    "members": [_wire(m) for m in s.members],
                    "reason": s.reason,
                    **({} if s.synthesis is None else {"synthesis": dict(s.synthesis)}),
                }
                for s in steps[start : start + MAX_STEPS_A_CALL]
            ]
            done += [step_of(v) for v in self.call("mutation", "dreams:record", {"run": run, "steps": wire})]
        return done

    def undo_dream_step(self, step_id: str, by: str) -> DreamStep:
        return step_of(self.call("mutation", "dreams:undo", {"stepId": step_id, "by": by}))

    def dream_steps(self, *, standing_only: bool = False, limit: int | None = None) -> list[DreamStep]:
        args: dict[str, Any] = {"standingOnly": standing_only}
        if limit is not None:
            args["limit"] = limit
        return [step_of(v) for v in self.call("query", "dreams:steps", args)]

    def dream_links(self, key: Key) -> list[DreamLink]:
        rows = self.call("query", "dreams:links", {"of": _wire(key)})
        return [DreamLink(_key(r["source"]), _key(r["target"]), str(r["kind"]), str(r["stepId"])) for r in rows]
