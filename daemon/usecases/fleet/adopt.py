"""Taking over a Convex deployment the seed design filled (``convex-episode-sync.sh`` pushing
episodes by (sourceSite, sourceId) with a ``metadata`` object), in place, without losing or
duplicating an episode (``cloud_functions/adopt.ts``; docs/guides/seed.md); or
giving it back (``undo``: every episode to the seed's shape, and the tasks to theirs, so that the
seed's functions can be deployed again).

``seed_adoption`` opens the operator's hand on the deployment: it needs the operator's credential,
the deployment's deploy key in ``CONVEX_DEPLOY_KEY`` (in this shell only, never in a daemon's
environment), as forgetting another site's episode does. ``SeedAdoption.survey`` says what the
deployment holds, table by table and by shape; ``adopt`` runs the migration to the end, a batch at
a time, until told to stop; interrupted, running it again goes on where it stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from daemon.duties import OPERATOR_KEY_ENV, OperatorRefused
from sync.errors import BackboneAuthError, ConfigError

if TYPE_CHECKING:
    from daemon.config import Settings
    from sync.backbone.convex.adoption import Progress, SeedAdoption, Survey

NOT_CONVEX: Final = (
    "`memsync adopt` takes over a Convex deployment the seed design filled; this site's backbone is the embedded "
    "hub, which holds nothing of the seed's: there is nothing to adopt"
)


class NothingToAdopt(ConfigError):
    """The site's backbone is the embedded hub: it holds nothing of the seed's."""


@dataclass(frozen=True, slots=True)
class Adoption:
    """What a run did (``progress``'s counts) and the deployment after it; ``after`` is None when
    the run was stopped before its end."""

    progress: Progress
    after: Survey | None

    @property
    def done(self) -> bool:
        return self.after is not None


@contextmanager
def seed_adoption(settings: Settings) -> Iterator[SeedAdoption]:
    """The operator's hand on the seed's documents, for a ``with`` block. Raises ``NothingToAdopt``
    on the embedded hub, ConfigError when the deploy key is not set, and ``OperatorRefused`` when
    the deployment refuses it."""
    from daemon.site import duties_of, never_synced, opened_backbone

    if never_synced(settings):
        raise NothingToAdopt(NOT_CONVEX)
    with opened_backbone(settings, create=False) as backbone:
        adopter = duties_of(settings, backbone).adopter()
        if adopter is None:
            raise NothingToAdopt(NOT_CONVEX)
        try:
            yield adopter
        except BackboneAuthError:
            raise OperatorRefused(
                f"the deployment {adopter.url} refused the deploy key in {OPERATOR_KEY_ENV}: copy a current one "
                "from the Convex dashboard (Settings, Deploy keys) for this deployment"
            ) from None
        finally:
            adopter.close()


def adopt(
    adopter: SeedAdoption,
    before: Survey,
    *,
    undo: bool = False,
    batch: int,
    stop: Callable[[], bool],
    tick: Callable[[Progress, int], None] | None = None,
) -> Adoption:
    """Adopt the seed's episodes (``undo``: return them to the seed's shape), ``batch`` documents a
    call, until done or ``stop()``; ``tick(progress, total)`` after each batch, ``total`` being the
    episodes ``before`` (the survey taken first) has to change. ValueError for a batch out of range."""
    from sync.backbone.convex.adoption import MAX_BATCH, Progress

    if not 1 <= batch <= MAX_BATCH:
        raise ValueError(f"a batch is 1 to {MAX_BATCH} documents, not {batch}")
    shapes = ("memsync", "adopted") if undo else ("seed",)
    total = sum(before.count("episodes", shape) for shape in shapes)
    progress = Progress()
    action = adopter.undo if undo else adopter.adopt
    done = action(progress, limit=batch, stop=stop, tick=lambda p: None if tick is None else tick(p, total))
    return Adoption(progress, adopter.survey() if done else None)
