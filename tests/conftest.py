"""Shared fixtures. AgentDB files here are written by the real agentdb npm package (``make node``
installs it under tests/agentdb_gen and tests/agentdb_variants); nothing is faked above the file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from harness import (
    FIXED_TS,
    GEN,
    ROOT,
    V3ALPHA,
    V139,
    AgentProcess,
    SiteFiles,
    episode,
    generate_agentdb,
    hub_episodes,
    memsync,
    node_modules_missing,
    read_agentdb_rows,
    start_daemon,
    status_json,
    stop_daemon,
    wait_for,
    wait_started,
    wal_commits,
    warm_section,
    write_config,
)
from harness import short_dir as _short_dir

if TYPE_CHECKING:
    from sync.search.embedders.base import Embedder
    from sync.search.embedders.local import LocalEmbedder
    from sync.search.stores import EdgeStore

pytest_plugins = ["convex_fixtures", "durations", "fake_providers", "tiers"]

# What this module takes from the harness (tests/harness/, shared with bench/ and free of pytest)
# and the tests import from here; the names this module defines are importable without being listed.
__all__ = [
    "FIXED_TS",
    "GEN",
    "ROOT",
    "V3ALPHA",
    "V139",
    "AgentProcess",
    "SiteFiles",
    "episode",
    "generate_agentdb",
    "hub_episodes",
    "memsync",
    "read_agentdb_rows",
    "start_daemon",
    "status_json",
    "stop_daemon",
    "wait_for",
    "wait_started",
    "wal_commits",
    "warm_section",
    "write_config",
]

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
    from sync.search.embedders.local import LocalEmbedder

    return LocalEmbedder()


def edge_store_of(
    path: Path, embedder: LocalEmbedder, points: Sequence[tuple[str, dict[str, Any]]], now_ms: int
) -> EdgeStore:
    """An in-process Qdrant store at ``path`` holding ``points`` (a text and its extra payload) as
    site laptop's episodes ``0``, ``1``..., one a millisecond after ``now_ms``; the caller closes it."""
    from sync.search.embedders import bm25
    from sync.search.stores import EdgeStore, WarmPoint, point_id

    store = EdgeStore(path)
    store.open_or_create("c", embedder.name, embedder.dims)
    vectors = embedder.embed_documents([text for text, _ in points])
    store.upsert(
        [
            WarmPoint(
                point_id("laptop", str(i)),
                vector,
                bm25.embed_document(text),
                {"site": "laptop", "sourceId": str(i), "text": text, "ts": now_ms + i, "tags": []} | extra,
            )
            for i, ((text, extra), vector) in enumerate(zip(points, vectors, strict=True))
        ]
    )
    return store


class FakeClock:
    """A clock a test moves by hand (``clock.now += 60``): the lowest seam for time."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def require_node_modules(folder: Path) -> None:
    if (missing := node_modules_missing(folder)) is not None:
        pytest.fail(missing)


@pytest.fixture(scope="session")
def agentdb_cache(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """Generated files are cached for the session; each test gets its own copy."""
    cache = tmp_path_factory.mktemp("agentdb-cache")
    made: dict[tuple[Any, ...], Path] = {}

    def get(n: int, seed: int = 42, edge_cases: bool = False) -> Path:
        key = (n, seed, edge_cases)
        if key not in made:
            path = cache / f"n{n}-s{seed}-e{int(edge_cases)}.db"
            require_node_modules(GEN)
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


@pytest.fixture
def agents() -> Iterator[Callable[[Path], AgentProcess]]:
    started: list[AgentProcess] = []

    def start(db: Path) -> AgentProcess:
        require_node_modules(GEN)
        agent = AgentProcess(db)
        started.append(agent)
        return agent

    yield start
    for agent in started:
        agent.kill()  # no close(): its save would write a stale copy over the file


@pytest.fixture
def site_files(tmp_path: Path) -> Callable[..., SiteFiles]:
    def make(name: str = "laptop", agentdb: Path | None = None, hub: Path | None = None, **options: Any) -> SiteFiles:
        return write_config(
            tmp_path / "sites", name, agentdb or tmp_path / "agentdb.db", hub or tmp_path / "hub.db", **options
        )

    return make


def flat(text: str) -> str:
    """Output with every run of whitespace as one space: the CLI may wrap long lines."""
    return " ".join(text.split())


def _text(value: object) -> str | None:
    if value is None:
        return None
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def expected_episode(row: dict[str, Any]) -> dict[str, Any]:
    """What the hub must hold for one AgentDB row written by the package (no site defaults).

    Written from the AgentDB schema, not from sync.source.agentdb.rows, so that it can catch the converter out.
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


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """Unix socket paths are limited to ~100 bytes; pytest's tmp paths can be longer."""
    with _short_dir() as path:
        yield path


@pytest.fixture
def daemons(tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Start `memsync run` processes; whatever a failing test leaves running is killed."""
    started: list[subprocess.Popen[bytes]] = []

    def start(config: Path, log: Path | None = None, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        proc = start_daemon(config, log or tmp_path / "daemon.log", env=env)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)
