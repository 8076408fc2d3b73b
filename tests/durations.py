"""Every run's test durations, kept for comparison: one JSON file a run under
``.pytest_cache/d/durations/`` (setup + call + teardown, in seconds, by test id), the newest
``KEEP`` runs kept. Under pytest-xdist the workers' reports reach the controller, which writes
the file once. The slowest 20 are printed by ``--durations=20`` (pyproject.toml's addopts).

``python tests/durations.py`` compares the newest two runs: the tests whose time moved most.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Final

import pytest

KEEP: Final = 50
FOLDER: Final = Path(__file__).resolve().parents[1] / ".pytest_cache" / "d" / "durations"

_phases: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _phases[report.nodeid] = _phases.get(report.nodeid, 0.0) + report.duration


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    cache = getattr(config, "cache", None)
    if hasattr(config, "workerinput") or cache is None or not _phases:
        return  # a worker (its controller writes), no cache (-p no:cacheprovider) or nothing ran
    folder = cache.mkdir("durations")
    record: dict[str, Any] = {
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "args": config.invocation_params.args,
        "workers": getattr(config.option, "numprocesses", None) or 0,
        "exitstatus": int(exitstatus),
        "load_average": os.getloadavg()[0],
        "tests": dict(sorted(_phases.items(), key=lambda item: -item[1])),
    }
    name = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}.json"
    (folder / name).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    for old in sorted(folder.glob("*.json"))[:-KEEP]:
        old.unlink(missing_ok=True)


def compare(older: dict[str, Any], newer: dict[str, Any], top: int = 20) -> list[str]:
    """The tests whose time moved most between two runs, one line each."""
    before, after = older["tests"], newer["tests"]
    moved = sorted(set(before) & set(after), key=lambda test: -abs(after[test] - before[test]))
    lines = [f"{sum(before.values()):9.1f}s -> {sum(after.values()):9.1f}s  all tests (summed)"]
    lines += [f"{before[t]:9.2f}s -> {after[t]:9.2f}s  {t}" for t in moved[:top]]
    return lines


if __name__ == "__main__":
    runs = sorted(FOLDER.glob("*.json"))
    if len(runs) < 2:
        sys.exit(f"fewer than two runs recorded in {FOLDER}")
    old, new = (json.loads(path.read_text(encoding="utf-8")) for path in runs[-2:])
    print(f"{runs[-2].name} -> {runs[-1].name}")
    print("\n".join(compare(old, new)))
