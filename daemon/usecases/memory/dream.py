"""The dream cycle as people and the scheduler run it: read every memory, embed it, plan
(``sync.dream.plan``, pure), record the steps (``sync.backbone.dreams.Dreams``), say what the night
did; and undo a step (``memsync unmerge``). Nothing here deletes a memory.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from daemon.counts import counted
from sync.backbone.dreams import CONSOLIDATES, Dreams, DreamStep, Key, NewStep
from sync.dream.plan import DreamPlan, Memory, Thresholds, plan
from sync.dream.steps import standing, steps_of
from sync.dream.synthesis import Writer, synthesize
from sync.errors import MemsyncError
from sync.search.indexing.text import episode_text

if TYPE_CHECKING:
    from daemon.config import Settings
    from sync.backbone.base import Change, EpisodeSink
    from sync.search.embedders.base import Embedder

log = structlog.get_logger("memsync.dream")
EMBED_BATCH = 64
DEFAULT_THRESHOLDS = Thresholds()


FEED_PAGE = 500


class DreamBackbone(Dreams, Protocol):
    """What the dream reads and writes: every site's memories through the change feed (on Convex a
    site's export is its own), and the dream's records."""

    def changes(self, after: int, limit: int) -> list[Change]: ...


def every_memory(feed: DreamBackbone) -> Iterator[Mapping[str, Any]]:
    """Every site's hot episodes as the feed gives them (each key once, as it now is)."""
    latest: dict[tuple[str, str], Mapping[str, Any] | None] = {}
    after = 0
    while page := feed.changes(after, FEED_PAGE):
        for change in page:
            latest[(change.site, change.source_id)] = change.episode
        after = page[-1].seq
    yield from (e for e in latest.values() if e is not None)


@dataclass(frozen=True, slots=True)
class DreamRun:
    plan: DreamPlan
    recorded: tuple[DreamStep, ...]  # empty for a dry run
    dry_run: bool
    memories: int  # every memory read
    seconds: Mapping[str, float]  # read, embed, plan, record

    @property
    def summary(self) -> str:
        """One line for the job's run record and the digest."""
        folds = [s for s in self.recorded if s.kind == "consolidates"] if not self.dry_run else list(self.plan.folds)
        folded = sum(len(s.members) for s in folds)
        superseded = (
            len([s for s in self.recorded if s.kind == "supersedes"]) if not self.dry_run else len(self.plan.supersedes)
        )
        verb = "would fold" if self.dry_run else "folded"
        return (
            f"{verb} {folded} of {counted(self.memories, 'memory', 'memories')} into "
            f"{counted(len(folds), 'canonical one', 'canonical ones')}; "
            f"{'would supersede' if self.dry_run else 'superseded'} {superseded}"
        )


def memories_of(episodes: Iterable[Mapping[str, Any]]) -> list[Memory]:
    """The memories the dream considers: every hot episode with text."""
    out: list[Memory] = []
    for e in episodes:
        try:
            text = episode_text(e)
        except TypeError:
            continue  # a field that is not text: never folded rather than guessed at
        if not text.strip():
            continue
        ts = e.get("ts") if isinstance(e.get("ts"), int) else e.get("createdAt")
        reward = e.get("reward")
        out.append(
            Memory(
                (str(e["sourceSite"]), str(e["sourceId"])),
                text,
                int(ts) if isinstance(ts, (int, float)) else 0,
                e.get("success") if isinstance(e.get("success"), bool) else None,
                float(reward) if isinstance(reward, (int, float)) and not isinstance(reward, bool) else None,
            )
        )
    return out


def dream(
    backbone: DreamBackbone,
    embedder: Embedder,
    *,
    now_ms: int,
    run: str,
    dry_run: bool = False,
    salience: Mapping[Key, float] | None = None,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    clock: Callable[[], float] = time.perf_counter,
    writer: Writer | None = None,
) -> DreamRun:
    """One night: ``run`` names it in every step recorded (``<job>@<slot> on <site>``). With a
    ``writer``, each fold recorded carries a synthesis of its memories (a fold whose synthesis
    fails is recorded without one: the night goes on)."""
    started = clock()
    memories = memories_of(every_memory(backbone))
    earlier = standing(backbone.dream_steps())
    candidates = [m for m in memories if m.key not in earlier.hidden]
    read = clock()
    vectors: list[list[float]] = []
    texts = [m.text for m in candidates]
    for start in range(0, len(texts), EMBED_BATCH):
        vectors += embedder.embed_documents(texts[start : start + EMBED_BATCH])
    embedded = clock()
    planned = plan(candidates, vectors, now_ms=now_ms, standing=earlier, salience=salience, thresholds=thresholds)
    decided = clock()
    steps = steps_of(planned)
    if writer is not None and not dry_run:
        text_of = {m.key: m.text for m in candidates}
        steps = [_synthesized(s, writer, text_of) for s in steps]
    recorded = () if dry_run else tuple(backbone.record_dream(steps, run))
    done = clock()
    seconds = {"read": read - started, "embed": embedded - read, "plan": decided - embedded, "record": done - decided}
    return DreamRun(planned, recorded, dry_run, len(memories), seconds)


def _synthesized(step: NewStep, writer: Writer, text_of: Mapping[Key, str]) -> NewStep:
    if step.kind != CONSOLIDATES:
        return step
    try:
        made = synthesize(writer, [text_of[k] for k in (step.canonical, *step.members)])
    except MemsyncError as exc:
        log.warning("no synthesis for a fold", canonical=f"{step.canonical[0]}:{step.canonical[1]}", error=str(exc))
        return step
    return replace(step, synthesis=made.as_json())


def writer_of(settings: Settings) -> Writer | None:
    """The configured synthesis model (``[dream]``), or None when it is off."""
    from sync.dream.writers import GeminiWriter, OpenAICompatibleWriter

    dream = settings.dream
    key = None if dream.api_key is None else dream.api_key.get_secret_value()
    if dream.synthesis == "openai" and dream.base_url:
        return OpenAICompatibleWriter(dream.base_url, dream.model, key)
    if dream.synthesis == "gemini" and key:
        return GeminiWriter(dream.model, key, base_url=dream.base_url)
    return None


def naming(steps: Iterable[DreamStep], key: Key) -> list[DreamStep]:
    """The steps that name ``key``, as their canonical (what it consolidated or superseded) or as a
    member (what folded or superseded it), in the order given."""
    return [s for s in steps if s.canonical == key or key in s.members]


def steps(backbone: Dreams, *, standing_only: bool = False, memory: Key | None = None) -> list[DreamStep]:
    """The dream's steps, newest first (``memsync dream steps``; a memory's page): only those not
    undone with ``standing_only``; only those that name ``memory``, if given."""
    found = backbone.dream_steps(standing_only=standing_only)
    return found if memory is None else naming(found, memory)


def unmerge(backbone: Dreams, step_id: str, by: str) -> DreamStep:
    """Undo one step exactly (``Dreams.undo_dream_step``)."""
    return backbone.undo_dream_step(step_id, by)


def dream_job(settings: Settings, backbone: EpisodeSink, now_ms: int, run: str, dry_run: bool = False) -> DreamRun:
    """The scheduled job's and ``memsync dream``'s run: the configured embedder, opened for the run
    and let go after it."""
    from daemon.search_worker.wiring import open_embedder

    embedder = open_embedder(settings)
    writer = None if dry_run else writer_of(settings)
    try:
        return dream(backbone, embedder, now_ms=now_ms, run=run, dry_run=dry_run, writer=writer)  # type: ignore[arg-type]
    finally:
        if writer is not None:
            writer.close()
        del embedder
