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
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from harness import FIXED_TS, GEN, ROOT, node_modules_missing, wait_for
from harness import generate_agentdb as _generate

if TYPE_CHECKING:
    from sync.warm.embedders import Embedder, LocalEmbedder

pytest_plugins = ["convex_fixtures", "fake_providers"]

# What this module takes from harness.py (shared with bench/, and free of pytest) and the tests
# import from here; the names this module defines are importable without being listed.
__all__ = ["FIXED_TS", "GEN", "ROOT", "wait_for"]

V139 = ROOT / "tests" / "agentdb_variants" / "v139"
V3ALPHA = ROOT / "tests" / "agentdb_variants" / "v3alpha"

# The light paths' settings cache (daemon/cli/locate.py) lives under XDG_CACHE_HOME: the suite's
# own, so that its child processes neither read nor leave entries in the user's cache.
_CACHE = Path(tempfile.mkdtemp(prefix="memsync-test-cache-"))
os.environ["XDG_CACHE_HOME"] = str(_CACHE)


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_CACHE, ignore_errors=True)


class CountingEmbedder:
    """A real embedder, counting the texts it is asked to embed (``documents``) and to count
    tokens of (``counted``): what proves a rebuild copied rather than embedded."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.dims, self.passage_tokens = inner, inner.name, inner.dims, inner.passage_tokens
        self.documents: list[str] = []
        self.counted: list[str] = []

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        self.counted.extend(texts)
        return self.inner.count_tokens(texts)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.documents.extend(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    """The real local embedder, loaded once a module."""
    from sync.warm.embedders import LocalEmbedder

    return LocalEmbedder()


class FakeClock:
    """A clock a test moves by hand (``clock.now += 60``): the lowest seam for time."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def require_node_modules(folder: Path) -> None:
    if (missing := node_modules_missing(folder)) is not None:
        pytest.fail(missing)


def wal_commits(agentdb: Path, commits: int, *, interval_ms: int = 60, hold_ms: int = 1000) -> None:
    """The real agentdb 1.3.9 (better-sqlite3, WAL mode) commits ``commits`` episodes to ``agentdb``,
    one every ``interval_ms``, and holds the file open ``hold_ms`` after (``writer.mjs``)."""
    require_node_modules(V139)
    subprocess.run(
        ["node", str(V139 / "writer.mjs"), str(agentdb), str(commits), str(interval_ms), str(hold_ms)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


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
    return _generate(path, n, seed=seed, sessions=sessions, edge_cases=edge_cases, fixed_ts=fixed_ts, append=append)


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


@dataclass
class SiteFiles:
    root: Path
    agentdb: Path
    hub: Path
    state: Path
    config: Path
    name: str

    @property
    def lock(self) -> Path:
        return self.state.with_name(self.state.name + ".lock")

    def settings(self) -> Any:
        from daemon.config import load_settings

        return load_settings(self.config)


def write_config(
    root: Path,
    name: str,
    agentdb: Path,
    hub: Path,
    *,
    log_format: str | None = "json",
    kind: str = "local",
    backbone: str = "",
    sync: str = "",
    extra: str = "",
    warm: str | None = None,
) -> SiteFiles:
    """A site's TOML config; ``backbone``/``sync``/``warm`` add keys to those tables, ``extra`` whole
    tables. The warm layer (embedding every episode) is off unless ``warm`` is given: the sync tests
    measure syncing, and the warm tests turn it on."""
    root.mkdir(parents=True, exist_ok=True)
    state = root / f"{name}.state.db"
    config = root / f"{name}.toml"
    log = '[log]\nlevel = "debug"\n' + (f'format = "{log_format}"\n' if log_format else "")
    warm_table = "[warm]\nenabled = false\n" if warm is None else f"[warm]\n{warm}\n"
    config.write_text(
        f'data_dir = "{root / "data"}"\n\n'
        f'[site]\nname = "{name}"\n\n[agentdb]\npath = "{agentdb}"\npoll_interval = 0.2\n\n'
        f'[backbone]\nkind = "{kind}"\npath = "{hub}"\n{backbone}\n[state]\npath = "{state}"\n\n'
        f"[sync]\n{sync}\n{log}{warm_table}{extra}",
        encoding="utf-8",
    )
    return SiteFiles(root, agentdb, hub, state, config, name)


@pytest.fixture
def site_files(tmp_path: Path) -> Callable[..., SiteFiles]:
    def make(name: str = "laptop", agentdb: Path | None = None, hub: Path | None = None, **options: Any) -> SiteFiles:
        return write_config(
            tmp_path / "sites", name, agentdb or tmp_path / "agentdb.db", hub or tmp_path / "hub.db", **options
        )

    return make


def hub_episodes(hub: Path, site: str | None = None) -> list[dict[str, Any]]:
    from sync.backbone.hub import HubBackbone

    backbone = HubBackbone(hub, site or "reader")  # the bound site only matters for writes
    try:
        # Hot and archived: the fixtures' episodes date from 2025, so a daemon's cleanup job may
        # have moved them to the cold archive (they carry ``archived: true`` then).
        return [*backbone.episodes(site), *backbone.archived_episodes(site)]
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


def flat(text: str) -> str:
    """Output with every run of whitespace as one space: the CLI may wrap long lines."""
    return " ".join(text.split())


def _text(value: object) -> str | None:
    if value is None:
        return None
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def expected_episode(row: dict[str, Any]) -> dict[str, Any]:
    """What the hub must hold for one AgentDB row written by the package (no site defaults).

    Written from the AgentDB schema, not from sync.episode, so that it can catch the converter out.
    Metadata that is not valid JSON is left out: its repair is checked where it is made."""
    meta_text = _text(row["metadata"])
    try:
        metadata = json.loads(meta_text) if meta_text else {}
    except json.JSONDecodeError:
        metadata = None
    tags_text = _text(row["tags"])

    def attribution(key: str) -> str | None:
        value = (metadata or {}).get(key)
        return value if isinstance(value, str) and value else None

    expected = {
        "sessionId": _text(row["session_id"]),
        "task": _text(row["task"]),
        "input": _text(row["input"]),
        "output": _text(row["output"]),
        "critique": _text(row["critique"]),
        "reward": row["reward"],
        "success": bool(row["success"]),
        "latencyMs": row["latency_ms"],
        "tokensUsed": row["tokens_used"],
        "tags": json.loads(tags_text) if tags_text else [],
        "metadata": metadata,
        "ts": row["ts"] * 1000,
        "createdAt": row["created_at"] * 1000,
        **{
            camel: attribution(snake)
            for snake, camel in (
                ("agent_name", "agentName"),
                ("agent_platform", "agentPlatform"),
                ("agent_interface", "agentInterface"),
                ("parent_agent", "parentAgent"),
                ("llm_provider", "llmProvider"),
                ("llm_model", "llmModel"),
            )
        },
    }
    if metadata is None:
        del expected["metadata"]
    return expected


def assert_exactly_once(hub: Path, site: str, agentdb: Path) -> list[dict[str, Any]]:
    """The hub holds one episode per AgentDB row, no more, no less, each equal to its row."""
    rows = read_agentdb_rows(agentdb)
    episodes = hub_episodes(hub, site)
    counts = Counter(e["sourceId"] for e in episodes)
    duplicated = sorted(k for k, n in counts.items() if n > 1)
    assert not duplicated, f"episodes delivered more than once: {duplicated[:20]}"
    wanted = {str(i) for i in rows}
    missing, extra = wanted - set(counts), set(counts) - wanted
    assert not missing, f"{len(missing)} AgentDB rows never reached the hub: {sorted(missing, key=int)[:20]}"
    assert not extra, f"hub holds episodes that are not AgentDB rows: {sorted(extra)[:20]}"
    for ep in episodes:
        want = expected_episode(rows[int(ep["sourceId"])])
        assert {k: ep[k] for k in want} == want, f"hub episode {site}/{ep['sourceId']} differs from its AgentDB row"
        assert ep["sourceSite"] == site
        assert isinstance(ep["contentHash"], str)
        assert len(ep["contentHash"]) == 64
    return episodes


def status_json(config: Path, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    done = memsync("status", "--json", "--config", str(config), **kwargs)
    try:
        report: dict[str, Any] = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise AssertionError(
            f"status --json printed no JSON (exit {done.returncode}): {done.stdout!r} {done.stderr!r}"
        ) from None
    return done.returncode, report


def wait_started(site: SiteFiles, proc: subprocess.Popen[bytes], log: Path) -> None:
    """Until this daemon holds the site lock and has logged "started" (its signal handlers are in place)."""
    from daemon.control.lock import holder_pid

    def started() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"daemon exited {proc.returncode}: {log.read_text(errors='replace')[-2000:]}")
        if holder_pid(site.lock) != proc.pid or not log.exists():
            return False
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line being written
            if isinstance(event, dict) and event.get("event") == "started" and event.get("pid") == proc.pid:
                return True
        return False

    wait_for(started, timeout=60, what="the daemon to start")


def warm_section(tmp_path: Path, short_dir: Path, name: str = "laptop") -> str:
    """A site's [warm] settings for tests that search through a daemon: the index under tmp_path,
    the control socket under short_dir (socket paths are short), a quick catch-up."""
    return f'path = "{tmp_path / "warm"}"\nsocket = "{short_dir / f"{name}.sock"}"\ncatch_up_interval = 0.5\n'


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """Unix socket paths are limited to ~100 bytes; pytest's tmp paths can be longer."""
    path = Path(tempfile.mkdtemp(prefix="ms-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def daemons(tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Start `memsync run` processes; whatever a failing test leaves running is killed."""
    started: list[subprocess.Popen[bytes]] = []

    def start(config: Path, log: Path | None = None) -> subprocess.Popen[bytes]:
        proc = start_daemon(config, log or tmp_path / "daemon.log")
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)
