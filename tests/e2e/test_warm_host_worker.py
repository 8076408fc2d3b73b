"""Tier: e2e. The warm host with its real worker process: started by a request, retried after a failure."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import SiteFiles, wait_for

from daemon.config import load_settings
from daemon.control.client import ask
from daemon.search_worker.files import write_status
from daemon.search_worker.host import WarmHost
from sync.backbone.hub import HubBackbone
from sync.errors import ControlError


def host_site(site_files: Callable[..., SiteFiles], short_dir: Path, tmp_path: Path) -> SiteFiles:
    warm = f'path = "{tmp_path / "warm"}"\nsocket = "{short_dir / "s.sock"}"\ncatch_up_interval = 600\n'
    return site_files(warm=warm)


def test_a_failing_worker_is_retried_later_and_requests_meanwhile_are_told_why(
    site_files: Callable[..., SiteFiles], short_dir: Path, tmp_path: Path
) -> None:
    site = host_site(site_files, short_dir, tmp_path)
    settings = load_settings(site.config)
    write_status(settings, {"state": "error", "detail": "qdrant-edge could not open its files"})
    starts: list[int] = []

    def failing_worker(_listen_fd: int) -> list[str]:
        starts.append(1)
        return [sys.executable, "-c", "raise SystemExit(3)"]

    backbone = HubBackbone(site.hub, site.name)
    stop = threading.Event()
    host = WarmHost(settings, backbone, stop=stop, worker_argv=failing_worker).start()
    try:
        host.poke()
        wait_for(lambda: host.worker_pid is None and len(starts) == 1, what="the worker to fail")
        with pytest.raises(ControlError, match="qdrant-edge could not open its files") as refused:
            ask(settings.socket_path, {"op": "search", "request": {"query": "x"}}, timeout=10)
        assert refused.value.kind == "transient"
        assert len(starts) == 1, "no second start while backing off"
        wait_for(lambda: len(starts) >= 2, timeout=30, what="a second start after the backoff")
    finally:
        host.close()
        backbone.close()
    assert not settings.socket_path.exists()


def test_a_request_starts_the_worker_which_serves_it(
    site_files: Callable[..., SiteFiles], short_dir: Path, tmp_path: Path
) -> None:
    """Socket activation: nothing runs until a request arrives; the worker that starts inherits the
    listening socket and answers it."""
    site = host_site(site_files, short_dir, tmp_path)
    settings = load_settings(site.config)
    echo = (
        "import json, socket, sys\n"
        "listener = socket.socket(fileno=int(sys.argv[1]))\n"
        "conn, _ = listener.accept()\n"
        "request = json.loads(conn.makefile('rb').readline())\n"
        "conn.sendall(json.dumps({'ok': True, 'result': request['op']}).encode() + b'\\n')\n"
    )
    backbone = HubBackbone(site.hub, site.name)
    host = WarmHost(
        settings, backbone, stop=threading.Event(), worker_argv=lambda fd: [sys.executable, "-c", echo, str(fd)]
    ).start()
    try:
        assert host.worker_pid is None
        assert ask(settings.socket_path, {"op": "search"}, timeout=30) == "search"
        assert host.starts == 1
    finally:
        host.close()
        backbone.close()
