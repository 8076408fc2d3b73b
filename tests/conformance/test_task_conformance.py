"""Tasks, and what an approval's decision, deferral and expiry do to the tasks waiting on it
(``contracts/task_status.json``), through the backbone conformance suite's sites: the same calls give
the same results on the embedded hub and on Convex (the real cloud_functions in the local server)."""

from __future__ import annotations

import pytest
from test_backbone_conformance import OpenSite, _now_ms, item, open_site

from sync.backbone.base import NewTask, Task
from sync.errors import BackboneNotFound, BackboneRejected

__all__ = ["open_site"]  # the suite's fixture, one site a backbone

LATER = 24 * 3_600_000


def _status(task: Task | None) -> str | None:
    return None if task is None else task.status


def test_tasks_are_created_by_a_site_and_seen_and_updated_by_the_fleet(open_site: OpenSite) -> None:
    laptop, vm = open_site("laptop"), open_site("vm")
    first = laptop.backbone.create_task(title="write the tests", agent_name="coder")
    second = vm.backbone.create_task(title="deploy", agent_name="planner", assigned_to="bob")
    seen = vm.backbone.task(first)
    assert seen is not None
    assert (seen.title, seen.agent_name, seen.site, seen.status, seen.assigned_to, seen.approval_id) == (
        "write the tests",
        "coder",
        laptop.site,
        "pending",
        None,
        None,
    )
    assert seen.created_at > 0
    assert seen.updated_at >= seen.created_at
    assert vm.backbone.task("999999") is None
    assert vm.backbone.task("not-an-id") is None

    # People update any site's task from any site; what is left out is kept.
    moved = vm.backbone.update_task(first, status="in_progress", assigned_to="ann")
    assert (moved.task_id, moved.status, moved.assigned_to) == (first, "in_progress", "ann")
    assert laptop.backbone.update_task(first, status="done").assigned_to == "ann"
    assert _status(laptop.backbone.task(second)) == "pending"
    assert laptop.backbone.update_task(second, assigned_to="cy").status == "pending"

    def ids(**filters: str) -> list[str]:
        return [t.task_id for t in laptop.backbone.tasks(**filters) if laptop.ours(t.site)]

    assert ids() == [first, second]  # the fleet's, oldest first
    assert ids(site=vm.site) == [second]
    assert ids(status="done") == [first]
    assert ids(site=laptop.site, status="pending") == []
    assert ids(agent_name="planner") == [second]
    assert ids(status="no-such-status") == []

    with pytest.raises(BackboneRejected, match="one of pending, in_progress"):
        laptop.backbone.update_task(first, status="later")
    with pytest.raises(BackboneRejected, match="nothing to change"):
        laptop.backbone.update_task(first)
    with pytest.raises(BackboneRejected, match="needs a title"):
        laptop.backbone.create_task(title=" ", agent_name="coder")
    with pytest.raises(BackboneNotFound):
        laptop.backbone.update_task("999999", status="done")


def test_an_approval_asked_with_a_task_blocks_it_and_its_decision_moves_it(open_site: OpenSite) -> None:
    """Asked: blocked; deferred: still blocked; approved (from another site): in progress; rejected:
    cancelled; expired by the sweep: failed; approved by the policy at once: in progress."""
    laptop, vm = open_site("laptop"), open_site("vm")

    def ask(category: str = "deploy", expires_in: int = LATER, **more: object) -> tuple[str, Task]:
        approval_id = laptop.backbone.create_approval(
            agent_name="coder",
            action_type=category,
            priority="normal",
            reviewers=["42"],
            expires_at=_now_ms() + expires_in,
            **more,  # type: ignore[arg-type]
        )
        (task,) = vm.backbone.tasks(approval_id=approval_id)
        return approval_id, task

    asked, task = ask(task=NewTask("ship the release", "bob"))
    assert (task.title, task.agent_name, task.site, task.status, task.assigned_to, task.approval_id) == (
        "ship the release",
        "coder",
        laptop.site,
        "blocked",
        "bob",
        asked,
    )
    vm.backbone.defer_approval(asked, "ann")
    assert _status(vm.backbone.task(task.task_id)) == "blocked"
    assert vm.backbone.resolve_approval(asked, "approved", "ann") == "approved"
    approved = laptop.backbone.task(task.task_id)
    assert approved is not None
    assert approved.status == "in_progress"
    assert approved.updated_at >= task.updated_at

    refused, refused_task = ask(task=NewTask("email everyone"))
    laptop.backbone.resolve_approval(refused, "rejected", "ann")
    assert _status(laptop.backbone.task(refused_task.task_id)) == "cancelled"

    _, late_task = ask(expires_in=60_000, task=NewTask("answer in time"))
    laptop.sweeps.expire_approvals(_now_ms() + 61_000, {}, 3_600_000)
    assert _status(laptop.backbone.task(late_task.task_id)) == "failed"

    _, research_task = ask("research", timeout_ms=0, task=NewTask("read the papers"))
    assert research_task.status == "in_progress"
    # The task is not another approval's: none of the others moved.
    statuses = [t.status for t in vm.backbone.tasks(site=laptop.site)]
    assert statuses == ["in_progress", "cancelled", "failed", "in_progress"]


def test_an_approval_links_an_existing_task_and_leaves_a_finished_one_alone(open_site: OpenSite) -> None:
    laptop, vm = open_site("laptop"), open_site("vm")
    laptop.backbone.push([item(1)], cursor=1)
    task_id = laptop.backbone.create_task(title="rotate the keys", agent_name="coder")
    laptop.backbone.update_task(task_id, status="in_progress")
    asked = laptop.backbone.create_approval(
        agent_name="coder",
        action_type="destructive",
        priority="high",
        reviewers=[],
        expires_at=_now_ms() + LATER,
        source_id="1",
        task_id=task_id,
    )
    linked = laptop.backbone.task(task_id)
    assert linked is not None
    assert (linked.approval_id, linked.status) == (asked, "blocked")
    laptop.backbone.update_task(task_id, status="done")  # finished meanwhile: the decision leaves it
    vm.backbone.resolve_approval(asked, "rejected", "ann")
    assert _status(laptop.backbone.task(task_id)) == "done"
    assert laptop.approval_status("1") == "rejected"  # the episode still follows

    # Refused, and nothing created: another site's task, a task id that names none, both at once,
    # an empty title.
    before = [a.approval_id for a in vm.backbone.approvals(all_sites=True) if vm.ours(a.site)]
    common = {
        "agent_name": "c",
        "action_type": "deploy",
        "priority": "low",
        "reviewers": [],
        "expires_at": _now_ms() + LATER,
    }
    with pytest.raises(BackboneNotFound, match="no task"):
        vm.backbone.create_approval(**common, task_id=task_id)  # type: ignore[arg-type]
    with pytest.raises(BackboneNotFound, match="no task"):
        laptop.backbone.create_approval(**common, task_id="999999")  # type: ignore[arg-type]
    with pytest.raises(BackboneRejected, match="not both"):
        laptop.backbone.create_approval(**common, task=NewTask("x"), task_id=task_id)  # type: ignore[arg-type]
    with pytest.raises(BackboneRejected, match="needs a title"):
        laptop.backbone.create_approval(**common, task=NewTask(""))  # type: ignore[arg-type]
    assert [a.approval_id for a in vm.backbone.approvals(all_sites=True) if vm.ours(a.site)] == before


def test_a_task_created_for_an_approval_takes_its_status_and_only_its_own_site_s(open_site: OpenSite) -> None:
    laptop, vm = open_site("laptop"), open_site("vm")
    asked = laptop.backbone.create_approval(
        agent_name="coder", action_type="deploy", priority="low", reviewers=[], expires_at=_now_ms() + LATER
    )
    with pytest.raises(BackboneNotFound, match="no approval"):
        vm.backbone.create_task(title="t", agent_name="planner", approval_id=asked)
    with pytest.raises(BackboneNotFound, match="no approval"):
        laptop.backbone.create_task(title="t", agent_name="coder", approval_id="not-an-id")
    waiting = laptop.backbone.create_task(title="t", agent_name="coder", approval_id=asked)
    assert _status(laptop.backbone.task(waiting)) == "blocked"
    laptop.backbone.resolve_approval(asked, "approved", "ann")
    late = laptop.backbone.create_task(title="t2", agent_name="coder", approval_id=asked)
    assert [_status(laptop.backbone.task(t)) for t in (waiting, late)] == ["in_progress", "in_progress"]
    assert [t.task_id for t in vm.backbone.tasks(approval_id=asked)] == [waiting, late]
