"""What each page asks the use cases for, blocking (the app runs these in its thread pool): the
viewer's only way to the backbone, the search index and the daemon. Every action is a use case of
``daemon/usecases`` (or the index's own search, ``daemon.search_worker.recall``), the ones the CLI
runs: the viewer never does the work a second way. Each returns the page's body, rendered."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final

from daemon.viewer.html import Markup, notice
from daemon.viewer.pages import approvals as approvals_page
from daemon.viewer.pages import digest as digest_page
from daemon.viewer.pages import fleet as fleet_page
from daemon.viewer.pages import memory as memory_page
from daemon.viewer.pages import sections
from sync.errors import MemsyncError

if TYPE_CHECKING:
    from daemon.config import Settings
    from sync.backbone.base import Approval
    from sync.search.request import SearchResult

# The neighbours a memory's page shows on each side, and how long a forget waits for this site's
# index to purge (the CLI's default too).
NEIGHBOURS: Final = 3
LINKS: Final = 20  # a memory's links shown (``memsync related``'s default)
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
                    outcome=form.outcome or None,
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

    def memory(
        self, site: str, source_id: str, csrf: str, message: str | None = None, problem: str | None = None
    ) -> Shown:
        """A memory's page; ``message`` or ``problem``: what an action on it just did, said above it."""
        from daemon.search_worker.recall import run_episode
        from sync.search.request import EpisodeRequest, EpisodeView

        try:
            view = run_episode(self.settings, EpisodeRequest(site=site, source_id=source_id, neighbours=NEIGHBOURS))
        except (ValueError, MemsyncError) as exc:
            unread = memory_page.memory_page_body(EpisodeView(None), now_ms=0, csrf=csrf, problem=str(exc))
            return Shown(Markup(notice(message) + notice(problem, "problem") + unread), 503)
        if view.episode is None:
            unread = memory_page.memory_page_body(view, now_ms=0, csrf=csrf)
            return Shown(Markup(notice(message) + notice(problem, "problem") + unread), 404)
        body = memory_page.memory_page_body(
            view,
            now_ms=self._now_ms(),
            csrf=csrf,
            sections=self._sections(view.episode, csrf),
            problem=problem,
            message=message,
        )
        return Shown(body, 200 if problem is None else 400)

    def _sections(self, episode: SearchResult, csrf: str) -> list[tuple[str, Markup]]:
        """The memory page's further sections, each from the use case the CLI runs (``memsync
        related``, ``dream steps --memory``, ``uses``, ``retag``) and the approvals naming it."""
        from daemon.site import opened_backbone
        from daemon.usecases.fleet.approvals import about
        from daemon.usecases.memory.dream import steps
        from daemon.usecases.memory.pins import used
        from daemon.usecases.memory.related import related
        from daemon.usecases.memory.retag import correctable

        key = (episode.site, episode.source_id)
        href = memory_page.memory_href(*key)
        try:
            links = sections.links_section(related(self.settings, f"{key[0]}:{key[1]}", LINKS).links)
        except (ValueError, MemsyncError) as exc:
            links = sections.links_section(None, str(exc))
        try:
            with opened_backbone(self.settings, create=False, existing=True) as backbone:
                named = steps(backbone, memory=key)  # type: ignore[arg-type]  # the Backbone is Dreams too
                asked = about(backbone, *key)
        except MemsyncError as exc:
            dream = sections.dream_section(None, key, csrf=csrf, action="", problem=str(exc))
            approvals = sections.approvals_section(None, str(exc))
        else:
            dream = sections.dream_section(named, key, csrf=csrf, action=href + "/unmerge")
            approvals = sections.approvals_section(asked)
        try:
            (use,) = used(self.settings, [key], clock=self.clock)
            use_shown = sections.use_section(use, now_ms=self._now_ms(), csrf=csrf, action=href + "/pin")
        except MemsyncError as exc:
            use_shown = sections.use_section(None, now_ms=0, csrf=csrf, action="", problem=str(exc))
        correct = sections.correct_section(
            episode.memory_type,
            episode.type_given,
            episode.tags,
            csrf=csrf,
            action=href + "/retag",
            refused=correctable(self.settings, *key),
        )
        return [links, dream, use_shown, approvals, correct]

    def _by(self) -> str:
        """Who acts from the viewer: its user (``ui.user``), on this site."""
        return f"{self.settings.ui.user or 'viewer'} on {self.settings.site.name} (viewer)"

    def pin(self, site: str, source_id: str, pinned: bool, csrf: str) -> Shown:
        """Pin or unpin the memory (``memsync pin``/``unpin``), then its page, saying so."""
        from daemon.usecases.memory.pins import pin

        try:
            pin(self.settings, (site, source_id), pinned=pinned, by=self._by(), clock=self.clock)
        except (LookupError, MemsyncError) as exc:
            return self.memory(site, source_id, csrf, problem=f"not {'pinned' if pinned else 'unpinned'}: {exc}")
        said = "pinned: its salience never decays" if pinned else "unpinned: its salience follows its use again"
        return self.memory(site, source_id, csrf, message=said)

    def unmerge(self, site: str, source_id: str, step_id: str, csrf: str) -> Shown:
        """Undo one dream step that names the memory (``memsync unmerge``), then its page."""
        from daemon.site import opened_backbone
        from daemon.usecases.memory.dream import unmerge

        if not step_id.strip():
            return self.memory(site, source_id, csrf, problem="not undone: no step given")
        try:
            with opened_backbone(self.settings, existing=True) as backbone:
                step = unmerge(backbone, step_id.strip(), by=self._by())  # type: ignore[arg-type]
        except MemsyncError as exc:
            return self.memory(site, source_id, csrf, problem=f"step {step_id} not undone: {exc}")
        shown = ", ".join(f"{m[0]}:{m[1]}" for m in step.members)
        return self.memory(site, source_id, csrf, message=f"undone: step {step.step_id}; {shown} shown again")

    def retag(self, site: str, source_id: str, memory_type: str, tags: str, csrf: str) -> Shown:
        """Correct a saved memory's type or tags (``memsync retag``), then its page."""
        from daemon.usecases.memory.retag import retag

        try:
            done = retag(
                self.settings,
                f"{site}:{source_id}",
                memory_type=memory_type or None,
                tags=sections.split_tags(tags),
                by=self._by(),
                clock=self.clock,
            )
        except (ValueError, LookupError, MemsyncError) as exc:
            return self.memory(site, source_id, csrf, problem=f"not corrected: {exc}")
        return self.memory(site, source_id, csrf, message=done.message)

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
