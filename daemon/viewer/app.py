"""The viewer as an ASGI app (Starlette): its routes, and the guard in front of every one of them.

The guard (``guarded``) answers before any page does: a Host other than the viewer's own address
gets 421 (a page elsewhere cannot reach 127.0.0.1 through a DNS name it controls); ``/login``
trades the one-time token for a session cookie; a request without a valid session gets 401; a
POST without its session's CSRF value gets 403, whatever the route; every answer carries the
Content-Security-Policy and its companions (``daemon.viewer.auth.HEADERS``).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from importlib import resources
from typing import Any, Final
from urllib.parse import parse_qs

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from daemon.viewer.auth import COOKIE, HEADERS, Sessions, session_cookie
from daemon.viewer.html import Markup, notice, page
from daemon.viewer.views import Shown, Views

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

# A form's body is a few fields: more is refused before it is read whole.
MAX_FORM_BYTES: Final = 64 * 1024
STATIC: Final = {"viewer.css": "text/css; charset=utf-8", "viewer.js": "text/javascript; charset=utf-8"}
# Seconds between two looks at the fleet for the live page.
LIVE_INTERVAL_S: Final = 2.0


def _plain(status: int, text: str) -> tuple[int, bytes]:
    return status, page(title="memsync", active="", body=notice(text, "problem"), site="").encode()


async def _answer(send: Send, status: int, body: bytes, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    headers = [(b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra or [])})
    await send({"type": "http.response.body", "body": body})


def session_of(scope: Scope) -> str | None:
    raw = dict(scope.get("headers") or []).get(b"cookie", b"").decode("latin-1")
    cookie: SimpleCookie = SimpleCookie()
    try:
        cookie.load(raw)
    except Exception:  # noqa: BLE001 - a malformed cookie header is no session, whatever http.cookies raises
        return None
    found = cookie.get(COOKIE)
    return None if found is None else found.value


def guarded(app: App, sessions: Sessions, hosts: set[str], clock: Callable[[], float] = time.time) -> App:
    """``app`` behind the viewer's guard (the module's doc). ``hosts``: the Host values the viewer
    answers to (filled in once its port is known)."""

    async def login(scope: Scope, send: Send) -> None:
        token = (parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token") or [""])[0]
        session = sessions.login(token, clock())
        if session is None:
            text = "this login link was used already or is wrong: restart `memsync ui` for a new one"
            await _answer(send, *_plain(401, text))
            return
        cookie = session_cookie(session, sessions.ttl_s).encode()
        headers = [(b"location", b"/"), (b"set-cookie", cookie), (b"content-length", b"0")]
        await send({"type": "http.response.start", "status": 303, "headers": headers})
        await send({"type": "http.response.body", "body": b""})

    async def checked(scope: Scope, receive: Receive, send: Send, session: str) -> Receive | None:
        """The form's body, replayed for the app, when it carries the session's CSRF value; None
        once refused."""
        body = await _whole_body(receive)
        if body is None:
            await _answer(send, *_plain(413, "that form is too large"))
            return None
        given = (parse_qs(body.decode("utf-8", "replace")).get("csrf") or [""])[0]
        if scope["method"] != "POST" or not sessions.csrf_ok(session, given):
            text = "refused: the form did not carry this session's CSRF value (reload the page and try again)"
            await _answer(send, *_plain(403, text))
            return None
        return _replay(body)

    async def guard(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        send = _with_headers(send)
        path = scope["path"]
        host = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1")
        session = session_of(scope)
        if host not in hosts:
            await _answer(send, *_plain(421, f"this viewer answers on {', '.join(sorted(hosts))} only"))
        elif path == "/login":
            await login(scope, send)
        elif path.startswith("/static/"):
            await app(scope, receive, send)
        elif session is None or not sessions.valid(session, clock()):
            await _answer(send, *_plain(401, "log in with the link `memsync ui` printed when it started"))
        elif scope["method"] in ("GET", "HEAD"):
            scope.setdefault("state", {})["session"] = session
            await app(scope, receive, send)
        elif (replayed := await checked(scope, receive, send, session)) is not None:
            scope.setdefault("state", {})["session"] = session
            await app(scope, replayed, send)

    return guard


def _with_headers(send: Send) -> Send:
    """``send`` adding the security headers to the response's start."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", []), *((k.encode(), v.encode()) for k, v in HEADERS)]
        await send(message)

    return sending


async def _whole_body(receive: Receive) -> bytes | None:
    """The request's body; None past MAX_FORM_BYTES."""
    body = b""
    while True:
        message = await receive()
        body += bytes(message.get("body", b""))
        if len(body) > MAX_FORM_BYTES:
            return None
        if not message.get("more_body"):
            return body


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            await anyio.sleep_forever()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


def build_app(views: Views, sessions: Sessions, hosts: set[str]) -> App:
    """The viewer: its routes (``views`` does each page's work) behind the guard."""
    site = views.settings.site.name

    def html(shown: Shown, *, title: str, active: str, script: bool = False) -> HTMLResponse:
        return HTMLResponse(page(title=title, active=active, body=shown.body, site=site, script=script), shown.status)

    def csrf(request: Request) -> str:
        return sessions.csrf(request.scope["state"]["session"])

    async def memory(request: Request) -> Response:
        shown = await anyio.to_thread.run_sync(views.search, dict(request.query_params))
        return html(shown, title="Memory", active="memory")

    async def one_memory(request: Request) -> Response:
        site_, source_id = request.path_params["site"], request.path_params["source_id"]
        shown = await anyio.to_thread.run_sync(views.memory, site_, source_id, csrf(request))
        return html(shown, title=f"{site_}:{source_id}", active="memory")

    async def forget(request: Request) -> Response:
        form = await request.form()
        site_, source_id = request.path_params["site"], request.path_params["source_id"]
        confirmed = form.get("confirm") == "yes"
        shown = await anyio.to_thread.run_sync(views.forget, site_, source_id, confirmed)
        return html(shown, title=f"Forget {site_}:{source_id}", active="memory")

    async def pin(request: Request) -> Response:
        form = await request.form()
        site_, source_id = request.path_params["site"], request.path_params["source_id"]
        pinned = form.get("pinned") == "yes"
        shown = await anyio.to_thread.run_sync(views.pin, site_, source_id, pinned, csrf(request))
        return html(shown, title=f"{site_}:{source_id}", active="memory")

    async def unmerge(request: Request) -> Response:
        form = await request.form()
        site_, source_id = request.path_params["site"], request.path_params["source_id"]
        step = str(form.get("step") or "")
        shown = await anyio.to_thread.run_sync(views.unmerge, site_, source_id, step, csrf(request))
        return html(shown, title=f"{site_}:{source_id}", active="memory")

    async def retag(request: Request) -> Response:
        form = await request.form()
        site_, source_id = request.path_params["site"], request.path_params["source_id"]
        memory_type, tags = str(form.get("type") or ""), str(form.get("tags") or "")
        shown = await anyio.to_thread.run_sync(views.retag, site_, source_id, memory_type, tags, csrf(request))
        return html(shown, title=f"{site_}:{source_id}", active="memory")

    async def approvals(request: Request) -> Response:
        shown = await anyio.to_thread.run_sync(views.approvals, csrf(request))
        return html(shown, title="Approvals", active="approvals")

    async def decide(request: Request) -> Response:
        approval_id, verb = request.path_params["approval_id"], request.path_params["verb"]
        shown = await anyio.to_thread.run_sync(views.decide, approval_id, verb, csrf(request))
        return html(shown, title="Approvals", active="approvals")

    async def fleet(request: Request) -> Response:
        shown = await anyio.to_thread.run_sync(views.fleet)
        return html(shown, title="Fleet", active="fleet", script=True)

    async def fleet_events(request: Request) -> Response:
        from sse_starlette.sse import EventSourceResponse

        async def events() -> AsyncIterator[dict[str, str]]:
            while True:
                live: Markup = await anyio.to_thread.run_sync(views.fleet_live)
                yield {"event": "fleet", "data": str(live)}
                await anyio.sleep(LIVE_INTERVAL_S)

        return EventSourceResponse(events(), ping=15)

    async def digest(request: Request) -> Response:
        shown = await anyio.to_thread.run_sync(views.digest, request.query_params.get("day"))
        return html(shown, title="Digest", active="digest")

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return Response(b"", 404)
        data = resources.files("daemon.viewer").joinpath("static", name).read_bytes()
        return Response(data, 200, media_type=STATIC[name])

    routes = [
        Route("/", memory),
        Route("/memory/{site}/{source_id}", one_memory),
        Route("/memory/{site}/{source_id}/forget", forget, methods=["POST"]),
        Route("/memory/{site}/{source_id}/pin", pin, methods=["POST"]),
        Route("/memory/{site}/{source_id}/unmerge", unmerge, methods=["POST"]),
        Route("/memory/{site}/{source_id}/retag", retag, methods=["POST"]),
        Route("/approvals", approvals),
        Route("/approvals/{approval_id}/{verb}", decide, methods=["POST"]),
        Route("/fleet", fleet),
        Route("/fleet/events", fleet_events),
        Route("/digest", digest),
        Route("/static/{name}", static),
    ]
    return guarded(Starlette(routes=routes), sessions, hosts, views.clock)
