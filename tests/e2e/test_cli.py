"""memsync driven as a user drives it: the real CLI in child processes, against real AgentDB files
written by the real agentdb package. Nothing here imports the sync engine; the hub is read back
through ``hub_episodes`` and compared with the AgentDB rows read by plain sqlite3."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    FIXED_TS,
    AgentProcess,
    SiteFiles,
    assert_exactly_once,
    episode,
    expected_episode,
    flat,
    hub_episodes,
    memsync,
    read_agentdb_rows,
    status_json,
    stop_daemon,
    wait_for,
    wait_started,
    write_config,
)

from daemon.control.lock import holder_pid

EXPORT_KEYS = [
    "sourceSite",
    "sourceId",
    "sessionId",
    "task",
    "input",
    "output",
    "critique",
    "reward",
    "success",
    "latencyMs",
    "tokensUsed",
    "tags",
    "metadata",
    "ts",
    "createdAt",
    "agentName",
    "agentPlatform",
    "agentInterface",
    "parentAgent",
    "llmProvider",
    "llmModel",
    "contentHash",
    "syncedAt",
    "memoryType",
    "typeGiven",
    "entities",
    "taskKey",
]


# -- helpers (local to this file) ----------------------------------------------------------------
def log_events(log: Path) -> list[dict[str, Any]]:
    """Every line the daemon wrote, each of which must be a JSON object."""
    events = []
    for number, line in enumerate(log.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            raise AssertionError(f"{log.name} line {number} is not JSON: {line[:300]!r}") from None
        assert isinstance(event, dict), f"{log.name} line {number} is not a JSON object: {line[:300]!r}"
        events.append(event)
    return events


def wait_hub_count(hub: Path, site: str, n: int, proc: subprocess.Popen[bytes] | None = None) -> None:
    def arrived() -> bool:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"daemon exited {proc.returncode} before the hub had {n} episodes")
        return hub.exists() and len(hub_episodes(hub, site)) >= n

    wait_for(arrived, timeout=90, interval=0.2, what=f"{n} episodes of {site} in the hub")


def wait_health(config: Path, level: str, timeout: float = 90) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def reached() -> bool:
        nonlocal seen
        _, seen = status_json(config)
        return seen.get("health") == level

    try:
        wait_for(reached, timeout=timeout, interval=0.3, what=f"status {level}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last status: {json.dumps(seen)[:2000]}") from None
    return seen


# -- run ------------------------------------------------------------------------------------------
def test_run_syncs_real_file_logs_json_and_stops_cleanly_on_sigterm(
    make_agentdb: Callable[..., Path], daemons: Callable[..., subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    agentdb = make_agentdb(50)
    # No [log] format: "auto" must pick JSON because stderr is a file, not a terminal.
    site = write_config(tmp_path / "sites", "laptop", agentdb, tmp_path / "hub.db", log_format=None)
    log = tmp_path / "daemon.log"
    proc = daemons(site.config, log)
    wait_hub_count(site.hub, "laptop", 50, proc)
    assert proc.poll() is None
    assert stop_daemon(proc, timeout=60) == 0

    episodes = assert_exactly_once(site.hub, "laptop", agentdb)
    assert len(episodes) == 50
    events = log_events(log)
    names = [e.get("event") for e in events]
    assert "started" in names, names
    assert names[-1] == "stopped", names
    started = next(e for e in events if e.get("event") == "started")
    assert started.get("site") == "laptop"
    assert started.get("pid") == proc.pid


def test_second_run_for_the_same_site_exits_75_and_the_first_keeps_running(
    make_agentdb: Callable[..., Path],
    site_files: Callable[..., SiteFiles],
    daemons: Callable[..., subprocess.Popen[bytes]],
    agents: Callable[[Path], AgentProcess],
    tmp_path: Path,
) -> None:
    site = site_files("laptop", make_agentdb(50))
    log = tmp_path / "daemon.log"
    first = daemons(site.config, log)
    wait_started(site, first, log)

    second = memsync("run", "--config", str(site.config), timeout=60)
    assert second.returncode == 75, second.stderr
    message = flat(second.stderr)
    assert "'laptop'" in message, message
    assert f"pid {first.pid}" in message, message

    assert first.poll() is None, "the first daemon died when a second one was started"
    assert holder_pid(site.lock) == first.pid
    # ...and it still syncs: a new episode written now arrives.
    agent = agents(site.agentdb)
    agent.store(episode(1000))
    agent.close()
    wait_hub_count(site.hub, "laptop", 51, first)
    first.send_signal(signal.SIGINT)  # Ctrl-C stops it as cleanly as SIGTERM
    assert first.wait(60) == 0
    assert_exactly_once(site.hub, "laptop", site.agentdb)


# -- status ---------------------------------------------------------------------------------------
def test_status_ok_with_a_caught_up_daemon(
    make_agentdb: Callable[..., Path],
    site_files: Callable[..., SiteFiles],
    daemons: Callable[..., subprocess.Popen[bytes]],
) -> None:
    site = site_files("berlin-lab", make_agentdb(50))
    proc = daemons(site.config)
    wait_hub_count(site.hub, "berlin-lab", 50, proc)
    report = wait_health(site.config, "ok")

    code, report = status_json(site.config)
    assert code == 0, report
    assert report["site"] == "berlin-lab"
    assert report["health"] == "ok"
    assert report["daemon"]["running"] is True
    assert report["daemon"]["pid"] == proc.pid
    assert report["cursor"] == 50
    assert report["backlog"] == 0
    assert isinstance(report["lastSyncAt"], str)
    assert report["lastSyncAt"]
    assert report["lagSeconds"] == 0
    assert report["quarantined"] == 0
    assert report["conflicts"] == 0
    assert report["backbone"]["reachable"] is True
    assert report["lastError"] is None

    human = memsync("status", "--config", str(site.config))
    assert human.returncode == 0, human.stdout + human.stderr
    text = flat(human.stdout)
    assert "berlin-lab" in text
    assert "ok" in text
    assert stop_daemon(proc, timeout=60) == 0


def test_status_degraded_without_daemon_and_waiting_without_agentdb_file(
    make_agentdb: Callable[..., Path], site_files: Callable[..., SiteFiles], tmp_path: Path
) -> None:
    site = site_files("berlin-lab", make_agentdb(50))
    synced = memsync("sync", "--once", "--config", str(site.config))
    assert synced.returncode == 0, synced.stderr

    code, report = status_json(site.config)
    assert (code, report["health"]) == (1, "degraded"), report
    assert report["daemon"]["running"] is False
    assert report["backlog"] == 0
    assert any("no daemon" in r for r in report["reasons"]), report["reasons"]
    human = memsync("status", "--config", str(site.config))
    assert human.returncode == 1
    assert "berlin-lab" in human.stdout
    assert "degraded" in human.stdout

    # A file the agent has not written yet, in a folder that exists, is waited for, not a fault (the
    # daemon waits for it). A folder that does not exist is a typo until shown otherwise (degraded).
    (tmp_path / "absent").mkdir()
    missing = site_files("nowhere", tmp_path / "absent" / "missing-agentdb.db")
    code, report = status_json(missing.config)
    assert (code, report["health"]) == (1, "degraded"), report
    assert report["site"] == "nowhere"
    assert report["agentdb"]["waiting"] is True
    assert report["reasons"] == ["no daemon running for this site"]
    human = memsync("status", "--config", str(missing.config))
    assert human.returncode == 1
    assert "nowhere" in human.stdout
    assert f"waiting for the AgentDB file at {missing.agentdb} (not created yet)" in flat(human.stdout)


def test_status_and_quarantine_list_while_the_daemon_creates_its_state_file(
    make_agentdb: Callable[..., Path], site_files: Callable[..., SiteFiles]
) -> None:
    """A daemon starting up creates its state file before it writes the schema into it: for that
    moment the file exists and is empty. status and quarantine list must still answer, not crash."""
    site = site_files("laptop", make_agentdb(50))
    site.state.touch()
    done = memsync("status", "--json", "--config", str(site.config))
    assert "Traceback" not in done.stderr, done.stderr.strip().splitlines()[-1]
    assert done.returncode in (1, 2), done.stderr[-1500:]
    report = json.loads(done.stdout)
    assert (report["site"], report["cursor"], report["backlog"]) == ("laptop", 0, 50)
    assert report["daemon"]["running"] is False

    listed = memsync("quarantine", "list", "--config", str(site.config))
    assert "Traceback" not in listed.stderr, listed.stderr.strip().splitlines()[-1]
    assert listed.returncode == 0
    assert "nothing quarantined" in listed.stdout

    # ...and the state file is then initialised by the first sync as usual.
    assert memsync("sync", "--once", "--config", str(site.config)).returncode == 0
    assert_exactly_once(site.hub, "laptop", site.agentdb)


# -- configuration --------------------------------------------------------------------------------
def _config_error(args: list[str], *, cwd: Path | None = None) -> str:
    done = memsync(*args, timeout=60, cwd=cwd)
    assert done.returncode == 78, f"exit {done.returncode}: {done.stdout} {done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr
    return flat(done.stderr)


def test_config_errors_exit_78_naming_the_problem(site_files: Callable[..., SiteFiles], tmp_path: Path) -> None:
    site = site_files("laptop", tmp_path / "agentdb.db")
    good = site.config.read_text(encoding="utf-8")

    unknown = tmp_path / "unknown.toml"
    unknown.write_text(good.replace("[backbone]\n", '[backbone]\npathh = "x"\n'), encoding="utf-8")
    message = _config_error(["run", "--config", str(unknown)])
    assert "unknown key 'backbone.pathh'" in message, message

    nameless = tmp_path / "nameless.toml"
    nameless.write_text(good.replace('name = "laptop"\n', ""), encoding="utf-8")
    message = _config_error(["sync", "--once", "--config", str(nameless)])
    assert "site.name" in message, message
    assert "missing" in message, message

    broken = tmp_path / "broken.toml"
    broken.write_text("[site\nname = 'laptop'\n", encoding="utf-8")
    message = _config_error(["status", "--config", str(broken)])
    assert "not valid TOML" in message, message
    assert "line 1" in message, message

    negative = tmp_path / "negative.toml"
    negative.write_text(good.replace("poll_interval = 0.2", "poll_interval = -1"), encoding="utf-8")
    message = _config_error(["run", "--config", str(negative)])
    assert "agentdb.poll_interval" in message, message

    message = _config_error(["status", "--config", str(tmp_path / "no-such.toml")])
    assert "no-such.toml" in message.replace(" ", "")


def test_environment_and_dotenv_override_the_file(site_files: Callable[..., SiteFiles], tmp_path: Path) -> None:
    site = site_files("laptop", tmp_path / "agentdb.db")
    _, report = status_json(site.config)
    assert report["site"] == "laptop"

    _, report = status_json(site.config, env={"MEMSYNC_SITE__NAME": "from-env"})
    assert report["site"] == "from-env"

    workdir = tmp_path / "workdir"
    workdir.mkdir()
    (workdir / ".env").write_text("MEMSYNC_SITE__NAME=from-project\n", encoding="utf-8")
    (site.config.parent / ".env").write_text("MEMSYNC_SITE__NAME=from-dotenv\n", encoding="utf-8")
    _, report = status_json(site.config, cwd=workdir)
    assert report["site"] == "from-dotenv", "the .env beside the config counts, not the working directory's"
    # The real environment wins over .env.
    _, report = status_json(site.config, cwd=workdir, env={"MEMSYNC_SITE__NAME": "from-env"})
    assert report["site"] == "from-env"
    # A bad value from the environment is a configuration error too, naming the key.
    done = memsync("status", "--config", str(site.config), env={"MEMSYNC_AGENTDB__POLL_INTERVAL": "-1"})
    assert done.returncode == 78, done.stderr
    assert "poll_interval" in flat(done.stderr)


# -- sync --once ----------------------------------------------------------------------------------
def test_sync_once_backfills_then_has_nothing_new_then_defers_to_a_daemon(
    make_agentdb: Callable[..., Path],
    site_files: Callable[..., SiteFiles],
    daemons: Callable[..., subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:
    site = site_files("laptop", make_agentdb(300))
    first = memsync("sync", "--once", "--config", str(site.config))
    assert first.returncode == 0, first.stderr
    assert "300 new" in flat(first.stderr), first.stderr
    assert_exactly_once(site.hub, "laptop", site.agentdb)

    again = memsync("sync", "--once", "--config", str(site.config))
    assert again.returncode == 0, again.stderr
    assert "0 new, 0 updated" in flat(again.stderr), again.stderr

    log = tmp_path / "daemon.log"
    proc = daemons(site.config, log)
    wait_started(site, proc, log)
    asked = memsync("sync", "--once", "--config", str(site.config))
    assert asked.returncode == 0, asked.stderr
    message = flat(asked.stderr)
    assert f"pid {proc.pid}" in message, message
    assert "asked it to sync" in message, message
    # SIGUSR1 asks for a pass; it must not kill the daemon.
    assert proc.poll() is None, "the daemon died when sync --once poked it"
    assert stop_daemon(proc, timeout=60) == 0
    assert len(hub_episodes(site.hub, "laptop")) == 300


def test_a_second_sync_once_never_kills_one_in_progress(
    make_agentdb: Callable[..., Path], site_files: Callable[..., SiteFiles]
) -> None:
    """Agent hooks run `sync --once` back to back: the second must not take the first for a daemon
    and SIGUSR1 it (SIGUSR1 kills a process that has no handler for it)."""
    site = site_files("laptop", make_agentdb(20000))
    first = subprocess.Popen(
        [sys.executable, "-m", "daemon", "sync", "--once", "--config", str(site.config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(
            lambda: first.poll() is not None or holder_pid(site.lock) == first.pid,
            timeout=60,
            what="the first sync to take the site lock",
        )
        second = memsync("sync", "--once", "--config", str(site.config), timeout=300)
        _, first_err = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate(timeout=30)
    assert first.returncode == 0, (
        f"the first sync --once died with {first.returncode} while a second one ran "
        f"(the second said: {flat(second.stderr)[-300:]!r})"
    )
    assert "Traceback" not in first_err, first_err[-1500:]
    assert second.returncode in (0, 75), second.stderr[-1000:]
    assert len(assert_exactly_once(site.hub, "laptop", site.agentdb)) == 20000


# -- export ---------------------------------------------------------------------------------------
def test_export_prints_json_lines_with_the_documented_keys(
    make_agentdb: Callable[..., Path], site_files: Callable[..., SiteFiles]
) -> None:
    site = site_files("laptop", make_agentdb(50))
    assert memsync("sync", "--once", "--config", str(site.config)).returncode == 0
    done = memsync("export", "--config", str(site.config))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 50
    rows = read_agentdb_rows(site.agentdb)
    for line in lines:
        record = json.loads(line)
        assert list(record) == EXPORT_KEYS
        local_id = int(record["sourceId"])
        assert record["sourceSite"] == "laptop"
        # Generated files: ts = created_at = 1735689600 + i*60 seconds for the i-th episode (id i+1).
        assert record["ts"] == (FIXED_TS + (local_id - 1) * 60) * 1000
        assert record["createdAt"] == record["ts"]
        assert {k: record[k] for k in expected_episode(rows[local_id])} == expected_episode(rows[local_id])
        assert isinstance(record["syncedAt"], int)
        assert record["syncedAt"] > FIXED_TS * 1000
    assert sorted(int(json.loads(line)["sourceId"]) for line in lines) == list(range(1, 51))

    other = memsync("export", "--config", str(site.config), "--site", "somewhere-else")
    assert (other.returncode, other.stdout) == (1, "")
    assert other.stderr.startswith("memsync: no episodes from site 'somewhere-else' in embedded hub ")


def test_export_before_anything_was_synced_says_so(site_files: Callable[..., SiteFiles], tmp_path: Path) -> None:
    site = site_files("laptop", tmp_path / "absent.db")
    done = memsync("export", "--config", str(site.config))
    assert (done.returncode, done.stdout) == (1, "")
    assert "does not exist yet: nothing has been synced to it" in done.stderr


# -- an AgentDB file that is missing, not SQLite, or not AgentDB ----------------------------------
def test_daemon_waits_for_a_missing_agentdb_file_then_syncs_it(
    make_agentdb: Callable[..., Path],
    site_files: Callable[..., SiteFiles],
    daemons: Callable[..., subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:
    source = make_agentdb(50, name="generated.db")
    target = tmp_path / "data" / "agentdb.db"  # not even its folder exists yet
    site = site_files("laptop", target)
    log = tmp_path / "daemon.log"
    proc = daemons(site.config, log)
    wait_started(site, proc, log)

    # The daemon waits for the agent's first write, and status says so; with not even the file's
    # folder there it may be a typo in agentdb.path, so status is degraded and names the folder.
    report = wait_health(site.config, "degraded")
    assert any(f"{target.parent} does not exist" in r for r in report["reasons"]), report["reasons"]
    assert report["agentdb"]["waiting"] is True
    assert report["agentdb"]["error"] is None
    assert f"waiting for the AgentDB file at {target} (not created yet)" in flat(
        memsync("status", "--config", str(site.config)).stdout
    )
    assert proc.poll() is None, "the daemon gave up on a missing AgentDB file"

    target.parent.mkdir()
    staging = target.with_name("incoming.tmp")
    shutil.copyfile(source, staging)
    os.replace(staging, target)
    wait_hub_count(site.hub, "laptop", 50, proc)
    wait_health(site.config, "ok")
    assert stop_daemon(proc, timeout=60) == 0
    assert_exactly_once(site.hub, "laptop", target)
    events = log_events(log)
    waiting = [e for e in events if e.get("event") == "waiting for the AgentDB file to be created"]
    # Said once, a warning naming the missing folder (a typo until the agent creates it), not an error.
    assert [e.get("level") for e in waiting] == ["warning"]
    assert f"{target.parent} does not exist" in str(waiting[0].get("detail"))
    assert not [e for e in events if e.get("event") == "problem" and str(target) in str(e.get("detail"))]


def test_daemon_survives_a_file_that_is_not_sqlite_until_a_real_one_replaces_it(
    make_agentdb: Callable[..., Path],
    site_files: Callable[..., SiteFiles],
    daemons: Callable[..., subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:
    source = make_agentdb(50, name="generated.db")
    target = tmp_path / "agentdb.db"
    target.write_text("these are my notes, not a database\n" * 20, encoding="utf-8")
    site = site_files("laptop", target)
    log = tmp_path / "daemon.log"
    proc = daemons(site.config, log)
    wait_started(site, proc, log)

    report = wait_health(site.config, "down")
    assert "not a SQLite file" in report["agentdb"]["error"], report["agentdb"]
    assert proc.poll() is None

    shutil.copyfile(source, target)  # in place, as sql.js writes
    wait_hub_count(site.hub, "laptop", 50, proc)
    wait_health(site.config, "ok")
    assert stop_daemon(proc, timeout=60) == 0
    assert_exactly_once(site.hub, "laptop", target)


def test_status_says_clearly_when_the_file_has_no_episodes_table(
    site_files: Callable[..., SiteFiles], daemons: Callable[..., subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    target = tmp_path / "agentdb.db"
    conn = sqlite3.connect(target)
    conn.execute("CREATE TABLE recipes (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO recipes (name) VALUES ('bread')")
    conn.commit()
    conn.close()
    site = site_files("laptop", target)
    log = tmp_path / "daemon.log"
    proc = daemons(site.config, log)
    wait_started(site, proc, log)

    report = wait_health(site.config, "down")
    assert "no episodes table" in report["agentdb"]["error"], report["agentdb"]
    assert "recipes" in report["agentdb"]["error"]
    human = memsync("status", "--config", str(site.config))
    assert human.returncode == 2
    assert "no episodes table" in flat(human.stdout), human.stdout
    assert proc.poll() is None
    assert stop_daemon(proc, timeout=60) == 0
    assert not site.hub.exists() or hub_episodes(site.hub, "laptop") == []


# -- bad rows -------------------------------------------------------------------------------------
def test_invalid_utf8_row_is_quarantined_then_delivered_after_fix_and_retry(
    site_files: Callable[..., SiteFiles], agents: Callable[[Path], AgentProcess], tmp_path: Path
) -> None:
    site = site_files("laptop", tmp_path / "agentdb.db")
    agent = agents(site.agentdb)
    for i in range(3):
        agent.store(episode(i))
    agent.exec("INSERT INTO episodes (session_id, task, output) VALUES ('s', 't', CAST(X'C3FF' AS TEXT))")
    later = [agent.store(episode(i)) for i in range(3, 8)]
    rows = read_agentdb_rows(site.agentdb)
    bad = [i for i, r in rows.items() if r["output"] == b"\xc3\xff"]
    assert len(bad) == 1, "the package did not store the invalid bytes as written"
    bad_id = bad[0]
    assert all(i > bad_id for i in later)

    done = memsync("sync", "--once", "--config", str(site.config))
    assert done.returncode == 0, done.stderr
    assert "1 quarantined" in flat(done.stderr), done.stderr
    delivered = {e["sourceId"] for e in hub_episodes(site.hub, "laptop")}
    assert delivered == {str(i) for i in rows if i != bad_id}, "rows after the bad one were held back"

    listed = memsync("quarantine", "list", "--json", "--config", str(site.config))
    assert listed.returncode == 0, listed.stderr
    entries = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [e["id"] for e in entries] == [bad_id]
    assert "'output'" in entries[0]["reason"], entries[0]
    assert "UTF-8" in entries[0]["reason"]
    human = memsync("quarantine", "list", "--config", str(site.config))
    assert human.returncode == 0
    assert str(bad_id) in human.stdout
    assert "output" in human.stdout

    code, report = status_json(site.config)
    assert report["quarantined"] == 1
    assert code == 1

    agent.exec(f"UPDATE episodes SET output = 'fixed' WHERE id = {bad_id}")
    retried = memsync("quarantine", "retry", "--config", str(site.config))
    assert retried.returncode == 0, retried.stderr
    assert "1 delivered" in flat(retried.stderr), retried.stderr

    agent.close()
    listed = memsync("quarantine", "list", "--json", "--config", str(site.config))
    assert listed.stdout.strip() == ""
    assert "nothing quarantined" in memsync("quarantine", "list", "--config", str(site.config)).stdout
    episodes = assert_exactly_once(site.hub, "laptop", site.agentdb)
    fixed = next(e for e in episodes if e["sourceId"] == str(bad_id))
    assert fixed["output"] == "fixed"
    assert (fixed["sessionId"], fixed["task"]) == ("s", "t")
    again = memsync("sync", "--once", "--config", str(site.config))
    assert "0 new, 0 updated" in flat(again.stderr)
    assert "0 quarantined" in flat(again.stderr)


# -- demo -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("env", "writer"),
    [
        pytest.param({}, "agentdb (npm, sql.js)", id="the real package"),
        # Without Node or this checkout's generator, the demo writes the way sql.js does itself.
        pytest.param({"MEMSYNC_AGENTDB_GEN": "/nonexistent"}, "built-in sql.js-style writer", id="built-in writer"),
    ],
)
def test_demo_syncs_two_sites_exactly_once(tmp_path: Path, env: dict[str, str], writer: str) -> None:
    folder = tmp_path / "demo"
    # A PATH without this installation's memsync, as in a checkout whose venv is not activated.
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "memsync").exists())
    hinted_env = {**os.environ, **env, "PATH": path}
    done = memsync("demo", "--duration", "3", "--dir", str(folder), timeout=180, env=hinted_env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"agents: {writer}" in done.stdout
    assert "(through the laptop's daemon, " in done.stdout
    assert "xxxxx" not in done.stdout, "the results show the episodes' text, not the writer's size padding"
    try_line = next(line for line in done.stdout.splitlines() if line.startswith("try: "))
    assert try_line.endswith("| head -3"), "the try: commands are whole lines, not cut at 80 columns"
    # The hint names memsync as this user can run it: `memsync` is not on this PATH.
    status_hint = try_line.removeprefix("try: ").split("   |   ")[0]
    assert not status_hint.startswith("memsync ")
    shown = subprocess.run(status_hint, shell=True, capture_output=True, text=True, env=hinted_env, check=False)
    assert shown.returncode in (0, 1), shown.stderr
    assert "site          laptop" in shown.stdout
    sites_line = next(line for line in done.stdout.splitlines() if "sites: " in line)
    assert sites_line.endswith("sites: laptop, vm"), "the closing search shows every site's episodes"
    lines = done.stdout.splitlines()
    summary = next((n for n, line in enumerate(lines) if line.strip().startswith("summary")), None)
    assert summary is not None, done.stdout
    written: dict[str, int] = {}
    for site in ("laptop", "vm"):
        row = next((line for line in lines[summary:] if f" {site} " in line), None)
        assert row is not None, done.stdout
        cells = [c.strip() for c in row.replace("┃", "│").split("│") if c.strip()]
        assert cells[0] == site
        assert cells[3] == "yes", row
        written[site] = int(cells[1])
        assert int(cells[2]) == written[site], row
    episodes = hub_episodes(folder / "hub.db")
    by_site = Counter(e["sourceSite"] for e in episodes)
    assert set(by_site) == {"laptop", "vm"}
    assert dict(by_site) == written
    assert len({(e["sourceSite"], e["sourceId"]) for e in episodes}) == len(episodes)


# -- the command itself ---------------------------------------------------------------------------
def test_version_and_help_say_what_a_person_types() -> None:
    version = memsync("--version")
    assert version.returncode == 0
    assert version.stdout.strip() == f"memsync {metadata.version('memsync')}"
    for command in ("run", "sync", "status", "search", "reindex", "export", "quarantine", "service", "demo"):
        shown = memsync(command, "--help")
        assert shown.returncode == 0, shown.stderr
        assert "<bool>" not in shown.stdout
        assert "list[" not in shown.stdout
    sync_help = flat(memsync("sync", "--help").stdout)
    assert "--once one pass, then exit: what `sync` always does" in sync_help
    assert "--wait" in sync_help
    assert "--searchable" in sync_help


def test_an_error_is_one_unwrapped_line_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    config = tmp_path / "a-rather-long-folder-name-so-that-the-message-is-well-over-eighty-columns" / "laptop.toml"
    config.parent.mkdir()
    config.write_text('[site]\nname = "laptop"\n[agentdb]\npath = "a.db"\n[sink]\nx = 1\n', encoding="utf-8")
    done = memsync("sync", "--config", str(config))
    assert done.returncode == 78
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    assert len(line) > 120
    assert line.startswith("memsync: configuration error: invalid configuration: unknown key 'sink'")
    assert str(config) in line
