"""Smaller rough edges a new user hit (issue 19, item 9), each through the real CLI in child
processes against real AgentDB files and a real hub: approvals whose ids name nothing, decisions in
``approvals list`` and ``export``, ``export --since/--limit``, counts and their plurals."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from conftest import ROOT, AgentProcess, SiteFiles, episode, memsync, read_agentdb_rows, status_json

from daemon.counts import counted


def _one_sentence(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def _synced(site_files: Callable[..., SiteFiles], make_agentdb: Callable[..., Path], n: int) -> SiteFiles:
    site = site_files("laptop", make_agentdb(n))
    done = memsync("sync", "--once", "--config", str(site.config))
    assert done.returncode == 0, done.stderr
    return site


def _export(site: SiteFiles, *extra: str) -> list[dict[str, object]]:
    done = memsync("export", "--config", str(site.config), *extra)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_approval_ids_that_name_nothing_exit_64_and_a_decision_shows_in_list_and_export(
    site_files: Callable[..., SiteFiles], make_agentdb: Callable[..., Path]
) -> None:
    site = _synced(site_files, make_agentdb, 5)
    config = str(site.config)
    ask = ("approval", "request", "--category", "send_message", "--summary", "email the report", "-c", config)

    # An episode the hub does not hold: refused, one sentence, and no approval left behind.
    refused = memsync(*ask, "--episode", "999")
    assert refused.returncode == 64, refused.stderr
    assert "no episode '999' from site laptop" in _one_sentence(refused.stderr)
    assert json.loads(memsync("approvals", "--json", "-c", config).stdout) == []

    asked = memsync(*ask, "--episode", "2")
    assert asked.returncode == 0, asked.stderr
    approval_id = asked.stdout.strip()

    # An unknown id is not "expired" (2): a distinct exit, one sentence.
    unknown = memsync("approval", "wait", "424242", "--timeout", "0", "-c", config)
    assert unknown.returncode == 64
    assert "no approval '424242'" in _one_sentence(unknown.stderr)
    assert memsync("approval", "wait", approval_id, "--timeout", "0", "-c", config).returncode == 2  # pending
    for verb in ("approve", "reject", "defer"):
        nothing = memsync("approvals", verb, "424242", "-c", config)
        assert nothing.returncode == 64, nothing.stderr
        assert "no approval '424242'" in _one_sentence(nothing.stderr)

    pending = memsync("approvals", "list", "-c", config, env={"COLUMNS": "200"})
    assert "expires" in pending.stdout.split("\n", 3)[-1]  # the row, not only the header
    decided = memsync("approvals", "approve", approval_id, "--by", "ann", "-c", config)
    assert decided.returncode == 0, decided.stderr
    assert memsync("approval", "wait", approval_id, "-c", config).returncode == 0

    listed = memsync("approvals", "list", "-c", config, env={"COLUMNS": "200"})
    (row,) = [line for line in listed.stdout.splitlines() if line.strip("│ ").startswith(approval_id)]
    assert "approved by ann" in row
    assert "decided 20" in row  # with its day
    assert "expires" not in row
    (view,) = json.loads(memsync("approvals", "--json", "-c", config).stdout)
    assert view["resolvedBy"] == "ann"
    assert isinstance(view["resolvedAt"], int)

    # The decision is in export, after the documented fields, on that episode only.
    records = {r["sourceId"]: r for r in _export(site)}
    assert records["2"]["approvalStatus"] == "approved"
    assert list(records["2"])[-1] == "approvalStatus"
    assert [k for k, r in records.items() if "approvalStatus" in r] == ["2"]


def test_export_since_and_limit(site_files: Callable[..., SiteFiles], make_agentdb: Callable[..., Path]) -> None:
    site = _synced(site_files, make_agentdb, 20)
    everything = _export(site)
    assert len(everything) == 20

    assert _export(site, "--limit", "3") == everything[:3]
    assert _export(site, "--limit", "0") == []
    # By the episode's ts: an ISO time at the median ts keeps exactly those at or after it.
    stamps = sorted(int(str(r["ts"])) for r in everything)
    cut = stamps[len(stamps) // 2]
    iso = datetime.fromtimestamp(cut / 1000, UTC).isoformat()
    since = _export(site, "--since", iso)
    assert since == [r for r in everything if int(str(r["ts"])) >= cut]
    assert 0 < len(since) < 20
    assert _export(site, "--since", iso, "--limit", "1") == since[:1]
    assert _export(site, "--since", "2000-01-01") == everything
    assert _export(site, "--since", "2999-01-01") == []

    for bad in (("--since", "yesterday-ish"), ("--limit", "-1"), ("--limit", "many")):
        done = memsync("export", "--config", str(site.config), *bad)
        assert done.returncode == 2, (bad, done.stderr)
        assert done.stdout == ""
        assert "Traceback" not in done.stderr


def test_counts_say_one_episode_and_two_episodes() -> None:
    assert [counted(n, "episode") for n in (0, 1, 2)] == ["0 episodes", "1 episode", "2 episodes"]
    assert counted(1, "entry", "entries") == "1 entry"
    assert counted(3, "entry", "entries") == "3 entries"


def test_an_unreadable_agentdb_file_names_the_user_in_the_setfacl_hint(
    site_files: Callable[..., SiteFiles], make_agentdb: Callable[..., Path]
) -> None:
    site = site_files("laptop", make_agentdb(3))
    site.agentdb.chmod(0)
    # root reads any file: it runs without its capabilities here, as a user would.
    prefix = ["setpriv", "--inh-caps=-all", "--bounding-set=-all", "--"] if os.geteuid() == 0 else []
    done = subprocess.run(
        [*prefix, sys.executable, "-m", "daemon", "sync", "--once", "--config", str(site.config)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 78, done.stderr
    name = pwd.getpwuid(os.geteuid()).pw_name
    assert f"`setfacl -m u:{name}:r {site.agentdb}`" in _one_sentence(done.stderr)


def test_archive_list_and_status_count_what_is_archived_now_and_the_folder_is_where_the_readme_says(
    site_files: Callable[..., SiteFiles], make_agentdb: Callable[..., Path]
) -> None:
    from sync.backbone.hub import HubBackbone

    site = _synced(site_files, make_agentdb, 6)
    config = str(site.config)
    newest = max(int(str(r["ts"])) for r in _export(site))
    # An approval the policy decides at once (internal), about an episode about to be archived.
    asked = memsync("approval", "request", "--category", "internal", "--summary", "s", "--episode", "3", "-c", config)
    assert asked.returncode == 0, asked.stderr
    hub = HubBackbone(site.hub, "laptop")
    try:
        assert hub.archive_older_than(newest + 1, 100) == 6
    finally:
        hub.close()
    # The archive guide names the folder: `hub.archive/` beside `hub.db` (the hub's name without its
    # extension, as for `hub.alerts.db`).
    guide = ROOT / "docs" / "guides" / "archive.md"
    assert "`hub.archive/<site>/<week>.<sha>.jsonl.gz`" in guide.read_text(encoding="utf-8")
    assert sorted(p.name for p in site.hub.parent.iterdir() if p.name.endswith(".archive")) == ["hub.archive"]
    assert list((site.hub.parent / "hub.archive" / "laptop").glob("*.jsonl.gz"))

    def listed() -> list[dict[str, object]]:
        done = memsync("archive", "list", "--json", "--config", config)
        assert done.returncode == 0, done.stderr
        return list(json.loads(done.stdout))

    cold = {r["sourceId"]: r for r in _export(site, "--archived")}
    assert len(cold) == 6
    assert cold["3"]["approvalStatus"] == "approved"
    assert list(cold["3"])[-2:] == ["approvalStatus", "archived"]
    assert [k for k, r in cold.items() if "approvalStatus" in r] == ["3"]

    weeks = listed()
    assert sum(int(str(f["episodes"])) for f in weeks) == 6
    assert all(f["episodes"] == f["inFile"] for f in weeks)

    restored = memsync("archive", "restore", "--json", "--config", config)
    assert json.loads(restored.stdout) == {"restored": 6}
    after = listed()
    assert [f["week"] for f in after] == [f["week"] for f in weeks]  # the files stay
    assert [f["episodes"] for f in after] == [0] * len(weeks)
    assert [f["inFile"] for f in after] == [f["inFile"] for f in weeks]
    text = memsync("archive", "list", "--config", config, env={"COLUMNS": "250"}).stdout
    assert f"{len(weeks)} file{'s' if len(weeks) > 1 else ''}, 0 episodes archived" in text
    assert "hot again" in text
    _, report = status_json(site.config)
    assert report["backbone"]["archive"]["episodes"] == 0
    assert report["backbone"]["archive"]["files"] == len(weeks)


def test_a_row_with_an_empty_session_and_task_is_quarantined_as_the_readme_says(
    site_files: Callable[..., SiteFiles], agents: Callable[[Path], AgentProcess], tmp_path: Path
) -> None:
    site = site_files("laptop", tmp_path / "agentdb.db")
    agent = agents(site.agentdb)
    kept = agent.store(episode(1))
    blank = agent.store(episode(2, sessionId="", task=""))
    after = agent.store(episode(3))
    agent.close()
    assert read_agentdb_rows(site.agentdb)[blank]["task"] in ("", b"")  # the package stored it as written

    done = memsync("sync", "--once", "--config", str(site.config))
    assert done.returncode == 0, done.stderr
    assert {r["sourceId"] for r in _export(site)} == {str(kept), str(after)}
    listed = memsync("quarantine", "list", "--json", "--config", str(site.config))
    (entry,) = [json.loads(line) for line in listed.stdout.splitlines()]
    assert entry["id"] == blank
    assert "column 'session_id' is empty" in entry["reason"]


def test_search_json_shows_an_approval_decision_once_the_index_catches_up(
    site_files: Callable[..., SiteFiles], agents: Callable[[Path], AgentProcess], tmp_path: Path, short_dir: Path
) -> None:
    warm = f'path = "{tmp_path / "warm"}"\nsocket = "{short_dir / "laptop.sock"}"\ncatch_up_interval = 30\n'
    site = site_files("laptop", tmp_path / "agentdb.db", warm=warm)
    agent = agents(site.agentdb)
    about = agent.store(episode(1, task="rotate the TLS certificate on the edge proxy"))
    other = agent.store(episode(2, task="rotate the database password"))
    agent.close()
    config = str(site.config)

    def results() -> dict[str, dict[str, object]]:
        done = memsync("sync", "--once", "--config", config)  # indexes what the index has not seen
        assert done.returncode == 0, done.stderr
        found = memsync("search", "rotate", "--json", "--config", config)
        assert found.returncode == 0, found.stderr
        return {str(r["sourceId"]): r for r in json.loads(found.stdout)["results"]}

    before = results()
    assert before[str(about)]["approvalStatus"] is None
    asked = memsync(
        "approval", "request", "--category", "deploy", "--summary", "s", "--episode", str(about), "-c", config
    )
    assert asked.returncode == 0, asked.stderr
    assert memsync("approvals", "approve", asked.stdout.strip(), "--by", "ann", "-c", config).returncode == 0

    after = results()
    assert after[str(about)]["approvalStatus"] == "approved"
    assert after[str(other)]["approvalStatus"] is None
    # The decision is a payload rewrite: the same text, nothing else about the result changed.
    assert {k: v for k, v in after[str(about)].items() if k not in ("approvalStatus", "score", "similarity")} == {
        k: v for k, v in before[str(about)].items() if k not in ("approvalStatus", "score", "similarity")
    }
