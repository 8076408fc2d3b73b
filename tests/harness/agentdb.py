"""AgentDB files as the real agentdb package writes them: generated in bulk (``generate.mjs``), by a
live agent driven over stdin (``agent.mjs``), by a live writer on its own (``agent.mjs --live``,
1.3.9's ``writer.mjs`` in WAL mode), and read back row by row with plain sqlite3. For the pure tier
(no node), ``episodes_file``: the package's episodes table written with plain sqlite3."""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from harness.paths import GEN, V139, need_node_modules

FIXED_TS = 1735689600  # 2025-01-01 UTC: the generated episodes' first timestamp, whatever today is


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
    need_node_modules(GEN)
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


def episodes_file(path: Path, rows: int = 3) -> Path:
    """A SQLite file holding AgentDB's episodes table (the package's schema) and ``rows``
    episodes, written with plain sqlite3: what a reader test needs of a file where node is absent."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute(
            "CREATE TABLE episodes (id INTEGER PRIMARY KEY AUTOINCREMENT, ts INTEGER NOT NULL DEFAULT "
            "(strftime('%s', 'now')), session_id TEXT NOT NULL, task TEXT NOT NULL, input TEXT, output TEXT, "
            "critique TEXT, reward REAL DEFAULT 0.0, success BOOLEAN DEFAULT 0, latency_ms INTEGER, tokens_used "
            "INTEGER, tags TEXT, metadata JSON, created_at INTEGER NOT NULL DEFAULT (strftime('%s', 'now')))"
        )
        conn.executemany(
            "INSERT INTO episodes (session_id, task, output, created_at) VALUES (?, ?, ?, ?)",
            [(f"session-{i % 3}", f"task number {i}", "output " * 200, FIXED_TS + i) for i in range(rows)],
        )
        conn.commit()
    return path


def episode(i: int, **overrides: Any) -> dict[str, Any]:
    """An episode as the package's ReflexionMemory.storeEpisode takes it."""
    base: dict[str, Any] = {
        "sessionId": f"session-{i % 3}",
        "task": f"task number {i}",
        "input": f"input {i}",
        "output": f"output {i}",
        "critique": "fine",
        "reward": (i % 10) / 10,
        "success": i % 2 == 0,
        "latencyMs": 100 + i,
        "tokensUsed": 1000 + i,
        "tags": ["t", f"n{i % 4}"],
        "metadata": {"agent_name": "tester", "seq": i},
    }
    base.update(overrides)
    return base


class AgentProcess:
    """A live agent on the real package (tests/agentdb_gen/agent.mjs), driven over stdin: one
    command a line, one JSON reply a line."""

    def __init__(self, db: Path) -> None:
        need_node_modules(GEN)
        self.db = db
        self.proc = subprocess.Popen(
            ["node", str(GEN / "agent.mjs"), "--db", str(db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )

    def _call(self, command: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"agent.mjs died (exit {self.proc.poll()})")
        reply: dict[str, Any] = json.loads(line)
        if not reply.get("ok"):
            raise RuntimeError(f"agent.mjs: {reply.get('error')}")
        return reply

    def store(self, ep: dict[str, Any], save: bool = True) -> int:
        return int(self._call({"op": "store", "episode": ep, "save": save})["id"])

    def store_saved_at(self, ep: dict[str, Any]) -> tuple[int, float]:
        """Store and save; (the AgentDB id, wall-clock ms right after the save returned)."""
        reply = self._call({"op": "store", "episode": ep, "save": True})
        return int(reply["id"]), float(reply["savedAtMs"])

    def update(self, local_id: int, save: bool = True, **values: Any) -> None:
        self._call({"op": "update", "id": local_id, "set": values, "save": save})

    def exec(self, sql: str, save: bool = True) -> None:
        self._call({"op": "exec", "sql": sql, "save": save})

    def save(self) -> None:
        self._call({"op": "save"})

    def reload(self) -> None:
        self._call({"op": "reload"})

    def close(self) -> None:
        """Close the agent. Like the package's own close(), this saves its in-memory copy."""
        if self.proc.poll() is None:
            with contextlib.suppress(RuntimeError, BrokenPipeError):
                self._call({"op": "close"})
            self.proc.wait(10)
        self._close_pipes()

    def kill(self) -> None:
        """End the agent without close(): its save would write its in-memory copy over the file
        (stale, or a needless extra write)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self._close_pipes()

    def _close_pipes(self) -> None:
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


def live_agent_argv(
    db: Path,
    count: int,
    *,
    interval_ms: int,
    seed: int | None = None,
    session: str | None = None,
    jitter_ms: int | None = None,
    marker: str | None = None,
) -> list[str]:
    """``agent.mjs --live``: ``count`` generated episodes, each saved (the whole file rewritten)
    ``interval_ms`` after the last (give or take ``jitter_ms``); each save prints
    ``{"id": N, "savedAtMs": T}``. With ``marker`` each output ends in the marker and its number."""
    argv = ["node", str(GEN / "agent.mjs"), "--db", str(db), "--live", str(count), "--interval-ms", str(interval_ms)]
    for flag, value in (("--seed", seed), ("--session", session), ("--jitter-ms", jitter_ms), ("--marker", marker)):
        if value is not None:
            argv += [flag, str(value)]
    return argv


def run_live_agent(
    db: Path, count: int, *, interval_ms: int, seed: int, timeout: float | None = None
) -> dict[int, float]:
    """Run a live agent to its end; each episode's wall-clock save time (ms) by its AgentDB id."""
    need_node_modules(GEN)
    argv = live_agent_argv(db, count, interval_ms=interval_ms, seed=seed)
    timeout = 120 + count * (interval_ms / 1000 + 0.5) if timeout is None else timeout
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"agent.mjs failed ({done.returncode}): {done.stderr[-2000:]}")
    saves = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {int(s["id"]): float(s["savedAtMs"]) for s in saves}


def wal_writer_argv(
    agentdb: Path,
    commits: int,
    *,
    interval_ms: int,
    hold_ms: int,
    jitter_ms: int = 0,
    seed: int = 1,
    marker: str = "",
) -> list[str]:
    """agentdb 1.3.9 (better-sqlite3, WAL mode, ``writer.mjs``): ``commits`` episodes into
    ``agentdb``, one every ``interval_ms`` (give or take ``jitter_ms``, seeded), the file held open
    ``hold_ms`` after; each commit prints ``{"stored": N, "i": I, "tMs": T}``, and with ``marker``
    each output ends in the marker and its number."""
    argv = ["node", str(V139 / "writer.mjs"), str(agentdb), str(commits), str(interval_ms), str(hold_ms)]
    return [*argv, str(jitter_ms), str(seed), marker]


def wal_commits(agentdb: Path, commits: int, *, interval_ms: int = 60, hold_ms: int = 1000) -> None:
    """The real agentdb 1.3.9 (better-sqlite3, WAL mode) commits ``commits`` episodes to ``agentdb``,
    one every ``interval_ms``, and holds the file open ``hold_ms`` after (``writer.mjs``)."""
    need_node_modules(V139)
    subprocess.run(
        wal_writer_argv(agentdb, commits, interval_ms=interval_ms, hold_ms=hold_ms),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def read_agentdb_rows(path: Path) -> dict[int, dict[str, Any]]:
    """The rows as stored, read with plain sqlite3 from a private copy (never the live file).

    A WAL left behind (a WAL writer that was not the last connection skips its final checkpoint)
    is copied too, and SQLite replays it, as any reader of the database would."""
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "agentdb.db"
        data = bytearray(path.read_bytes())
        wal = Path(f"{path}-wal")
        if wal.exists():
            shutil.copyfile(wal, f"{copy}-wal")
        else:
            data[18] = data[19] = 1  # a WAL-mode header with no WAL: read it as a rollback database
        copy.write_bytes(data)
        conn = sqlite3.connect(copy)
        conn.text_factory = bytes
        conn.row_factory = sqlite3.Row
        rows = {int(r["id"]): dict(r) for r in conn.execute("SELECT * FROM episodes ORDER BY id")}
        conn.close()
    return rows
