"""A memory page's further sections, pure, each from the result of the use case the CLI runs: its
links and why (``memsync related``), what the dream did with it and unmerge (``memsync dream steps
--memory``, ``memsync unmerge``), its use, salience and pin (``memsync uses``, ``pin``,
``unpin``), the approvals that name it, and correcting a saved memory's type or tags (``memsync
retag``). Each action is a form posted with the session's CSRF value, as forget's is.

Every section is a (title, body) pair; a use case that could not answer gives its sentence
instead of a body, so one part failing never hides the rest of the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

from daemon.viewer.html import Markup, ago, csrf_field, join, notice, render, when
from daemon.viewer.pages.memory import memory_href
from sync.backbone.dreams import CONSOLIDATES, DreamStep, Key, key_text
from sync.source.type_names import MEMORY_TYPES

if TYPE_CHECKING:
    from daemon.usecases.memory.pins import MemoryUse
    from sync.backbone.base import Approval
    from sync.policy.links import Link

Section = tuple[str, Markup]
ARROWS: Final = {"out": "→", "in": "←", "both": "↔"}
TASK_CHARS: Final = 100


def _short(text: str | None) -> str:
    words = " ".join((text or "").split())
    return words if len(words) <= TASK_CHARS else words[: TASK_CHARS - 1] + "…"


def _key_link(key: Key) -> Markup:
    return render('<a href="{href}"><code>{key}</code></a>', href=memory_href(*key), key=key_text(key))


def links_section(links: Sequence[Link] | None, problem: str | None = None) -> Section:
    """Its neighbours in the context mesh, each with the reason for the link (``memsync related``)."""
    if links is None:
        return "Links", notice(problem or "its links could not be read", "problem")
    if not links:
        return "Links", notice("no related memories")
    items = join(
        render(
            '<li class="link" data-kind="{kind}"><span class="kind">{kind}</span> {arrow} {other} '
            '<span class="reason">{reason}</span>{task}</li>',
            kind=link.kind,
            arrow=ARROWS.get(link.direction, link.direction),
            other=_key_link((link.other.site, link.other.source_id)),
            reason=link.reason,
            task=render(': <span class="meta">{t}</span>', t=_short(link.task)) if link.task else Markup(""),
        )
        for link in links
    )
    return "Links", render('<ul class="links">{items}</ul>', items=items)


def _step_words(step: DreamStep, key: Key) -> Markup:
    members = join((_key_link(m) for m in step.members), ", ")
    if step.canonical == key:
        verb = "consolidated" if step.kind == CONSOLIDATES else "superseded"
        return render("this memory {verb} {members}", verb=verb, members=members)
    verb = "folded into" if step.kind == CONSOLIDATES else "superseded by"
    return render("{verb} {canonical}", verb=verb, canonical=_key_link(step.canonical))


def dream_section(
    steps: Sequence[DreamStep] | None, key: Key, *, csrf: str, action: str, problem: str | None = None
) -> Section:
    """The dream steps that name it (what it consolidated, or what folded it), with unmerge for each
    standing one (``memsync unmerge``)."""
    title = "Duplicates and consolidation"
    if steps is None:
        return title, notice(problem or "the dream's steps could not be read", "problem")
    if not steps:
        return title, notice("the dream has not folded or superseded it, nor it another")
    items = join(
        render(
            '<li class="step" data-step="{id}">step <code>{id}</code>: {words}: <span class="reason">{reason}</span>'
            ' <span class="meta">{when} · {run}</span> {state}</li>',
            id=step.step_id,
            words=_step_words(step, key),
            reason=step.reason,
            when=when(step.at),
            run=step.run,
            state=render(
                '<form method="post" action="{action}" class="inline">{csrf}'
                '<input type="hidden" name="step" value="{id}">'
                '<button type="submit" class="unmerge">Unmerge</button></form>',
                action=action,
                csrf=csrf_field(csrf),
                id=step.step_id,
            )
            if step.standing
            else render('<span class="undone">undone by {by}</span>', by=step.undone_by or "?"),
        )
        for step in steps
    )
    return title, render('<ul class="steps">{items}</ul>', items=items)


def _at(ms: int | None) -> str:
    return "never" if ms is None else datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")


def use_section(use: MemoryUse | None, *, now_ms: int, csrf: str, action: str, problem: str | None = None) -> Section:
    """How the fleet used it (``memsync uses``), its salience, its pin, and pin or unpin."""
    title = "Use and salience"
    if use is None:
        return title, notice(problem or "its use could not be read", "problem")
    totals = use.totals
    pinned = bool(totals and totals.pinned)
    kinds = ", ".join(f"{k} {n}" for k, n in sorted((totals.by_kind if totals else {}).items()))
    count = 0 if totals is None else totals.access_count
    last = None if totals is None else totals.last_accessed
    pin_words = (
        f"pinned by {totals.pinned_by or '?'} since {_at(totals.pinned_at)}"
        if totals is not None and pinned
        else "not pinned"
    )
    return title, render(
        """<dl class="facts use">
<dt>used</dt><dd class="used">{count} times {kinds}</dd>
<dt>last used</dt><dd>{last} ({ago})</dd>
<dt>salience</dt><dd class="salience">{salience}</dd>
<dt>pin</dt><dd class="pin-state">{pin}</dd>
</dl>
<form method="post" action="{action}">{csrf}<input type="hidden" name="pinned" value="{value}">
<button type="submit" class="{cls}">{label}</button></form>""",
        count=count,
        kinds=f"({kinds})" if kinds else "",
        last=when(last),
        ago=ago(last, now_ms),
        salience=f"{use.salience:.2f}",
        pin=pin_words,
        action=action,
        csrf=csrf_field(csrf),
        value="no" if pinned else "yes",
        cls="unpin" if pinned else "pin",
        label="Unpin" if pinned else "Pin (never decays)",
    )


def approvals_section(approvals: Sequence[Approval] | None, problem: str | None = None) -> Section:
    """The approvals an agent asked about this memory, and their status."""
    title = "Approvals"
    if approvals is None:
        return title, notice(problem or "the approvals could not be read", "problem")
    if not approvals:
        return title, notice("no approval names it")
    items = join(
        render(
            '<li class="approval" data-approval="{id}"><code>{id}</code> <strong class="status">{status}</strong>'
            ' {action} · {summary}{by} <span class="meta">asked {when}</span></li>',
            id=a.approval_id,
            status=a.status,
            action=a.action_type,
            summary=a.summary or "",
            by=f" · by {a.resolved_by}" if a.resolved_by else "",
            when=when(a.created_at),
        )
        for a in approvals
    )
    return title, render('<ul class="approvals">{items}</ul><p><a href="/approvals">all approvals</a></p>', items=items)


def correct_section(
    memory_type: str | None, given: bool | None, tags: Sequence[str], *, csrf: str, action: str, refused: str | None
) -> Section:
    """Correcting its type or tags (``memsync retag``): a form for a memory this site saved, else
    why it cannot be corrected here (``refused``). The type's first choice keeps the type as it is
    (an inferred type is not made a given one by a correction of the tags)."""
    title = "Correct its type or tags"
    if refused is not None:
        return title, notice(refused)
    mine = [t for t in tags if not t.startswith("project:")]
    now = (memory_type or "its type").replace("_", " ") + (
        "" if given is None else " (given)" if given else " (inferred)"
    )
    keep = render('<option value="" selected>keep {t}</option>', t=now)
    options = join([keep, *(render('<option value="{t}">{t}</option>', t=t) for t in MEMORY_TYPES)])
    return title, render(
        """<form method="post" action="{action}" class="retag">{csrf}
<label>type <select name="type">{options}</select></label>
<label>tags <input name="tags" value="{tags}" placeholder="comma-separated"></label>
<button type="submit" class="retag">Correct</button>
<p class="meta">Its project: tags stay. The correction is recorded in the memory and every site sees it.</p>
</form>""",
        action=action,
        csrf=csrf_field(csrf),
        options=options,
        tags=", ".join(mine),
    )


def split_tags(text: str) -> list[str]:
    """The tags field of the correction form: comma-separated."""
    return [t.strip() for t in text.split(",") if t.strip()]
