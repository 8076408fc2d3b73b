"""The warm layer's worker process: indexes and answers searches while there is work, then exits.

The embedding stack (numpy, onnxruntime, tokenizers, qdrant-edge and the model) costs about 80 MB
the moment it is imported and cannot be unloaded from a process, while the sync daemon needs under
60. So it lives here, in a child of the daemon (``daemon.search_worker.host`` starts it): an idle
daemon holds what syncing needs, and the first episode or search after an idle spell pays about a
second to start this process again.

    python -m daemon.search_worker.worker --listen-fd N [--config F]

It serves the daemon's control socket (inherited, already listening, as ``--listen-fd``), reads
pokes from stdin (one line each: new episodes reached the backbone) and exits:
- when the layer has let the model go (``warm.unload_after`` idle seconds) or never needed it (a
  catch-up look that found nothing), after a few more idle seconds, unless it is in trouble (paused
  on a quota, waiting for a reindex, retrying), which it keeps working through as before;
- on SIGTERM, or when stdin closes (the daemon is gone): requests in flight finish first.
Exit status: 0 idle or stopped, 78 a configuration error (the daemon says so and does not retry).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from types import FrameType

import structlog

from daemon import logs
from daemon.config import Settings, load_settings
from daemon.control.server import ControlServer
from daemon.search_worker.handlers import warm_handlers
from daemon.search_worker.wiring import WarmLayer
from daemon.site import opened_backbone
from sync.errors import ConfigError, MemsyncError

log = structlog.get_logger("memsync.warm")

EX_CONFIG = 78
# A worker that never loaded the model (it looked at the feed and found nothing) lingers this long.
SHORT_LINGER_S = 5.0
IDLE_CHECK_S = 1.0
# States the layer works through itself (backing off, paused until a time, waiting for a reindex):
# exiting would only have the daemon start us again to meet the same state.
_TROUBLED = frozenset({"paused", "needs-reindex", "retrying", "error"})


class Activity:
    """When the last request ended, and whether one is in flight."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._in_flight = 0
        self._last = time.monotonic()

    def busy(self, starting: bool) -> None:
        with self._lock:
            self._in_flight += 1 if starting else -1
            self._last = time.monotonic()

    def idle_for(self) -> float:
        with self._lock:
            return 0.0 if self._in_flight else time.monotonic() - self._last


def should_exit(settings: Settings, model_loaded: bool, state: str, working: bool, idle_for: float) -> bool:
    """Pure. The layer lets the model go after ``warm.unload_after`` idle seconds (0: never); once it
    has, or if it never loaded it, a few idle seconds more and the worker has nothing left to do."""
    after = settings.warm.unload_after
    if not after or model_loaded or working or state in _TROUBLED:
        return False
    return idle_for >= min(after, SHORT_LINGER_S)


def serve(settings: Settings, listener: socket.socket) -> None:
    """Run the layer and serve the socket until idle, stopped, or the daemon is gone."""
    stop = threading.Event()
    activity = Activity()
    with opened_backbone(settings) as backbone:
        warm = WarmLayer(settings, backbone, stop=stop, leases=backbone, uses=backbone, links=backbone).start()
        server = ControlServer(listener, warm_handlers(warm), busy=activity.busy).start()
        _install_stop(stop)
        _follow_pokes(warm, stop)
        try:
            while not stop.wait(IDLE_CHECK_S):
                if should_exit(settings, warm.model_loaded, warm.state, warm.working, activity.idle_for()):
                    log.info("warm layer idle: its process exits until there is work", pid=os.getpid())
                    break
        finally:
            server.close()  # requests in flight finish; later ones wait for the next worker
            warm.close()


def _install_stop(stop: threading.Event) -> None:
    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)


def _follow_pokes(warm: WarmLayer, stop: threading.Event) -> None:
    """Each line on stdin is a poke; end of file means the daemon is gone: stop."""

    def read() -> None:
        # The raw descriptor, not sys.stdin: a daemon thread blocked inside a buffered reader holds
        # its lock, and the interpreter aborts at exit when it cannot take it.
        while chunk := os.read(0, 4096):
            if b"\n" in chunk:
                warm.poke()
        stop.set()

    threading.Thread(target=read, name="memsync-pokes", daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m daemon.search_worker.worker", description=__doc__)
    parser.add_argument("--listen-fd", type=int, required=True)
    parser.add_argument("--config", type=Path)
    args = parser.parse_args(argv)
    listener = socket.socket(fileno=args.listen_fd)
    try:
        settings = load_settings(args.config)
        logs.configure(settings.log.level, settings.log.format)
        logs.bind(site=settings.site.name, process="warm")
        serve(settings, listener)
    except ConfigError as exc:
        log.error("warm layer configuration error", error=str(exc))  # noqa: TRY400 - a sentence, no traceback
        return EX_CONFIG
    except MemsyncError as exc:
        log.error("warm layer failed", error=str(exc))  # noqa: TRY400 - a sentence, no traceback
        return 1
    finally:
        listener.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
