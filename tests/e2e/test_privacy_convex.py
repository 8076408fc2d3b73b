"""Privacy and retention on Convex, through the CLI as a user runs it, checked in everything the
local Convex server stores (every table's documents and every stored file, read around the
functions): planted secrets never arrive, the cold archive holds no secret, and a forgotten text is
in no table and no archive file; another site's episode needs the operator's deploy key."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import AgentProcess, memsync, write_config
from convex_fixtures import LocalConvex, running_local_convex
from test_redaction import CORPUS, as_stored

FORGET_ME = "the-staging-password-is-hunter2-forever"
DAY_MS = 86_400_000


@pytest.fixture(scope="module")
def convex() -> Iterator[LocalConvex]:
    # A deployment of its own: archiving here takes every site's old episodes.
    with running_local_convex() as server:
        yield server


class Site:
    def __init__(self, convex: LocalConvex, root: Path, name: str, agentdb: Path) -> None:
        self.name = name
        self.secret = convex.register_site(name)
        self.files = write_config(
            root, name, agentdb, root / "unused-hub.db", kind="convex", backbone=f'url = "{convex.url}"\n'
        )
        self.env = {"MEMSYNC_BACKBONE__SITE_SECRET": self.secret}

    def run(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return memsync(*args, "--config", str(self.files.config), env={**self.env, **(env or {})})


def _store(agent: AgentProcess, planted: dict[str, Any]) -> None:
    agent.store(as_stored(planted))


def _archive_everything(convex: LocalConvex) -> None:
    """The weekly cron's work, with a cutoff a day ahead: every episode is old enough."""
    import time

    cutoff = int(time.time() * 1000) + DAY_MS
    convex.admin("action", "episodes:archiveOld", {"cutoff": cutoff, "limit": 10_000, "orphanGraceMs": 0})


def test_secrets_never_reach_convex_nor_its_archive_and_forget_reaches_both(
    convex: LocalConvex, tmp_path: Path, agents: Callable[[Path], AgentProcess]
) -> None:
    laptop_db, vm_db = tmp_path / "laptop.db", tmp_path / "vm.db"
    agent = agents(laptop_db)
    for planted in CORPUS:
        _store(agent, planted)
    _store(agent, {"task": "rotate the staging credentials", "output": f"note: {FORGET_ME}"})
    agent.close()
    agent = agents(vm_db)
    _store(agent, {"task": "vm deploy log", "output": f"vm saw {FORGET_ME}"})
    agent.close()
    laptop = Site(convex, tmp_path / "laptop", "privacy-laptop", laptop_db)
    vm = Site(convex, tmp_path / "vm", "privacy-vm", vm_db)
    for site in (laptop, vm):
        done = site.run("sync")
        assert done.returncode == 0, done.stderr

    secrets = [s for e in CORPUS for s in e["secrets"]]
    survivors = [s for e in CORPUS for s in e["lookalikes"]]
    stored = convex.dump()
    assert [s for s in secrets if s.encode() in stored] == []
    assert [s for s in survivors if s.encode() not in stored] == []  # the control: the text is readable
    assert FORGET_ME.encode() in stored

    # The cold archive: the same, in its files (decompressed).
    _archive_everything(convex)
    listed = json.loads(laptop.run("archive", "list", "--json").stdout)
    assert sum(f["episodes"] for f in listed if f["site"] == laptop.name) == len(CORPUS) + 1
    verified = laptop.run("archive", "verify")
    assert verified.returncode == 0, verified.stderr
    stored = convex.dump()
    assert [s for s in secrets if s.encode() in stored] == []
    assert [s for s in survivors if s.encode() not in stored] == []  # now only in the archive's files
    assert laptop.run("export").stdout == ""  # nothing hot
    cold = [json.loads(line) for line in laptop.run("export", "--archived").stdout.splitlines()]
    assert len(cold) == len(CORPUS) + 1

    # Forget by text: the site's own archived episode goes; the vm's needs the operator's key.
    done = laptop.run("forget", "--matching", FORGET_ME, "--yes", "--json")
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert [e["key"] for e in outcome["forgotten"]] == [f"{laptop.name}:{len(CORPUS) + 1}"]
    assert outcome["forgotten"][0]["archiveWeek"] is not None
    assert outcome["refused"] == []  # on Convex, --matching sees what this site's secret reads: its own
    assert "CONVEX_DEPLOY_KEY" not in done.stderr

    wrong = laptop.run("forget", f"{vm.name}:1", env={"CONVEX_DEPLOY_KEY": "not-the-deploy-key"})
    assert wrong.returncode == 78
    assert "refused the deploy key in CONVEX_DEPLOY_KEY" in wrong.stderr
    assert "not-the-deploy-key" not in wrong.stderr
    refused = laptop.run("forget", f"{vm.name}:1")
    assert refused.returncode == 1
    assert "CONVEX_DEPLOY_KEY" in refused.stderr
    operator = laptop.run("forget", f"{vm.name}:1", env={"CONVEX_DEPLOY_KEY": convex.admin_key})
    assert operator.returncode == 0, operator.stderr
    assert f"forgotten: {vm.name}:1: removed from the Convex deployment" in operator.stderr
    assert convex.admin_key not in operator.stderr + operator.stdout

    stored = convex.dump()
    assert FORGET_ME.encode() not in stored  # no table, no archive file
    assert [s for s in survivors if s.encode() not in stored] == []
    again = vm.run("sync")  # the vm's agent still has it: the key stays refused
    assert again.returncode in (0, 1), again.stderr
    assert FORGET_ME.encode() not in convex.dump()
