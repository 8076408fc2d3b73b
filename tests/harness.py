"""What the tests and the benchmarks both drive, importable without pytest (bench/common.py puts
this folder on ``sys.path``): AgentDB files written by the real agentdb package, and the wait on an
observable event that stands in for a sleep."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GEN = ROOT / "tests" / "agentdb_gen"
FIXED_TS = 1735689600  # 2025-01-01 UTC: the generated episodes' first timestamp, whatever today is


class WaitTimedOut(AssertionError, TimeoutError):
    """A wait's event never came: a failed assertion to pytest, a timeout to a benchmark."""


def wait_for(predicate: Callable[[], bool], timeout: float = 30, interval: float = 0.05, what: str = "") -> None:
    """Until ``predicate()`` holds: poll it every ``interval`` s, give up after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise WaitTimedOut(f"timed out after {timeout}s waiting for {what or predicate}")


def node_modules_missing(folder: Path) -> str | None:
    """The sentence to say when ``folder``'s npm packages are not installed; None when they are."""
    if (folder / "node_modules").is_dir():
        return None
    return f"{folder}/node_modules is missing: run `make node` (make test does it)"


def generate_agentdb(
    path: Path,
    n: int,
    *,
    seed: int = 42,
    sessions: int = 10,
    edge_cases: bool = False,
    fixed_ts: int | None = FIXED_TS,
    append: bool = False,
    timeout: float = 600,
) -> dict[str, Any]:
    """Write ``n`` episodes into ``path`` with the real package; returns the generator's summary."""
    if (missing := node_modules_missing(GEN)) is not None:
        raise RuntimeError(missing)
    argv = ["node", str(GEN / "generate.mjs"), "--db", str(path), "--n", str(n), "--seed", str(seed)]
    argv += ["--sessions", str(sessions)]
    if edge_cases:
        argv.append("--edge-cases")
    if fixed_ts is not None:
        argv += ["--fixed-ts", str(fixed_ts)]
    if append:
        argv.append("--append")
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"generate.mjs failed: {done.stderr[-2000:]}")
    summary: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return summary
