"""Tier: e2e. A real AgentDB file (written by the agentdb package) synced by the CLI, exported and
searched by memory type: every memory has one, the filter keeps exactly those, and each carries its
entities and task key. The expectations are read from the AgentDB file, not from memsync's rules,
apart from the type the rules give (checked to be one of the taxonomy and consistent across calls)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from conftest import SiteFiles, memsync, read_agentdb_rows

from sync.source.types import MEMORY_TYPES


def exported(site: SiteFiles, *options: str) -> list[dict[str, object]]:
    done = memsync("export", "--config", str(site.config), *options)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_export_and_search_filter_by_type(
    make_agentdb: Callable[..., Path], site_files: Callable[..., SiteFiles]
) -> None:
    site = site_files("laptop", make_agentdb(60))
    assert memsync("sync", "--once", "--config", str(site.config)).returncode == 0
    rows = read_agentdb_rows(site.agentdb)

    every = exported(site)
    assert len(every) == 60
    kinds = Counter(str(r["memoryType"]) for r in every)
    assert set(kinds) <= set(MEMORY_TYPES)
    assert len(kinds) >= 2, kinds  # a filter that keeps everything would pass otherwise
    # The generator's "bugfix" tag is a given type (a plain tag naming a kind): error_fix, given.
    tagged = {
        str(r["sourceId"]) for r in every if "bugfix" in json.loads(rows[int(str(r["sourceId"]))]["tags"] or "[]")
    }
    assert tagged
    for record in every:
        if record["sourceId"] in tagged:
            assert (record["memoryType"], record["typeGiven"]) == ("error_fix", True)
        assert record["entities"] == sorted(set(record["entities"]))  # type: ignore[call-overload]
        assert isinstance(record["taskKey"], str)
        assert len(record["taskKey"]) == 16
    # The same task has the same key; another task another one.
    by_task: dict[object, set[object]] = {}
    for record in every:
        by_task.setdefault(record["task"], set()).add(record["taskKey"])
    assert all(len(keys) == 1 for keys in by_task.values())
    assert len({next(iter(keys)) for keys in by_task.values()}) == len(by_task)

    for kind, count in kinds.items():
        only = exported(site, "--type", kind)
        assert len(only) == count
        assert {r["memoryType"] for r in only} == {kind}
    two = sorted(kinds)[:2]
    assert len(exported(site, "--type", two[0], "--type", two[1])) == kinds[two[0]] + kinds[two[1]]

    missing = next(k for k in MEMORY_TYPES if k not in kinds) if len(kinds) < len(MEMORY_TYPES) else None
    if missing is not None:
        assert exported(site, "--type", missing) == []
    wrong = memsync("export", "--config", str(site.config), "--type", "bugfx")
    assert wrong.returncode != 0
    assert "unknown memory type 'bugfx'" in wrong.stderr
    assert "Traceback" not in wrong.stderr

    found = memsync("search", "--config", str(site.config), "--json", "--all", "--type", "error_fix", "task")
    assert found.returncode == 0, found.stderr
    results = json.loads(found.stdout)
    results = results["results"] if isinstance(results, dict) else results
    assert results
    assert {r["memoryType"] for r in results} == {"error_fix"}
    assert all(isinstance(r["entities"], list) and "taskKey" in r for r in results)
