"""What each page asks the use cases for, blocking (the app runs these in its thread pool): the
viewer's only way to the backbone, the search index and the daemon. Every action is a use case of
``daemon/usecases`` (or the index's own search, ``daemon.search_worker.recall``), the ones the CLI
runs: the viewer never does the work a second way. Each returns the page's body, rendered."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from daemon.viewer.html import Markup, notice
from daemon.viewer.pages import approvals as approvals_page
from daemon.viewer.pages import digest as digest_page
from daemon.viewer.pages import fleet as fleet_page
from daemon.viewer.pages import memory as memory_page
from sync.errors import MemsyncError

if TYPE_CHECKING:
    from daemon.config import Settings
    from sync.backbone.base import Approval

# The neighbours a memory's page shows on each side, and how long a forget waits for this site's
# index to purge (the CLI's default too).
NEIGHBOURS: Final = 3
PURGE_TIMEOUT_S: Final = 60.0
DECIDED_SHOWN: Final = 50
DIGEST_DAYS: Final = 8


@dataclass(frozen=True, slots=True)
class Shown:
    """A page's body, and the HTTP status it goes with."""

    body: Markup
    status: int = 200


class Views:
    def __init__(self, settings: Settings, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.clock = clock

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    # -- memory ------------------------------------------------------------------------------------
    def search(self, query: Mapping[str, str]) -> Shown:
        from daemon.search_worker.recall import run_search
        from daemon.usecases.memory.search import search_request

        form = memory_page.SearchForm.of(query)
        searched = memory_page.Searched()
        if form.q:
            try:
                request = search_request(
                    form.q,
                    now=self.clock(),
                    site=form.site,
                    agent=form.agent,
                    tags=[form.tag],
                    project=form.project,
                    since=form.since,
                    mode=form.mode,  # type: ignore[arg-type]  # search_request refuses one not in MODES
                    everything=form.all,
                    types=[form.type] if form.type else (),
                )
                found = run_search(self.settings, request)
            except (ValueError, MemsyncError) as exc:
                searched = memory_page.Searched(problem=str(exc))
            else:
                searched = memory_page.Searched(answer=found.answer, behind=found.behind)
        body = memory_page.search_form(form, self._site_names()) + memory_page.search_results(
            searched, form, self._now_ms()
        )
        return Shown(Markup(body), 400 if searched.problem and form.q else 200)

    def _site_names(self) -> list[str]:
        from daemon.site import opened_backbone

        try:
            with opened_backbone(self.settings, create=False, existing=True) as backbone:
                return [s.site for s in backbone.sites()]
        except MemsyncError:
            return []  # nothing synced yet, or the backbone away: the filter offers no names

    def memory(self, site: str, source_id: str, csrf: str) -> Shown:
        from daemon.search_worker.recall import run_episode
        from sync.search.request import EpisodeRequest, EpisodeView

        try:
            view = run_episode(self.settings, EpisodeRequest(site=site, source_id=source_id, neighbours=NEIGHBOURS))
        except (ValueError, MemsyncError) as exc:
            return Shown(memory_page.memory_page_body(EpisodeView(None), now_ms=0, csrf=csrf, problem=str(exc)), 503)
        body = memory_page.memory_page_body(view, now_ms=self._now_ms(), csrf=csrf, sections=self._sections(view))
        return Shown(body, 200 if view.episode is not None else 404)

    def _sections(self, view: Any) -> list[tuple[str, Markup]]:
        """Where the memory page's further sections plug in, each from its use case: its links and
        why (``remember and link``), its type, its pins, its duplicates and what consolidated it
        with unmerge (``dream cycle``). None of them is on this branch yet: each adds a (title,
        body) here, calling its use case, with its actions posted as forget's is."""
        return []

    def forget(self, site: str, source_id: str, confirmed: bool) -> Shown:
        from daemon.site import duties_of, opened_backbone
        from daemon.usecases.memory.forget import forget, report_lines

        key = f"{site}:{source_id}"
        if not confirmed:
            return Shown(notice(f"{key} was not forgotten: tick the box that confirms it", "problem"), 400)
        try:
            with opened_backbone(self.settings, existing=True) as backbone:
                report = forget(
                    self.settings,
                    backbone,
                    duties_of(self.settings, backbone),
                    [(site, source_id)],
                    purge_timeout=PURGE_TIMEOUT_S,
                    now=self.clock(),
                )
        except MemsyncError as exc:
            return Shown(notice(f"{key} was not forgotten: {exc}", "problem"), 503)
        return Shown(memory_page.forgotten_body(key, report_lines(report, PURGE_TIMEOUT_S), report.complete))

    # -- approvals ---------------------------------------------------------------------------------
    def approvals(self, csrf: str, message: str | None = None, problem: str | None = None) -> Shown:
        from daemon.site import opened_backbone
        from daemon.usecases.fleet.approvals import may_decide_as

        person = self.settings.ui.user

        def may(approval: Approval) -> bool:
            return person is not None and may_decide_as(self.settings, approval, person)

        try:
            with opened_backbone(self.settings, create=False, existing=True) as backbone:
                every = backbone.approvals(None, all_sites=True)
                tasks = backbone.tasks()
        except MemsyncError as exc:
            return Shown(notice(str(exc), "problem"), 503)
        pending = [a for a in every if a.status == "pending"]
        decided = sorted((a for a in every if a.status != "pending"), key=lambda a: -(a.resolved_at or a.created_at))
        body = approvals_page.approvals_body(
            pending,
            decided[:DECIDED_SHOWN],
            tasks,
            now_ms=self._now_ms(),
            csrf=csrf,
            may_decide=may,
            person=person,
            message=message,
            problem=problem,
        )
        return Shown(body, 200 if problem is None else 403)

    def decide(self, approval_id: str, verb: str, csrf: str) -> Shown:
        from daemon.site import duties_of, opened_backbone
        from daemon.usecases.fleet.approvals import NotAReviewer, decide_as

        person = self.settings.ui.user
        if person is None:
            return self.approvals(csrf, problem="set ui.user to a collaborator's name to decide approvals here")
        if verb not in ("approve", "reject", "defer"):
            return self.approvals(csrf, problem=f"no such decision {verb!r}: approve, reject or defer")
        try:
            with opened_backbone(self.settings, create=False, existing=True) as backbone:
                decided = decide_as(
                    self.settings,
                    backbone,
                    duties_of(self.settings, backbone),
                    approval_id,
                    verb,  # type: ignore[arg-type]  # one of the three, checked above
                    person,
                )
        except (NotAReviewer, LookupError, MemsyncError) as exc:
            return self.approvals(csrf, problem=str(exc))
        said = f"{approval_id}: {decided.status} by {decided.by}" + (f" ({decided.note})" if decided.note else "")
        return self.approvals(csrf, message=said)

    # -- fleet -------------------------------------------------------------------------------------
    def fleet_live(self) -> Markup:
        from daemon.site import opened_backbone
        from daemon.usecases.fleet.jobs import jobs
        from daemon.usecases.fleet.status import alerts, fleet

        now = self.clock()
        try:
            report = fleet(self.settings, now)
            with opened_backbone(self.settings, create=False, existing=True) as backbone:
                table = jobs(self.settings, backbone, now)
        except MemsyncError as exc:
            return fleet_page.fleet_live(None, [], [], int(now * 1000), problem=str(exc))
        return fleet_page.fleet_live(report, table, alerts(self.settings), int(now * 1000))

    def fleet(self) -> Shown:
        return Shown(fleet_page.fleet_body(self.fleet_live()))

    # -- digest ------------------------------------------------------------------------------------
    def digest(self, day: str | None) -> Shown:
        from daemon.site import duties_of, opened_backbone
        from daemon.usecases.fleet.jobs import digest

        now = self.clock()
        moment = datetime.fromtimestamp(now, UTC)
        today = moment.strftime("%Y-%m-%d")
        days = [(moment - timedelta(days=back)).strftime("%Y-%m-%d") for back in range(DIGEST_DAYS)]
        day = day or today
        try:
            datetime.strptime(day, "%Y-%m-%d")
        except ValueError:
            return Shown(notice(f"day {day!r}: use YYYY-MM-DD", "problem"), 400)
        try:
            with opened_backbone(self.settings, create=False, existing=True) as backbone:
                found = digest(backbone, duties_of(self.settings, backbone), day=day, now=now)
        except MemsyncError as exc:
            return Shown(notice(str(exc), "problem"), 503)
        return Shown(digest_page.digest_body(found, today, days))
