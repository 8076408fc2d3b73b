"""The Convex backbone client: how failures are classified, authentication, and the site secret
staying out of every log line, status report and error message."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from sync.backbone.convex import ConvexBackbone, classify
from sync.errors import (
    BackboneAuthError,
    BackboneConflict,
    BackboneNotFound,
    BackboneRejected,
    BackboneUnavailable,
    ConfigError,
    MemsyncError,
)


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("UNAUTHORIZED", BackboneAuthError),
        ("INVALID", BackboneRejected),
        ("TOO_LARGE", BackboneRejected),
        ("CONFLICT", BackboneConflict),
        ("NOT_FOUND", BackboneNotFound),
        ("NOT_ADOPTED", ConfigError),
        (None, BackboneRejected),  # an uncaught function error: the engine bisects the batch
        ("OVERLOADED", BackboneUnavailable),  # a code we do not know: try again later
    ],
)
def test_errors_are_classified_by_code_never_by_message(code: str | None, kind: type[MemsyncError]) -> None:
    assert type(classify(code, "[Request ID: 1] Server Error")) is kind


class _Canned(BaseHTTPRequestHandler):
    status = 200
    body = b"{}"
    headers_out: dict[str, str] = {}  # noqa: RUF012 - set per test, before the server starts

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(self.status)
        for key, value in self.headers_out.items():
            self.send_header(key, value)
        self.send_header("content-length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def canned() -> Iterator[type[_Canned]]:
    handler = type("Handler", (_Canned,), {"headers_out": {}})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    handler.url = f"http://127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
    yield handler
    server.shutdown()
    server.server_close()


def test_a_rate_limit_is_transient_and_carries_retry_after(canned: type[_Canned]) -> None:
    canned.status, canned.body, canned.headers_out = 429, b"slow down", {"Retry-After": "7"}
    client = ConvexBackbone(canned.url, "laptop", "s3cret-abcdef")  # type: ignore[attr-defined]
    with pytest.raises(BackboneUnavailable, match="HTTP 429") as raised:
        client.ping()
    assert getattr(raised.value, "retry_after", None) == 7.0
    client.close()


@pytest.mark.parametrize(
    ("status", "headers", "kind", "retry_after"),
    [
        (503, {"Retry-After": "2.5"}, BackboneUnavailable, 2.5),
        (502, {}, BackboneUnavailable, None),
        (408, {}, BackboneUnavailable, None),
        (429, {"Retry-After": "Thu, 01 Jan 1970 00:00:00 GMT"}, BackboneUnavailable, 0.0),  # a date in the past
        (429, {"Retry-After": "inf"}, BackboneUnavailable, None),  # never "wait forever"
        (401, {}, BackboneAuthError, None),
        (403, {}, BackboneAuthError, None),
        (400, {}, ConfigError, None),
        (405, {}, ConfigError, None),
    ],
)
def test_http_statuses_mean_what_the_one_policy_says(
    canned: type[_Canned], status: int, headers: dict[str, str], kind: type[MemsyncError], retry_after: float | None
) -> None:
    """sync/http.py decides for every service memsync calls; the Convex client maps its verdict."""
    canned.status, canned.body, canned.headers_out = status, b"no", headers
    client = ConvexBackbone(canned.url, "laptop", "s3cret-abcdef")  # type: ignore[attr-defined]
    with pytest.raises(kind, match=f"HTTP {status}") as raised:
        client.ping()
    assert type(raised.value) is kind
    assert getattr(raised.value, "retry_after", None) == retry_after
    client.close()


def test_a_retry_after_date_is_counted_from_the_clients_clock(canned: type[_Canned]) -> None:
    """A Retry-After given as an HTTP date is the seconds from the client's clock to it, for the
    site's calls and for the operator's (the clock is an argument, as every clock is)."""
    now = 1_800_000_000.0  # Fri, 15 Jan 2027 08:00:00 GMT
    canned.status, canned.body = 503, b"busy"
    canned.headers_out = {"Retry-After": "Fri, 15 Jan 2027 08:01:30 GMT"}
    client = ConvexBackbone(canned.url, "laptop", "s3cret-abcdef", clock=lambda: now)  # type: ignore[attr-defined]
    operator = client.operator("deploy-key-abcdef")
    try:
        with pytest.raises(BackboneUnavailable, match="HTTP 503") as raised:
            client.ping()
        assert raised.value.retry_after == 90.0
        with pytest.raises(BackboneUnavailable, match="HTTP 503") as raised:
            operator.call("query", "episodes:getCursor", {})
        assert raised.value.retry_after == 90.0
    finally:
        operator.close()
        client.close()


def test_a_wrong_url_is_a_configuration_error_not_a_bad_row(canned: type[_Canned]) -> None:
    canned.status, canned.body = 404, b"Not Found"
    client = ConvexBackbone(canned.url, "laptop", "s3cret-abcdef")  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="HTTP 404"):
        client.ping()
    client.close()


def test_a_function_error_with_a_code_is_classified(canned: type[_Canned]) -> None:
    canned.body = json.dumps(
        {
            "status": "error",
            "errorMessage": "[Request ID: 9] Server Error",
            "errorData": {"code": "INVALID", "message": "cursor must be a number"},
        }
    ).encode()
    client = ConvexBackbone(canned.url, "laptop", "s3cret-abcdef")  # type: ignore[attr-defined]
    with pytest.raises(BackboneRejected, match="cursor must be a number"):
        client.ping()
    client.close()


def test_nobody_listening_is_transient() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = ConvexBackbone(f"http://127.0.0.1:{port}", "laptop", "s3cret-abcdef", timeout=2)
    with pytest.raises(BackboneUnavailable, match="ConnectError"):
        client.ping()
    client.close()
