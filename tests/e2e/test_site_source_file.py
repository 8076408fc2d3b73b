"""Tier: e2e.

One site name, one AgentDB file: a second config on the same machine that keeps the site's name and
changes only ``agentdb.path`` is refused (exit 78), whatever the data dir, through the real CLI."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import hub_episodes, memsync, status_json

from sync.errors import EX_CONFIG


def config(path: Path, agentdb: Path, data_dir: Path) -> Path:
    """A config as a user writes it: a name, an AgentDB file, and everything else at the default
    (the hub and the state file in the data dir); no search index, which this is not about."""
    site = f'[site]\nname = "laptop"\n\n[agentdb]\npath = "{agentdb}"\n\n[warm]\nenabled = false\n'
    path.write_text(f'data_dir = "{data_dir}"\n\n{site}')
    return path


@pytest.mark.parametrize("shared_data_dir", [True, False], ids=["one data dir", "two data dirs"])
def test_a_second_agentdb_file_under_one_site_name_is_refused(
    make_agentdb: Callable[..., Path], tmp_path: Path, shared_data_dir: bool
) -> None:
    hub_dir = tmp_path / "data"
    first_file, second_file = make_agentdb(10, name="first.db"), make_agentdb(12, seed=9, name="second.db")
    first = config(tmp_path / "first.toml", first_file, hub_dir)
    second_dir = hub_dir if shared_data_dir else tmp_path / "other-data"
    second = config(tmp_path / "second.toml", second_file, second_dir)
    if not shared_data_dir:  # the same hub, another state file: share the backbone by its path
        second.write_text(second.read_text() + f'\n[backbone]\npath = "{hub_dir / "hub.db"}"\n')
    synced = memsync("sync", "--config", str(first))
    assert synced.returncode == 0, synced.stderr

    refused = memsync("sync", "--config", str(second))
    assert refused.returncode == EX_CONFIG, refused.stderr
    assert "Traceback" not in refused.stderr, refused.stderr
    (line,) = [line for line in refused.stderr.splitlines() if line.strip()]
    for named in (str(first_file), str(second_file), "site.name", "--take-over"):
        assert named in line, line
    assert len(hub_episodes(hub_dir / "hub.db", "laptop")) == 10, "nothing of the second file was merged"

    code, report = status_json(second)
    assert (code, report["health"]) == (2, "down"), report
    assert str(second_file) in (report["sourceRefused"] or ""), report
    _code, report = status_json(first)
    assert report["sourceRefused"] is None, report

    # The site's own file is still its source; a file that moved is taken over, once, on purpose.
    assert memsync("sync", "--config", str(first)).returncode == 0
    taken = memsync("sync", "--take-over", "--config", str(second))
    assert taken.returncode == 0, taken.stderr
    assert memsync("sync", "--config", str(first)).returncode == EX_CONFIG
