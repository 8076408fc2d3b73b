"""What a new user meets running memsync for real, through the real CLI in child processes: paths
it cannot use, a second machine under the same site name, a search right after a sync, a hook
that waits for its episode."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import (
    SiteFiles,
    hub_episodes,
    memsync,
    status_json,
    wait_for,
    wait_started,
    write_config,
)
from harness import logged

from sync.sidecar import Sidecar

Daemons = Callable[..., subprocess.Popen[bytes]]
# Root reads and writes any file whatever its mode; dropped capabilities make it obey the modes
# like any user. The same uid keeps the checkout and its venv reachable wherever the clone lives
# (a 0700 home or temporary folder that another user could not enter).
UNPRIVILEGED = ["setpriv", "--inh-caps=-all", "--bounding-set=-all", "--"] if os.geteuid() == 0 else []
USER = pwd.getpwuid(os.geteuid()).pw_name


def one_sentence(stderr: str) -> str:
    """The one line a failing command printed; no traceback."""
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip() and not line.startswith("{")]
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder of the test's own."""
    path = Path(tempfile.mkdtemp(prefix="ms-ops-", dir="/tmp"))
    yield path
    path.chmod(0o700)
    for folder in path.rglob("*"):
        if folder.is_dir() and not folder.is_symlink():
            folder.chmod(0o700)
    shutil.rmtree(path, ignore_errors=True)


def as_other_user(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The CLI as a user the file modes apply to."""
    return subprocess.run(
        [*UNPRIVILEGED, sys.executable, "-m", "daemon", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "HOME": "/tmp"},
        cwd="/tmp",
        check=False,
    )


def make_dirs(*paths: Path) -> None:
    for path in paths:
        path.mkdir(parents=True, exist_ok=True)


# -- paths it cannot use --------------------------------------------------------------------------
def test_an_unreadable_agentdb_file_is_named_with_the_user_and_stops_the_daemon(
    shared_dir: Path, make_agentdb: Callable[..., Path]
) -> None:
    agentdb = shared_dir / "agent" / "agentdb.db"
    agentdb.parent.mkdir()
    shutil.copy(make_agentdb(5), agentdb)
    agentdb.chmod(0o000)
    make_dirs(shared_dir / "sites")
    site = write_config(shared_dir / "sites", "laptop", agentdb, shared_dir / "sites" / "hub.db")
    for command in (["run"], ["sync"]):
        done = as_other_user(*command, "--config", str(site.config))
        assert done.returncode == 78, done.stderr
        line = one_sentence(done.stderr)
        assert str(agentdb) in line
        assert f"'{USER}'" in line
        assert "read access" in line
    status = as_other_user("status", "--json", "--config", str(site.config))
    report = json.loads(status.stdout)
    assert status.returncode == 2
    assert any(str(agentdb) in reason and "cannot read" in reason for reason in report["reasons"])


def test_a_folder_given_as_the_agentdb_file_is_refused_by_every_command(
    site_files: Callable[..., SiteFiles], tmp_path: Path
) -> None:
    folder = tmp_path / "agentdb-folder"
    folder.mkdir()
    site = site_files("laptop", folder)
    for command in (["run"], ["sync"]):
        done = memsync(*command, "--config", str(site.config))
        assert done.returncode == 78
        assert f"agentdb.path {folder} is a folder, not an AgentDB file" in one_sentence(done.stderr)
    code, report = status_json(site.config)
    assert code == 2
    assert any("is a folder" in reason for reason in report["reasons"])


def test_an_unwritable_state_folder_exits_78_naming_it(shared_dir: Path, make_agentdb: Callable[..., Path]) -> None:
    agentdb = shared_dir / "agentdb.db"
    shutil.copy(make_agentdb(5), agentdb)
    agentdb.chmod(0o644)
    locked = shared_dir / "root-only"
    locked.mkdir()
    locked.chmod(0o555)  # not even its owner may write
    make_dirs(shared_dir / "sites")
    site = write_config(shared_dir / "sites", "laptop", agentdb, shared_dir / "sites" / "hub.db")
    text = site.config.read_text().replace(f'path = "{site.state}"', f'path = "{locked / "state" / "laptop.state.db"}"')
    site.config.write_text(text)
    done = as_other_user("run", "--config", str(site.config))
    assert done.returncode == 78
    line = one_sentence(done.stderr)
    assert f"cannot create {locked / 'state'} (state.path)" in line
    assert f"no write access to {locked}" in line
    status = as_other_user("status", "--json", "--config", str(site.config))
    assert status.returncode == 2
    assert any("state.path" in reason for reason in json.loads(status.stdout)["reasons"])


def test_a_missing_agentdb_file_is_one_clear_line(site_files: Callable[..., SiteFiles], tmp_path: Path) -> None:
    missing = tmp_path / "not-yet" / "agentdb.db"
    done = memsync("sync", "--config", str(site_files("laptop", missing).config))
    assert done.returncode == 0, "an agent that has not written yet is nothing to fix"
    assert str(missing) in one_sentence(done.stderr)
    assert "nothing to sync yet" in done.stderr


def test_a_backbone_that_stays_locked_is_logged_once_and_once_when_it_answers(
    site_files: Callable[..., SiteFiles], make_agentdb: Callable[..., Path], daemons: Daemons, tmp_path: Path
) -> None:
    site = site_files("laptop", make_agentdb(5), backbone="busy_timeout_ms = 20", sync="retry_max_wait = 0.2")
    log = tmp_path / "daemon.log"
    proc = daemons(site.config, log)
    wait_started(site, proc, log)
    wait_for(lambda: len(hub_episodes(site.hub, "laptop")) == 5, what="the first pass")
    holder = sqlite3.connect(site.hub, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    shutil.copy(make_agentdb(40, seed=7, name="more.db"), site.agentdb)  # new rows to push

    # Each failed pass stamps its error in the sidecar (for status) while the log says it once.
    stamps: set[float] = set()

    def failed_passes() -> int:
        sidecar = Sidecar(site.state, readonly=True)
        try:
            stamp = sidecar.get_float("last_error_at")
        finally:
            sidecar.close()
        stamps.update([] if stamp is None else [stamp])
        return len(stamps)

    wait_for(lambda: log.read_text().count("database is locked") >= 1, what="the first failure")
    wait_for(lambda: failed_passes() >= 3, what="several failed passes (retries at up to 0.2 s)")
    holder.execute("ROLLBACK")
    holder.close()
    wait_for(lambda: len(logged(log, "recovered")) >= 1, what="the recovery line")
    problems = [e for e in logged(log, "problem") if e.get("kind") == "backbone"]
    assert len(problems) == 1, problems
    assert "database is locked" in str(problems[0]["detail"])


# -- one site name, one source ------------------------------------------------------------------
def test_a_second_source_under_a_site_name_is_refused_until_it_takes_over(
    site_files: Callable[..., SiteFiles], make_agentdb: Callable[..., Path], tmp_path: Path
) -> None:
    first = site_files("laptop", make_agentdb(10))
    second = write_config(tmp_path / "second", "laptop", make_agentdb(20, seed=9, name="other.db"), first.hub)
    assert memsync("sync", "--config", str(first.config)).returncode == 0
    for command in (["sync"], ["run"]):
        refused = memsync(*command, "--config", str(second.config))
        assert refused.returncode == 78
        line = one_sentence(refused.stderr)
        assert "site 'laptop' is already fed by another source" in line
        assert str(first.agentdb) in line
        assert str(second.agentdb) in line
        assert "--take-over" in line
    assert len(hub_episodes(first.hub, "laptop")) == 10, "nothing of the second source was merged"

    taken = memsync("sync", "--take-over", "--config", str(second.config))
    assert taken.returncode == 0, taken.stderr
    back = memsync("sync", "--config", str(first.config))
    assert back.returncode == 78, "the first source is now the other one"
    _code, report = status_json(second.config)
    assert str(second.agentdb) in report["backbone"]["source"]


def test_a_reset_sidecar_on_the_same_machine_is_the_same_source(
    site_files: Callable[..., SiteFiles], make_agentdb: Callable[..., Path]
) -> None:
    site = site_files("laptop", make_agentdb(10))
    assert memsync("sync", "--config", str(site.config)).returncode == 0
    site.state.unlink()  # the README's recovery: deleting the sidecar is safe
    again = memsync("sync", "--config", str(site.config))
    assert again.returncode == 0, again.stderr


def unshare_works() -> bool:
    try:
        done = subprocess.run(["unshare", "--uts", "true"], capture_output=True, check=False, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@pytest.mark.skipif(not unshare_works(), reason="needs `unshare --uts` (root) to give a process another host name")
def test_a_cloned_machine_with_a_copied_sidecar_is_refused(
    site_files: Callable[..., SiteFiles], make_agentdb: Callable[..., Path], tmp_path: Path
) -> None:
    site = site_files("laptop", make_agentdb(10))
    assert memsync("sync", "--config", str(site.config)).returncode == 0
    clone = subprocess.run(
        [
            "unshare",
            "--uts",
            "sh",
            "-c",
            'hostname clone-of-laptop && exec "$@"',
            "sh",
            sys.executable,
            "-m",
            "daemon",
            "sync",
            "--config",
            str(site.config),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert clone.returncode == 78, clone.stderr
    line = one_sentence(clone.stderr)
    assert "this is host 'clone-of-laptop'" in line
    # Back on the original machine, the same AgentDB file: still this site's source.
    assert memsync("sync", "--config", str(site.config)).returncode == 0
