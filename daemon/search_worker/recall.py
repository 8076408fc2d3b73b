"""``memsync search``, ``memsync reindex`` and the MCP server's reads when the light path could not answer: through the
running daemon when there is one (it owns the embedded store), in this process when there is not.

Which way: if the control socket answers, the daemon does the work; if no daemon holds the site,
this process opens the store itself (and a daemon started meanwhile waits for it to let go); a
daemon running without the warm layer is reported as such, never worked around.

A search never answers silently from a stale index. With no daemon to index new episodes, this
process first looks at how far the index is behind the backbone's feed: a little (at most
``CATCH_UP_LIMIT`` episodes) and it indexes them before searching; more, and the search still
answers but says how many episodes it cannot see and what to run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from daemon.config import Settings
from daemon.control.client import ControlClient
from daemon.control.lock import DAEMON, lock_holder
from daemon.counts import counted
from daemon.site import NeverSynced, opened_backbone
from sync.backbone.base import Backbone, ChangeFeed
from sync.errors import ConfigError, ControlError, DaemonNotListening, MemsyncError, PathProblem, TransientError
from sync.search.indexing.lag import episodes_behind
from sync.search.request import EpisodeRequest, EpisodeView, SearchAnswer, SearchRequest, SearchResult

if TYPE_CHECKING:  # the index's stack loads only when this process opens it (the MCP server asks the daemon)
    from daemon.search_worker.wiring import WarmLayer

# Episodes a search with no daemon running indexes itself before answering: about a second of the
# local model's time; beyond it the search answers at once and says what it cannot see.
CATCH_UP_LIMIT = 200
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Found:
    answer: SearchAnswer
    via: str  # "daemon" or "this process"
    behind: str | None = None  # what the answer cannot see, in a sentence

    @property
    def results(self) -> list[SearchResult]:
        return self.answer.results


def _raise(exc: ControlError) -> None:
    if exc.kind == "invalid":
        raise ValueError(str(exc)) from None
    if exc.kind == "config":
        raise ConfigError(str(exc)) from None
    if exc.kind == "transient":
        raise TransientError(str(exc)) from None
    raise MemsyncError(f"the daemon failed: {exc}") from None


def _daemon_without_warm(settings: Settings) -> None:
    holder = lock_holder(settings.lock_path)
    if holder is not None and holder.role == DAEMON:
        raise ConfigError(
            f"the daemon (pid {holder.pid}) owns this site but does not answer on {settings.socket_path}: "
            "is warm.enabled false, or warm.socket different in its configuration?"
        )


def run_search(settings: Settings, request: SearchRequest) -> Found:
    request.check()
    answer, via, behind = run_read(settings, lambda daemon: daemon.answer(request), lambda layer: layer.answer(request))
    return Found(answer, via, behind)


def run_read(
    settings: Settings, ask: Callable[[ControlClient], T], here: Callable[[WarmLayer], T]
) -> tuple[T, str, str | None]:
    """A read of the search index (a search, recent episodes, one episode): ``ask``ed of the
    running daemon, else done ``here`` on the store opened in this process after a small catch-up;
    (the answer, "daemon" or "this process", what it cannot see)."""
    try:
        return ask(ControlClient(settings.socket_path)), "daemon", None
    except DaemonNotListening:
        _daemon_without_warm(settings)
    except ControlError as exc:
        _raise(exc)
    from daemon.search_worker.wiring import offline_layer

    with ExitStack() as stack:
        backbone, problem = _backbone_for_catch_up(settings, stack)
        with offline_layer(settings, backbone, leases=backbone) as layer:
            behind = problem if backbone is None else _catch_up_first(layer, backbone)
            return here(layer), "this process", behind


def run_episode(settings: Settings, request: EpisodeRequest) -> EpisodeView:
    """One episode and its session's neighbours, as ``run_search`` reads: through the daemon, or
    from the index in this process when no daemon holds the site (without catching it up: an
    episode the index has not reached is one it does not hold yet)."""
    request.check()
    if not settings.warm.enabled:
        raise ConfigError("the search index is off (warm.enabled = false): turn it on to read memories")
    try:
        return ControlClient(settings.socket_path).episode(request)
    except DaemonNotListening:
        _daemon_without_warm(settings)
    except ControlError as exc:
        _raise(exc)
    from daemon.search_worker.wiring import offline_layer

    with offline_layer(settings, None) as layer:
        view: EpisodeView = layer.episode(request)
        return view


def _backbone_for_catch_up(settings: Settings, stack: ExitStack) -> tuple[Backbone | None, str | None]:
    """The backbone, held open by ``stack``; None when there is none to check against, with why."""
    try:
        return stack.enter_context(opened_backbone(settings, create=False, existing=True)), None
    except NeverSynced:
        return None, None  # nothing was ever synced
    except PathProblem:
        raise  # not a hub that is busy or away: a path only a person can fix
    except MemsyncError as exc:
        return None, f"could not check the search index against the backbone ({exc}): recent episodes may be missing"


def _catch_up_first(layer: WarmLayer, feed: ChangeFeed) -> str | None:
    """Index what is missing when it is little; otherwise say what the search cannot see."""
    try:
        count, exact = episodes_behind(feed, layer.indexed_through(), CATCH_UP_LIMIT)
        if count == 0:
            return None
        if count <= CATCH_UP_LIMIT and exact:
            layer.catch_up()
            return None
    except MemsyncError as exc:
        return f"could not catch the search index up ({exc}): recent episodes may be missing"
    more = "more than " if not exact else ""
    return (
        f"the search index is {more}{counted(count, 'episode')} behind and no daemon is running to index them: these "
        "results cannot include them. Run `memsync sync` (it indexes what is missing) or start the daemon"
    )


def run_reindex(settings: Settings, on_progress: Callable[[Mapping[str, Any]], None]) -> tuple[dict[str, Any], str]:
    try:
        answered = ControlClient(settings.socket_path).reindex(on_progress)
    except DaemonNotListening:
        _daemon_without_warm(settings)
    except ControlError as exc:
        _raise(exc)
    else:
        return answered, "daemon"
    from daemon.search_worker.wiring import offline_layer

    with (
        opened_backbone(settings, create=False) as backbone,
        offline_layer(settings, backbone, leases=backbone) as layer,
    ):
        report = layer.reindex(lambda r: on_progress(asdict(r)))
    return asdict(report), "this process"
