"""Fakes at the lowest seam for the cloud clients' tests: a real HTTP server on 127.0.0.1 that
answers with a provider's REST API (with scripted failures served first), a sleep that records the
retry waits instead of sleeping, and a check that the API key leaks nowhere."""

from __future__ import annotations

import hashlib
import json
import threading
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from sync.resilience.retry import RetryPolicy

KEY = "sk-TEST-secret-key-0123456789"
# A fixed clock 600 s past an hour: "until the next hour" is 3000 s.
NOW = 3600.0 * 480_000 + 600.0


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any


Reply = tuple[int, dict[str, str], Any]


@dataclass
class FakeProvider:
    url: str
    respond: Callable[[str, Any], Reply]
    requests: list[Seen] = field(default_factory=list)
    script: list[Reply] = field(default_factory=list)  # served first, in order, before `respond`

    def fail(self, status: int, body: Any, headers: dict[str, str] | None = None, times: int = 1) -> None:
        self.script += [(status, headers or {}, body)] * times


def serve(respond: Callable[[str, Any], Reply]) -> Iterator[FakeProvider]:
    """A fixture body: ``yield from serve(respond)``."""
    provider = FakeProvider(url="", respond=respond)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            body = json.loads(raw) if raw else None
            with lock:
                provider.requests.append(Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                reply = provider.script.pop(0) if provider.script else None
            status, headers, payload = reply or provider.respond(self.path, body)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    provider.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield provider
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def closed_url() -> str:
    """The URL of a port nothing listens on (bound, then released)."""
    with ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler) as closed:
        port = closed.server_address[1]
    return f"http://127.0.0.1:{port}"


@dataclass
class Sleeps:
    """RetryPolicy's sleep: records the waits instead of sleeping, and stops a runaway loop."""

    waits: list[float] = field(default_factory=list)

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        assert len(self.waits) < 20, "retrying in a loop"


def fast_policy(sleeps: Sleeps, give_up_after: float | None = None) -> RetryPolicy:
    """Backoff of 0.01 s without jitter, waited through ``sleeps``."""
    return RetryPolicy(initial=0.01, maximum=0.01, jitter=0.0, give_up_after=give_up_after, sleep=sleeps)


def assert_key_hidden(exc: BaseException) -> None:
    text = "".join(traceback.format_exception(exc)) + repr(exc) + str(exc.__cause__) + str(exc.__context__)
    assert KEY not in text


# --- Gemini's API, as the embedder tests and the daemon tests need it ---------------------------------


def fake_vector(text: str, dims: int) -> list[float]:
    """What the fake providers return: deterministic per text and deliberately not unit length."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    vector: list[float] = (np.random.default_rng(seed).standard_normal(dims) * 3.0).tolist()
    return vector


def gemini_respond(path: str, body: Any) -> Reply:
    if path != "/v1/models/gemini-embedding-001:batchEmbedContents":
        return 404, {}, {"error": {"code": 404, "message": f"no route {path}", "status": "NOT_FOUND"}}
    if len(body["requests"]) > 100:
        return 400, {}, {"error": {"code": 400, "message": "at most 100 requests", "status": "INVALID_ARGUMENT"}}
    return (
        200,
        {},
        {
            "embeddings": [
                {"values": fake_vector(r["content"]["parts"][0]["text"], r["outputDimensionality"])}
                for r in body["requests"]
            ]
        },
    )


def google_error(code: int, status: str, message: str, details: list[Any] | None = None) -> Any:
    return {"error": {"code": code, "message": message, "status": status, "details": details or []}}


# --- fixtures (a pytest plugin: conftest.py lists this module) ----------------------------------


@pytest.fixture
def sleeps() -> Sleeps:
    """Retry waits recorded, not slept."""
    return Sleeps()


@pytest.fixture
def policy(sleeps: Sleeps) -> RetryPolicy:
    return fast_policy(sleeps)
