"""The Approvals page, pure: the pending ones with approve, reject and defer (shown only to a
person who may decide them), the decided ones, and the tasks."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from daemon.viewer.html import Markup, ago, csrf_field, join, notice, render, table, when
from daemon.viewer.pages.memory import memory_href
from sync.backbone.base import Approval, Task

VERBS = (("approve", "Approve"), ("reject", "Reject"), ("defer", "Defer"))


def _about(a: Approval) -> Markup:
    if not a.source_id:
        return Markup("")
    return render(' · about <a href="{href}">{key}</a>', href=memory_href(a.site, a.source_id), key=a.source_id)


def pending_item(a: Approval, now_ms: int, csrf: str, may_decide: bool) -> Markup:
    buttons = (
        join(
            render(
                '<form method="post" action="/approvals/{id}/{verb}">{csrf}<button type="submit" name="verb" '
                'value="{verb}" class="{verb}">{label}</button></form>',
                id=a.approval_id,
                verb=verb,
                label=label,
                csrf=csrf_field(csrf),
            )
            for verb, label in VERBS
        )
        if may_decide
        else Markup('<span class="meta">you may not decide this one</span>')
    )
    return render(
        """<li class="approval" data-approval="{id}">
<div><strong>{category}</strong> · {priority} · {agent} on {site}{about}</div>
<p class="summary">{summary}</p>
<div class="meta">asked {asked} · expires {expires}{cost}{tests}</div>
<div class="actions">{buttons}</div></li>""",
        id=a.approval_id,
        category=a.action_type,
        priority=a.priority,
        agent=a.agent_name,
        site=a.site,
        about=_about(a),
        summary=a.summary or "(no summary)",
        asked=ago(a.created_at, now_ms),
        expires=when(a.expires_at),
        cost="" if a.cost_usd is None else f" · costs ${a.cost_usd:.2f}",
        tests="" if a.tests_passed is None else (" · tests pass" if a.tests_passed else " · tests fail"),
        buttons=buttons,
    )


def decided_row(a: Approval) -> Markup:
    return render(
        "<tr><td><code>{id}</code></td><td>{category}</td><td>{agent} on {site}</td><td>{status}</td>"
        "<td>{by}</td><td>{at}</td><td>{summary}</td></tr>",
        id=a.approval_id,
        category=a.action_type,
        agent=a.agent_name,
        site=a.site,
        status=a.status,
        by=a.resolved_by or "",
        at=when(a.resolved_at),
        summary=a.summary or "",
    )


def task_row(t: Task) -> Markup:
    return render(
        "<tr><td><code>{id}</code></td><td>{title}</td><td>{status}</td><td>{agent} on {site}</td>"
        "<td>{assigned}</td><td>{approval}</td><td>{updated}</td></tr>",
        id=t.task_id,
        title=t.title,
        status=t.status,
        agent=t.agent_name,
        site=t.site,
        assigned=t.assigned_to or "",
        approval=t.approval_id or "",
        updated=when(t.updated_at or t.created_at),
    )


def approvals_body(
    pending: Sequence[Approval],
    decided: Sequence[Approval],
    tasks: Sequence[Task],
    *,
    now_ms: int,
    csrf: str,
    may_decide: Callable[[Approval], bool],
    person: str | None,
    message: str | None = None,
    problem: str | None = None,
) -> Markup:
    who = (
        notice(f"you decide as {person}, under Telegram's reviewer rules")
        if person
        else notice("set ui.user to a collaborator's name to decide approvals here; until then they are shown")
    )
    head = ("id", "category", "agent", "status", "by", "decided", "summary")
    return render(
        """{message}{problem}{who}<h2>Pending</h2>{pending}
<h2>Decided</h2>{decided}
<h2>Tasks</h2>{tasks}""",
        message=notice(message),
        problem=notice(problem, "problem"),
        who=who,
        pending=render(
            '<ul class="approvals">{items}</ul>',
            items=join(pending_item(a, now_ms, csrf, may_decide(a)) for a in pending),
        )
        if pending
        else notice("nothing waits for a decision"),
        decided=table(head, join(decided_row(a) for a in decided), "nothing decided yet"),
        tasks=table(
            ("id", "title", "status", "agent", "assigned", "approval", "updated"),
            join(task_row(t) for t in tasks),
            "no tasks",
        ),
    )
