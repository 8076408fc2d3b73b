"""Shared fixtures. AgentDB files here are written by the real agentdb npm package (``make node``
installs it under tests/agentdb_gen and tests/agentdb_variants); nothing is faked above the file."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
GEN = ROOT / "tests" / "agentdb_gen"
V139 = ROOT / "tests" / "agentdb_variants" / "v139"
V3ALPHA = ROOT / "tests" / "agentdb_variants" / "v3alpha"
FIXED_TS = 1735689600


def require_node_modules(folder: Path) -> None:
    if not (folder / "node_modules").is_dir():
        pytest.fail(f"{folder}/node_modules is missing: run `make node` (make test does it)")


def generate_agentdb(
    path: Path,
    n: int,
    *,
    seed: int = 42,
    sessions: int = 10,
    edge_cases: bool = False,
    fixed_ts: int | None = FIXED_TS,
    append: bool = False,
) -> dict[str, Any]:
    """Write ``n`` episodes into ``path`` with the real package; returns the generator's summary."""
    require_node_modules(GEN)
    argv = [
        "node",
        str(GEN / "generate.mjs"),
        "--db",
        str(path),
        "--n",
        str(n),
        "--seed",
        str(seed),
        "--sessions",
        str(sessions),
    ]
    if edge_cases:
        argv.append("--edge-cases")
    if fixed_ts is not None:
        argv += ["--fixed-ts", str(fixed_ts)]
    if append:
        argv.append("--append")
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"generate.mjs failed: {done.stderr[-2000:]}")
    summary: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return summary


@pytest.fixture(scope="session")
def agentdb_cache(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """Generated files are cached for the session; each test gets its own copy."""
    cache = tmp_path_factory.mktemp("agentdb-cache")
    made: dict[tuple[Any, ...], Path] = {}

    def get(n: int, seed: int = 42, edge_cases: bool = False) -> Path:
        key = (n, seed, edge_cases)
        if key not in made:
            path = cache / f"n{n}-s{seed}-e{int(edge_cases)}.db"
            generate_agentdb(path, n, seed=seed, edge_cases=edge_cases)
            made[key] = path
        return made[key]

    return get


@pytest.fixture
def make_agentdb(agentdb_cache: Callable[..., Path], tmp_path: Path) -> Callable[..., Path]:
    def make(n: int = 50, *, seed: int = 42, edge_cases: bool = False, name: str = "agentdb.db") -> Path:
        target = tmp_path / name
        shutil.copyfile(agentdb_cache(n, seed, edge_cases), target)
        return target

    return make


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
    """A live agent on the real package (tests/agentdb_gen/agent.mjs), driven over stdin."""

    def __init__(self, db: Path) -> None:
        require_node_modules(GEN)
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
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


@pytest.fixture
def agents() -> Iterator[Callable[[Path], AgentProcess]]:
    started: list[AgentProcess] = []

    def start(db: Path) -> AgentProcess:
        agent = AgentProcess(db)
        started.append(agent)
        return agent

    yield start
    for agent in started:
        if agent.proc.poll() is None:
            agent.proc.kill()  # no close(): its save would write a stale copy over the file
            agent.proc.wait(10)
        for pipe in (agent.proc.stdin, agent.proc.stdout):
            if pipe is not None:
                pipe.close()


def read_agentdb_rows(path: Path) -> dict[int, dict[str, Any]]:
    """The rows as stored, read with plain sqlite3 from a private copy (never the live file)."""
    data = path.read_bytes()
    conn = sqlite3.connect(":memory:")
    buf = bytearray(data)
    buf[18] = buf[19] = 1
    conn.deserialize(bytes(buf))
    conn.text_factory = bytes
    conn.row_factory = sqlite3.Row
    rows = {int(r["id"]): dict(r) for r in conn.execute("SELECT * FROM episodes ORDER BY id")}
    conn.close()
    return rows


@dataclass
class SiteFiles:
    root: Path
    agentdb: Path
    hub: Path
    state: Path
    config: Path
    name: str

    def settings(self) -> Any:
        from daemon.config import load_settings

        return load_settings(self.config)


def write_config(root: Path, name: str, agentdb: Path, hub: Path, extra: str = "") -> SiteFiles:
    root.mkdir(parents=True, exist_ok=True)
    state = root / f"{name}.state.db"
    config = root / f"{name}.toml"
    config.write_text(
        f'[site]\nname = "{name}"\n\n[agentdb]\npath = "{agentdb}"\npoll_interval = 0.2\n\n'
        f'[backbone]\nkind = "local"\npath = "{hub}"\n\n[state]\npath = "{state}"\n\n'
        f'[log]\nformat = "json"\nlevel = "debug"\n{extra}',
        encoding="utf-8",
    )
    return SiteFiles(root, agentdb, hub, state, config, name)


@pytest.fixture
def site_files(tmp_path: Path) -> Callable[..., SiteFiles]:
    def make(name: str = "laptop", agentdb: Path | None = None, hub: Path | None = None, extra: str = "") -> SiteFiles:
        return write_config(
            tmp_path / "sites", name, agentdb or tmp_path / "agentdb.db", hub or tmp_path / "hub.db", extra
        )

    return make


def hub_episodes(hub: Path, site: str | None = None) -> list[dict[str, Any]]:
    from sync.backbone.hub import HubBackbone

    backbone = HubBackbone(hub)
    try:
        return list(backbone.episodes(site))
    finally:
        backbone.close()


def memsync(
    *args: str, timeout: float = 120, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a child process, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "daemon", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        check=False,
    )


def start_daemon(config: Path, log: Path) -> subprocess.Popen[bytes]:
    handle = log.open("ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "daemon", "run", "--config", str(config)], stdout=handle, stderr=handle
    )
    handle.close()
    return proc


def stop_daemon(proc: subprocess.Popen[bytes], timeout: float = 20) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout)


def wait_for(predicate: Callable[[], bool], timeout: float = 30, interval: float = 0.05, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}")


def assert_exactly_once(agentdb: Path, hub: Path, site: str, defaults: Any = None) -> list[dict[str, Any]]:
    """Every row now in the AgentDB file is in the hub once, with identical content; returns the hub's rows."""
    from sync.episode import Attribution, Episode, convert

    rows = read_agentdb_rows(agentdb)
    exported = hub_episodes(hub, site)
    keys = [e["sourceId"] for e in exported]
    assert len(keys) == len(set(keys)), "an episode was duplicated in the hub"
    by_key = {e["sourceId"]: e for e in exported}
    for local_id, row in rows.items():
        expected = convert(row, defaults or Attribution())
        assert isinstance(expected, Episode), expected
        got = by_key.get(str(local_id))
        assert got is not None, f"AgentDB id {local_id} never reached the hub"
        assert {k: got[k] for k in expected.fields} == expected.fields, f"content differs for id {local_id}"
        assert got["contentHash"] == expected.content_hash
    return exported
