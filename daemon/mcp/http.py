"""``memsync mcp --http``: the MCP server over streamable HTTP, for clients that cannot spawn a
process. Bound to 127.0.0.1 only, and every request must carry ``Authorization: Bearer <token>``
(``mcp.token``, from MEMSYNC_MCP__TOKEN): anything else is answered 401 before the SDK sees it.
The token is compared as SHA-256 digests in constant time and never logged.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

HOST = "127.0.0.1"


def token_matches(header: bytes | None, digest: bytes) -> bool:
    """Pure. Whether an Authorization header carries the bearer token whose SHA-256 is ``digest``.
    Digests, so the comparison takes the same time whatever the lengths."""
    scheme, _, given = (header or b"").partition(b" ")
    if scheme.lower() != b"bearer":
        given = b""
    return hmac.compare_digest(hashlib.sha256(given.strip()).digest(), digest) and bool(given.strip())


def bearer_only(app: App, token: str) -> App:
    """``app`` behind the bearer token: HTTP requests without it get 401 and go no further."""
    digest = hashlib.sha256(token.encode()).digest()

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            header = dict(scope.get("headers") or []).get(b"authorization")
            if not token_matches(header, digest):
                body = b'{"error": "missing or wrong bearer token"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"www-authenticate", b'Bearer realm="memsync"'),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded


def serve_http(server: Any, token: str, port: int) -> None:
    """Serve until interrupted. ``server``: an ``MCPServer``."""
    import anyio
    import uvicorn

    app = bearer_only(server.streamable_http_app(host=HOST), token)
    config = uvicorn.Config(app, host=HOST, port=port, log_level="warning", access_log=False, lifespan="on")
    anyio.run(uvicorn.Server(config).serve)
