"""The hub as ``Tasks``: the tasks table (schema version 10), and what an approval's transaction does
to the tasks waiting on it (``follow_tasks``, ``insert_task``, ``link_task``: called inside the
approvals' own transactions in ``coordination``), by the policy both backbones share
(``sync.policy.tasks``).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from sync.backbone.base import Task
from sync.backbone.hub.connection import HubConnection
from sync.errors import BackboneNotFound, BackboneRejected
from sync.policy.tasks import TASK_STATUSES, link_event, task_status_after

_COLUMNS = "id, site, title, agent_name, status, assigned_to, approval_id, created_at, updated_at"


@dataclass(frozen=True, slots=True)
class _Row:
    id: int
    site: str
    title: str
    agent_name: str
    status: str
    assigned_to: str | None
    approval_id: int | None
    created_at: int
    updated_at: int

    def task(self) -> Task:
        return Task(
            str(self.id),
            self.title,
            self.agent_name,
            self.site,
            self.status,
            self.assigned_to,
            None if self.approval_id is None else str(self.approval_id),
            self.created_at,
            self.updated_at,
        )


def _row_id(some_id: str) -> int:
    return int(some_id) if some_id.isdigit() else -1


def checked_title(title: str) -> str:
    if not title.strip():
        raise BackboneRejected("a task needs a title: say in a few words what is to be done")
    return title


def insert_task(
    conn: sqlite3.Connection,
    *,
    site: str,
    title: str,
    agent_name: str,
    assigned_to: str | None,
    approval_id: int | None,
    approval_status: str | None,
    now: int,
) -> int:
    """A new task, "pending" or, linked to an approval, as the approval's status makes it."""
    status = "pending"
    if approval_status is not None:
        status = task_status_after(link_event(approval_status), status) or status
    cursor = conn.execute(
        "INSERT INTO tasks (site, title, agent_name, status, assigned_to, approval_id, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (site, checked_title(title), agent_name, status, assigned_to, approval_id, now, now),
    )
    assert cursor.lastrowid is not None
    return cursor.lastrowid


def link_task(
    conn: sqlite3.Connection, *, site: str, task_id: str, approval_id: int, approval_status: str, now: int
) -> None:
    """One of ``site``'s tasks now waits on ``approval_id`` and takes its status's event."""
    row = _one(conn, task_id)
    if row is None or row.site != site:
        raise BackboneNotFound(f"no task {task_id!r} from site {site} in the hub")
    status = task_status_after(link_event(approval_status), row.status) or row.status
    conn.execute(
        "UPDATE tasks SET approval_id = ?, status = ?, updated_at = ? WHERE id = ?", (approval_id, status, now, row.id)
    )


def follow_tasks(conn: sqlite3.Connection, approval_id: int, event: str, now: int) -> None:
    """The tasks waiting on ``approval_id`` move as ``event`` says (``sync.policy.tasks``)."""
    for task_id, status in conn.execute(
        "SELECT id, status FROM tasks WHERE approval_id = ?", (approval_id,)
    ).fetchall():
        after = task_status_after(event, status)
        if after is not None:
            conn.execute("UPDATE tasks SET status = ?, updated_at = ? WHERE id = ?", (after, now, task_id))


def _one(conn: sqlite3.Connection, task_id: str) -> _Row | None:
    found = conn.execute(f"SELECT {_COLUMNS} FROM tasks WHERE id = ?", (_row_id(task_id),)).fetchone()
    return None if found is None else _Row(*found)


class HubTasks(HubConnection):
    def create_task(
        self, *, title: str, agent_name: str, assigned_to: str | None = None, approval_id: str | None = None
    ) -> str:
        checked_title(title)

        def create(conn: sqlite3.Connection) -> str:
            approval_status = None
            if approval_id is not None:
                found = conn.execute(
                    "SELECT status FROM approvals WHERE id = ? AND site = ?", (_row_id(approval_id), self.site)
                ).fetchone()
                if found is None:
                    raise BackboneNotFound(f"no approval {approval_id!r} from site {self.site} in the hub")
                approval_status = str(found[0])
            return str(
                insert_task(
                    conn,
                    site=self.site,
                    title=title,
                    agent_name=agent_name,
                    assigned_to=assigned_to,
                    approval_id=None if approval_id is None else _row_id(approval_id),
                    approval_status=approval_status,
                    now=self.clock(),
                )
            )

        return self._run(create)

    def task(self, task_id: str) -> Task | None:
        rows = self._read(f"SELECT {_COLUMNS} FROM tasks WHERE id = ?", (_row_id(task_id),))
        return _Row(*rows[0]).task() if rows else None

    def tasks(
        self,
        *,
        status: str | None = None,
        agent_name: str | None = None,
        site: str | None = None,
        approval_id: str | None = None,
    ) -> list[Task]:
        approval = None if approval_id is None else _row_id(approval_id)
        rows = self._read(
            f"SELECT {_COLUMNS} FROM tasks WHERE (?1 IS NULL OR status = ?1) AND (?2 IS NULL OR agent_name = ?2)"
            " AND (?3 IS NULL OR site = ?3) AND (?4 IS NULL OR approval_id = ?4) ORDER BY id",
            (status, agent_name, site, approval),
        )
        return [_Row(*r).task() for r in rows]

    def update_task(self, task_id: str, *, status: str | None = None, assigned_to: str | None = None) -> Task:
        if status is None and assigned_to is None:
            raise BackboneRejected("nothing to change: give a status or an assignee")
        if status is not None and status not in TASK_STATUSES:
            raise BackboneRejected(f"a task's status is one of {', '.join(TASK_STATUSES)}, not {status!r}")

        def update(conn: sqlite3.Connection) -> Task:
            row = _one(conn, task_id)
            if row is None:
                raise BackboneNotFound(f"no task {task_id!r}")
            conn.execute(
                "UPDATE tasks SET status = coalesce(?, status), assigned_to = coalesce(?, assigned_to), updated_at = ?"
                " WHERE id = ?",
                (status, assigned_to, self.clock(), row.id),
            )
            changed = _one(conn, task_id)
            assert changed is not None
            return changed.task()

        return self._run(update)
