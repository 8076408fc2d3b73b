"""``memsync approval request --task`` and ``memsync tasks``, end to end through the real CLI in child
processes, on the embedded hub and on Convex (the real functions in the local server): a request
with a task blocks it, an approval from the CLI moves it on, a person updates it; bad input is one
sentence and the CLI's exit codes."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import memsync, write_config

from sync.tasks import TASK_STATUSES


class Site:
    def __init__(self, request: pytest.FixtureRequest, tmp_path: Path, make_agentdb: Callable[..., Path]) -> None:
        self.env: dict[str, str] = {}
        if request.param == "local":
            self.name = "laptop"
            self.files = write_config(tmp_path / "site", self.name, make_agentdb(3), tmp_path / "hub.db")
        else:
            convex = request.getfixturevalue("local_convex")
            self.name = f"tasks-{uuid.uuid4().hex[:8]}"
            self.env = {"MEMSYNC_BACKBONE__SITE_SECRET": convex.register_site(self.name)}
            self.files = write_config(
                tmp_path / "site",
                self.name,
                make_agentdb(3),
                tmp_path / "unused-hub.db",
                kind="convex",
                backbone=f'url = "{convex.url}"\n',
            )

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return memsync(*args, "--config", str(self.files.config), env=self.env)

    def ok(self, *args: str) -> subprocess.CompletedProcess[str]:
        done = self.run(*args)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        return done

    def json(self, *args: str) -> Any:
        return json.loads(self.ok(*args, "--json").stdout)

    def refused(self, code: int, *args: str) -> str:
        """The one sentence a refusal says (argparse's own adds its usage line before it)."""
        done = self.run(*args)
        assert done.returncode == code, (args, done.returncode, done.stderr)
        assert "Traceback" not in done.stderr
        assert done.stdout == ""
        return done.stderr.strip().splitlines()[-1]


@pytest.fixture(params=["local", "convex"])
def site(request: pytest.FixtureRequest, tmp_path: Path, make_agentdb: Callable[..., Path]) -> Site:
    return Site(request, tmp_path, make_agentdb)


def test_a_request_with_a_task_then_an_approval_from_the_cli_moves_the_task(site: Site) -> None:
    site.ok("sync", "--once")
    ask = ("approval", "request", "--category", "deploy", "--summary", "ship 2.0 to production")
    asked = site.ok(*ask, "--episode", "2", "--task", "ship the 2.0 release", "--assign", "bob")
    approval_id = asked.stdout.strip()
    assert "blocked: ship the 2.0 release" in asked.stderr

    # The fleet's tasks (a shared Convex holds other tests' sites too): this site's one.
    (task,) = [t for t in site.json("tasks") if t["site"] == site.name]
    assert {k: task[k] for k in ("site", "title", "status", "assignedTo", "approvalId")} == {
        "site": site.name,
        "title": "ship the 2.0 release",
        "status": "blocked",
        "assignedTo": "bob",
        "approvalId": approval_id,
    }
    task_id = task["taskId"]
    shown = site.json("tasks", "show", task_id)
    assert shown["approval"]["status"] == "pending"
    assert shown["approval"]["summary"] == "ship 2.0 to production"
    text = site.ok("tasks", "show", task_id).stdout
    assert f"approval {approval_id} (deploy): pending, expires " in text

    site.ok("approvals", "defer", approval_id, "--by", "ann")
    assert site.json("tasks", "show", task_id)["status"] == "blocked"
    site.ok("approvals", "approve", approval_id, "--by", "ann")
    after = site.json("tasks", "show", task_id)
    assert (after["status"], after["approval"]["status"], after["approval"]["resolvedBy"]) == (
        "in_progress",
        "approved",
        "ann",
    )
    assert f"approval {approval_id} (deploy): approved by ann " in site.ok("tasks", "show", task_id).stdout
    # The episode it is about carries the decision too.
    exported = {e["sourceId"]: e for e in map(json.loads, site.ok("export").stdout.splitlines())}
    assert exported["2"]["approvalStatus"] == "approved"

    updated = site.ok("tasks", "update", task_id, "--status", "done", "--assign", "cy")
    assert f"task {task_id} done, assigned to cy" in updated.stderr
    mine = ("--site", site.name)
    assert [(t["taskId"], t["status"]) for t in site.json("tasks", "list", *mine, "--status", "done")] == [
        (task_id, "done")
    ]
    assert site.json("tasks", *mine, "--status", "blocked") == []
    assert [t["taskId"] for t in site.json("tasks", *mine)] == [task_id]
    assert site.json("tasks", "--site", "nowhere") == []
    done = site.json("tasks", "--status", "done")
    assert task_id in [t["taskId"] for t in done]
    assert {t["status"] for t in done} == {"done"}
    agent = str(task["agentName"])
    assert [t["taskId"] for t in site.json("tasks", *mine, "--agent", agent)] == [task_id]
    assert site.json("tasks", *mine, "--agent", "nobody") == []
    listed = site.ok("tasks").stdout
    assert "ship the 2.0 release" in listed
    assert "done" in listed

    # A rejection cancels a task linked by id; one a person finished is left alone.
    linked = site.ok(*ask, "--task-id", task_id, "--json")
    assert json.loads(linked.stdout)["taskId"] == task_id
    site.ok("tasks", "update", task_id, "--status", "in_progress")
    site.ok("approvals", "reject", json.loads(linked.stdout)["approvalId"], "--by", "ann")
    assert site.json("tasks", "show", task_id)["status"] == "cancelled"


def test_bad_input_is_one_sentence_with_the_cli_s_exit_codes(site: Site) -> None:
    site.ok("sync", "--once")
    ask = ("approval", "request", "--category", "deploy", "--summary", "s")
    assert "no task '999999'" in site.refused(64, *ask, "--task-id", "999999")
    assert "give one of them" in site.refused(2, *ask, "--task", "t", "--task-id", "1")
    assert "--task is empty" in site.refused(2, *ask, "--task", " ")
    assert "--assign is for the task" in site.refused(2, *ask, "--assign", "bob")
    assert site.json("approvals", "--site-only") == []  # nothing was asked

    task_id = json.loads(site.ok(*ask, "--task", "t", "--json").stdout)["taskId"]
    assert "nothing to change" in site.refused(2, "tasks", "update", task_id)
    assert "no task '999999'" in site.refused(64, "tasks", "update", "999999", "--status", "done")
    assert "no task 'nope'" in site.refused(64, "tasks", "show", "nope")
    assert "invalid choice: 'later'" in site.refused(2, "tasks", "update", task_id, "--status", "later")
    assert "invalid choice" in site.refused(2, "tasks", "--status", "soon")
    assert site.json("tasks", "show", task_id)["status"] == "blocked"
    assert set(TASK_STATUSES) >= {t["status"] for t in site.json("tasks")}
    assert [t["taskId"] for t in site.json("tasks", "--site", site.name)] == [task_id]
