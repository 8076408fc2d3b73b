"""Agents for the demo: processes that write episodes into an AgentDB file while it runs.

The real one drives the agentdb npm package (``tests/agentdb_gen/agent.mjs`` in a checkout, once
``make demo`` has installed it). Without Node or that checkout, a built-in writer rewrites the whole
file in place after every episode, exactly as sql.js does, so the daemon faces the same thing.
Each agent reports every save as ``(id, savedAtMs)``.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

# The AgentDB episodes table (agentdb 1.6.1's schema.sql).
AGENTDB_EPISODES = """
CREATE TABLE IF NOT EXISTS episodes (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  ts INTEGER NOT NULL DEFAULT (strftime('%s', 'now')),
  session_id TEXT NOT NULL, task TEXT NOT NULL, input TEXT, output TEXT, critique TEXT,
  reward REAL DEFAULT 0.0, success BOOLEAN DEFAULT 0, latency_ms INTEGER, tokens_used INTEGER,
  tags TEXT, metadata JSON, created_at INTEGER NOT NULL DEFAULT (strftime('%s', 'now')))
"""


# The same as LIVE_TASKS in tests/agentdb_gen/agent.mjs: (task, output) pairs a live agent cycles through.
LIVE_TASKS = (
    ("fix ERR_CONN_4471 in the http client retry loop", "capped the backoff at 30s and honoured Retry-After"),
    ("deploy the billing api to staging with the helm chart", "rolled out 3 replicas; smoke tests green"),
    ("investigate OPS-2291: nightly backup job timing out", "raised the timeout to 2h and split the dump per schema"),
    ("rotate the TLS certificate on the edge proxy", "new cert from the internal CA, reloaded nginx without downtime"),
    (
        "database migration failed with E11000 duplicate key on users.email",
        "deduplicated 14 rows, then re-ran the migration",
    ),
    ("write unit tests for parse_retry_after", "covered seconds, HTTP dates and garbage input; 12 tests"),
    ("speed up the search endpoint p99", "added an index on (tenant_id, created_at); p99 from 900ms to 80ms"),
    ("summarise yesterday's incident for the team", "root cause: a config push disabled the health checks"),
)


def agentdb_generator_dir() -> Path | None:
    """The repo's copy of the real-package scripts, if installed: $MEMSYNC_AGENTDB_GEN or the checkout."""
    configured = os.environ.get("MEMSYNC_AGENTDB_GEN")
    candidate = Path(configured) if configured else Path(__file__).resolve().parents[2] / "tests" / "agentdb_gen"
    ready = (candidate / "agent.mjs").exists() and (candidate / "node_modules" / "agentdb").is_dir()
    return candidate if ready and shutil.which("node") else None


class Agent:
    """Writes ``count`` episodes, one every ``interval`` seconds, and records when each was saved."""

    def __init__(self, db: Path, site: str, count: int, interval: float, seed: int) -> None:
        self.db = db
        self.site = site
        self.count = count
        self.interval = interval
        self.seed = seed
        self.saved: dict[int, float] = {}  # AgentDB id -> wall-clock ms when the save finished
        self.kind = "agentdb (npm, sql.js)" if agentdb_generator_dir() else "built-in sql.js-style writer"
        self._thread = threading.Thread(target=self._run, name=f"agent-{site}", daemon=True)
        self._proc: subprocess.Popen[str] | None = None
        self._stop = threading.Event()
        self.error: str | None = None

    def start(self) -> Agent:
        self._thread.start()
        return self

    def done(self) -> bool:
        return not self._thread.is_alive()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def stop(self) -> None:
        self._stop.set()
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
        self._thread.join(5)

    def _run(self) -> None:
        try:
            generator = agentdb_generator_dir()
            if generator is not None:
                self._run_node(generator)
            else:
                self._run_builtin()
        except Exception as exc:  # noqa: BLE001 - shown in the demo's summary
            self.error = f"{type(exc).__name__}: {exc}"

    def _run_node(self, generator: Path) -> None:
        self._proc = subprocess.Popen(
            [
                "node",
                str(generator / "agent.mjs"),
                "--db",
                str(self.db),
                "--live",
                str(self.count),
                "--interval-ms",
                str(int(self.interval * 1000)),
                "--seed",
                str(self.seed),
                "--session",
                f"demo-{self.site}",
                "--no-pad",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            event = json.loads(line)
            self.saved[int(event["id"])] = float(event["savedAtMs"])
        if self._proc.wait() != 0 and not self._stop.is_set():
            raise RuntimeError(f"agent.mjs exited with {self._proc.returncode}")

    def _run_builtin(self) -> None:
        memory = sqlite3.connect(":memory:")
        memory.execute(AGENTDB_EPISODES)
        for i in range(self.count):
            if self._stop.is_set():
                return
            cursor = memory.execute(
                "INSERT INTO episodes (session_id, task, input, output, critique, reward, success, latency_ms,"
                " tokens_used, tags, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    f"demo-{self.site}",
                    f"{LIVE_TASKS[(i + self.seed) % len(LIVE_TASKS)][0]} (run {self.seed}-{i})",
                    f"live input {i}",
                    LIVE_TASKS[(i + self.seed) % len(LIVE_TASKS)][1],
                    "fine",
                    (i % 10) / 10,
                    i % 4 != 0,
                    100 + i,
                    1000 + i,
                    json.dumps(["live"]),
                    json.dumps({"agent_name": "demo-agent", "seq": i}),
                ),
            )
            memory.commit()
            data = memory.serialize()
            # In place, truncate then one write, no lock, no fsync: what sql.js's save() does.
            with open(self.db, "wb") as f:
                f.write(data)
            assert cursor.lastrowid is not None
            self.saved[cursor.lastrowid] = time.time() * 1000
            self._stop.wait(self.interval)
