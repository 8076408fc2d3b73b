"""Health levels from facts: a table of cases, no I/O."""

from __future__ import annotations

from dataclasses import replace

import pytest

from daemon.health import Facts, Level, assess, lag_seconds

HEALTHY = Facts(
    daemon_running=True,
    backbone_error=None,
    source_error=None,
    last_error=None,
    backlog=0,
    lag_seconds=0.0,
    lag_warning=60.0,
    quarantined=0,
    conflicts=0,
)


@pytest.mark.parametrize(
    ("changes", "level", "words"),
    [
        pytest.param({}, Level.OK, None, id="all well"),
        pytest.param({"conflicts": 3}, Level.OK, None, id="conflicts alone: both kept"),
        pytest.param({"backlog": 40, "lag_seconds": 2.0}, Level.OK, None, id="busy but keeping up"),
        pytest.param({"quarantined": 2}, Level.DEGRADED, "2 episodes quarantined", id="quarantine"),
        pytest.param({"quarantined": 1}, Level.DEGRADED, "1 episode quarantined (", id="one quarantined"),
        pytest.param({"backlog": 9, "lag_seconds": 61.0}, Level.DEGRADED, "lag 61s", id="lagging"),
        pytest.param({"last_error": "backbone: locked"}, Level.DEGRADED, "backbone: locked", id="retrying"),
        pytest.param({"daemon_running": False}, Level.DEGRADED, "no daemon", id="no daemon, nothing waiting"),
        pytest.param({"clock_ahead": "the file's time is 40 s ahead"}, Level.DEGRADED, "40 s ahead", id="clock behind"),
        pytest.param({"agentdb_folder": "folder /x does not exist"}, Level.DEGRADED, "/x", id="agentdb folder missing"),
        pytest.param(
            {"daemon_running": False, "backlog": 5, "lag_seconds": 300.0},
            Level.DOWN,
            "5 episodes waiting",
            id="no daemon and episodes waiting",
        ),
        pytest.param({"backbone_error": "refused"}, Level.DOWN, "backbone unreachable: refused", id="backbone down"),
        pytest.param({"source_error": "no such file"}, Level.DOWN, "AgentDB unreadable", id="source down"),
        pytest.param({"source_error": "gone", "quarantined": 1}, Level.DOWN, "quarantined", id="down lists all"),
    ],
)
def test_assess(changes: dict[str, object], level: Level, words: str | None) -> None:
    got, reasons = assess(replace(HEALTHY, **changes))  # type: ignore[arg-type]
    assert got is level
    if words is None:
        assert reasons == []
    else:
        assert any(words in r for r in reasons), reasons


@pytest.mark.parametrize(
    ("now", "backlog", "caught_up", "oldest", "expected"),
    [
        pytest.param(1000.0, None, 900.0, 950.0, None, id="unknown backlog"),
        pytest.param(1000.0, 0, 900.0, None, 0.0, id="nothing waiting"),
        pytest.param(1000.0, 3, 990.0, 100.0, 10.0, id="old rows arrived after we caught up"),
        pytest.param(1000.0, 3, 100.0, 995.0, 5.0, id="waiting since written"),
        pytest.param(1000.0, 3, None, None, None, id="no reference point"),
        pytest.param(1000.0, 3, None, 1004.0, 0.0, id="clock skew never goes negative"),
    ],
)
def test_lag(
    now: float, backlog: int | None, caught_up: float | None, oldest: float | None, expected: float | None
) -> None:
    assert lag_seconds(now, backlog, caught_up, oldest) == expected
