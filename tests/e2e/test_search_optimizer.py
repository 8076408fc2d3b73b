"""Tier: e2e. The search index's idle optimization: the real optimizer process on a real
qdrant-edge collection past the engine's indexing threshold, killed and finished; and the host
that starts it when the index is idle and stops it when work arrives."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import SiteFiles, wait_for

from daemon.config import Settings, load_settings
from daemon.control.client import ask
from daemon.search_worker.files import Collections, cursor_file, index_folder
from daemon.search_worker.host import WarmHost
from sync.backbone.hub import HubBackbone
from sync.search.embedders.bm25 import SparseVector
from sync.search.stores import EdgeStore, WarmPoint

DIMS = 384
# Past qdrant-edge's default indexing threshold (10,000 KB; float16 vectors of 384 dims are 768
# bytes): a smaller collection has no graph to build and its optimization changes nothing.
POINTS = 16_000


def vector(rng: random.Random) -> list[float]:
    return [rng.gauss(0.0, 1.0) for _ in range(DIMS)]


def build(settings: Settings, rng: random.Random) -> list[list[float]]:
    store = EdgeStore(index_folder(settings).edge_store)
    store.open_or_create(Collections(settings).active(), "test-model", DIMS)
    vectors = [vector(rng) for _ in range(POINTS)]
    try:
        for first in range(0, POINTS, 1000):
            store.upsert(
                [
                    WarmPoint(
                        f"00000000-0000-4000-8000-{i:012d}",
                        vectors[i],
                        SparseVector((i % 997, 1000 + i % 13), (1.0, 1.0)),
                        {"site": "laptop", "sourceId": str(i), "text": f"episode {i}"},
                    )
                    for i in range(first, min(first + 1000, POINTS))
                ]
            )
    finally:
        store.close()
    return vectors


def nearest_is_itself(settings: Settings, vectors: list[list[float]], picks: list[int]) -> tuple[int, int]:
    """(points counted, picks whose nearest point is the point itself)."""
    store = EdgeStore(index_folder(settings).edge_store)
    assert store.open_as_built(Collections(settings).active()) is not None
    try:
        found = sum(store.dense_search(vectors[i], limit=1)[0].payload["sourceId"] == str(i) for i in picks)
        return store.count(), found
    finally:
        store.close()


def optimizer(config: Path) -> list[str]:
    return [sys.executable, "-m", "daemon.search_worker.optimizer", "--config", str(config)]


def test_a_killed_optimizer_leaves_the_collection_whole_and_a_finished_one_answers_the_same(
    site_files: Callable[..., SiteFiles], tmp_path: Path
) -> None:
    site = site_files(warm=f'path = "{tmp_path / "warm"}"\n')
    settings = load_settings(site.config)
    rng = random.Random(7)
    vectors = build(settings, rng)
    picks = rng.sample(range(POINTS), 25)

    for delay in (0.5, 3.0):  # early, and well into building the graph
        proc = subprocess.Popen(optimizer(site.config), stderr=subprocess.PIPE)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        assert nearest_is_itself(settings, vectors, picks) == (POINTS, len(picks)), f"killed after {delay} s"

    done = subprocess.run(optimizer(site.config), capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    assert "search index optimized" in done.stderr, done.stderr
    assert nearest_is_itself(settings, vectors, picks) == (POINTS, len(picks))
    again = subprocess.run(optimizer(site.config), capture_output=True, text=True, timeout=600, check=False)
    assert again.returncode == 0, again.stderr
    assert "search index optimized" not in again.stderr, "an optimized collection has nothing left to build"


def test_an_optimizer_on_a_site_without_a_collection_or_on_a_qdrant_server_does_nothing(
    site_files: Callable[..., SiteFiles], tmp_path: Path
) -> None:
    edge = site_files(name="laptop", warm=f'path = "{tmp_path / "warm"}"\n')
    run = subprocess.run(optimizer(edge.config), capture_output=True, text=True, timeout=120, check=False)
    assert (run.returncode, run.stderr) == (0, "")
    server = site_files(name="vm", warm='store = "qdrant"\nurl = "http://127.0.0.1:9"\n')
    run = subprocess.run(optimizer(server.config), capture_output=True, text=True, timeout=120, check=False)
    assert (run.returncode, run.stderr) == (0, "")


ECHO_WORKER = (
    "import json, socket, sys\n"
    "listener = socket.socket(fileno=int(sys.argv[1]))\n"
    "conn, _ = listener.accept()\n"
    "request = json.loads(conn.makefile('rb').readline())\n"
    "conn.sendall(json.dumps({'ok': True, 'result': request['op']}).encode() + b'\\n')\n"
)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("store", ["edge", "qdrant"])
def test_an_idle_host_optimizes_once_per_batch_and_work_stops_it_first(
    site_files: Callable[..., SiteFiles], short_dir: Path, tmp_path: Path, store: str
) -> None:
    warm = (
        f'path = "{tmp_path / "warm"}"\nsocket = "{short_dir / "s.sock"}"\ncatch_up_interval = 600\n'
        f'optimize_after = 0.2\nstore = "{store}"\n' + ('url = "http://127.0.0.1:9"\n' if store == "qdrant" else "")
    )
    site = site_files(warm=warm)
    settings = load_settings(site.config)
    optimizers: list[str] = []

    def fake_optimizer() -> list[str]:  # the optimizer's place: a process the test can watch
        optimizers.append("started")
        finish = tmp_path / "finish"
        return [sys.executable, "-c", f"import os, time\nwhile not os.path.exists({str(finish)!r}): time.sleep(0.05)"]

    backbone = HubBackbone(site.hub, site.name)
    host = WarmHost(
        settings,
        backbone,
        stop=threading.Event(),
        worker_argv=lambda fd: [sys.executable, "-c", ECHO_WORKER, str(fd)],
        optimizer_argv=fake_optimizer,
    ).start()
    try:
        if store == "qdrant":
            time.sleep(1.0)
            assert (optimizers, host.optimizer_pid) == ([], None), "a Qdrant server builds its own graph"
            return
        wait_for(lambda: host.optimizer_pid is not None, what="an optimizer once the host is idle")
        first = host.optimizer_pid
        assert first is not None
        assert host.summary() == "search index optimizing"

        assert ask(settings.socket_path, {"op": "search"}, timeout=30) == "search"
        assert not alive(first), "the optimizer is stopped before the worker takes the store"
        # Killed, it had not finished: the next idle spell starts it again.
        wait_for(lambda: len(optimizers) == 2 and host.optimizer_pid is not None, what="a second optimizer")
        (tmp_path / "finish").touch()
        wait_for(lambda: host.optimizer_pid is None, what="the optimizer to finish")
        time.sleep(1.0)
        assert len(optimizers) == 2, "finished: nothing new to optimize until the index takes episodes in"

        (tmp_path / "finish").unlink()
        cursor_file(settings).write(Collections(settings).active(), 5)  # the worker took episodes in
        host.poked.set()  # a wake, as a change to the hub file gives
        wait_for(lambda: len(optimizers) == 3, what="an optimizer for the new episodes")
    finally:
        host.close()
        backbone.close()
        (tmp_path / "finish").touch()
    assert host.optimizer_pid is None
