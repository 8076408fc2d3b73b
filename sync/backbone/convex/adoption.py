"""Adopting a deployment the seed design filled (``cloud_functions/adopt.ts``), with the operator's
deploy key: what it holds by shape (a survey, which changes nothing), and the migration's batches,
forward and back. The summary of a survey and what it says a run would do are pure (``summarise``,
``would_do``); ``SeedAdoption`` is the I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sync.backbone.convex.operator import ConvexOperator

# The tables the seed design had (adopt.ts SEED_TABLES), in the order a report lists them.
SEED_TABLES = ("episodes", "approvals", "tasks", "agents", "syncCursors", "collaborators")
MAX_BATCH = 500  # adopt.ts MAX_BATCH


@dataclass(frozen=True, slots=True)
class Survey:
    """A deployment's seed tables by document shape: "seed" (as the seed wrote it), "adopted"
    (adopted, waiting for its site's first push), "archived", "memsync"."""

    shapes: Mapping[str, Mapping[str, int]]
    seed_sites: tuple[str, ...] = ()  # the sites the seed's episodes came from
    seed_points: int = 0  # seed episodes with a point id memsync's index can write
    unregistered: tuple[str, ...] = ()  # of those sites, the ones with no `sites` row yet

    def count(self, table: str, shape: str) -> int:
        return int(self.shapes.get(table, {}).get(shape, 0))


def summarise(pages: Mapping[str, Iterable[Mapping[str, Any]]], unregistered: Iterable[str] = ()) -> Survey:
    """One ``Survey`` from the survey's pages of every table."""
    shapes: dict[str, Counter[str]] = {}
    sites: set[str] = set()
    points = 0
    for table, table_pages in pages.items():
        counts = shapes.setdefault(table, Counter())
        for page in table_pages:
            counts.update({str(k): int(v) for k, v in page["shapes"].items()})
            sites.update(page.get("seedSites", ()))
            points += int(page.get("seedPoints", 0))
    return Survey(
        {t: dict(c) for t, c in shapes.items()}, tuple(sorted(sites)), points, tuple(sorted(set(unregistered)))
    )


def would_do(survey: Survey) -> list[str]:
    """What ``memsync adopt`` would change, one sentence each (nothing: an empty list)."""
    lines = []
    seed = survey.count("episodes", "seed")
    if seed:
        carried = f", {survey.seed_points} of them keeping their Qdrant point id" if survey.seed_points else ""
        lines.append(f"adopt {seed} seed episodes into memsync's shape{carried}")
    tasks = survey.count("tasks", "seed")
    if tasks:
        lines.append(f"give {tasks} tasks their site (from their approval, or their agent's one site)")
    return lines


@dataclass(slots=True)
class Progress:
    """A run's counts so far."""

    adopted: int = 0
    placed: int = 0
    unplaced: int = 0
    undone: int = 0
    tasks_undone: int = 0
    batches: int = 0


class SeedAdoption:
    """The migration's functions, called with the deploy key (internal functions)."""

    def __init__(self, operator: ConvexOperator) -> None:
        self.operator = operator

    @property
    def url(self) -> str:
        return self.operator.url

    def survey(self, *, limit: int = MAX_BATCH) -> Survey:
        pages: dict[str, list[Mapping[str, Any]]] = {}
        for table in SEED_TABLES:
            after: str | None = None
            pages[table] = []
            while True:
                page = self.operator.call("query", "adopt:survey", {"table": table, "after": after, "limit": limit})
                pages[table].append(page)
                after = page.get("next")
                if after is None:
                    break
        sites = sorted({s for page in pages["episodes"] for s in page.get("seedSites", ())})
        unregistered = self.operator.call("query", "adopt:unregistered", {"sites": sites}) if sites else []
        return summarise(pages, unregistered)

    def adopt(
        self, progress: Progress, *, limit: int, stop: Callable[[], bool], tick: Callable[[Progress], None]
    ) -> bool:
        """Seed episodes adopted, then tasks placed, a batch a call, until none is left (True) or
        ``stop()`` (False: run it again, it goes on where it stopped)."""

        def episodes(step: dict[str, Any]) -> None:
            progress.adopted += int(step["adopted"])

        def tasks(page: dict[str, Any]) -> None:
            progress.placed += int(page["placed"])
            progress.unplaced += int(page["unplaced"])

        return self._episodes_then_tasks(
            ("adopt:adoptEpisodes", episodes), ("adopt:placeTasks", tasks), progress, limit=limit, stop=stop, tick=tick
        )

    def undo(
        self, progress: Progress, *, limit: int, stop: Callable[[], bool], tick: Callable[[Progress], None]
    ) -> bool:
        """Every hot episode back to the seed's shape, then tasks without a site; True when done."""

        def episodes(step: dict[str, Any]) -> None:
            progress.undone += int(step["undone"])

        def tasks(page: dict[str, Any]) -> None:
            progress.tasks_undone += int(page["unplaced"])

        return self._episodes_then_tasks(
            ("adopt:undoEpisodes", episodes), ("adopt:unplaceTasks", tasks), progress, limit=limit, stop=stop, tick=tick
        )

    def _episodes_then_tasks(
        self,
        episodes: tuple[str, Callable[[dict[str, Any]], None]],
        tasks: tuple[str, Callable[[dict[str, Any]], None]],
        progress: Progress,
        *,
        limit: int,
        stop: Callable[[], bool],
        tick: Callable[[Progress], None],
    ) -> bool:
        """The episodes' mutation until it says there are no more (each call a batch, resumable
        because what is left is an index range), then the tasks' pages; False when ``stop()``."""
        mutation, count = episodes
        while not stop():
            step = self.operator.call("mutation", mutation, {"limit": limit})
            count(step)
            progress.batches += 1
            tick(progress)
            if not step["more"]:
                break
        else:
            return False
        mutation, count = tasks
        after: str | None = None
        while not stop():
            page = self.operator.call("mutation", mutation, {"after": after, "limit": limit})
            count(page)
            tick(progress)
            after = page.get("next")
            if after is None:
                return True
        return False

    def close(self) -> None:
        self.operator.close()
