"""A fake Telegram Bot API for tests: a real HTTP server on 127.0.0.1 that checks the token in the
path, keeps the messages it was sent, queues updates (button presses) for a long-polling getUpdates,
and fails on request, so that the client and everything above it are tested over real HTTP.

    with FakeTelegram(token="123:ABC") as tg:
        api = BotApi("123:ABC", tg.api_base)
        message_id = api.send_message("42", "disk full", [[Button("Snooze", "s:1")]])
        tg.press(message_id, "s:1", from_id=7)
        api.get_updates(None, timeout_s=1)  # -> [the callback_query update]

It answers as Telegram does where tests depend on it: 404 for a wrong token, 400 for an edit of an
unknown message or one that changes nothing (text and keyboard alike), 409 for a second getUpdates
while one is in flight or while a webhook is set, 429 with ``parameters.retry_after``.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

BOT = {"id": 1, "is_bot": True, "first_name": "memsync", "username": "memsync_test_bot"}
NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup are exactly the same "
    "as a current content and reply markup of the message"
)
CONFLICT_POLL = "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"
CONFLICT_WEBHOOK = "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete it first"
_DESCRIPTIONS = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden: bot was blocked by the user"}
_PATH = re.compile(r"/bot([^/]*)/([A-Za-z]+)")

Reply = tuple[int, dict[str, Any]]


@dataclass(frozen=True)
class _Out:
    """What goes on the wire: a Bot API reply, with extra headers, or a proxy's HTML page instead."""

    status: int
    payload: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    html: bool = False


@dataclass(frozen=True)
class Call:
    """A request the fake's Bot API answered (not a dropped or injected failure); ``ok`` is its outcome."""

    method: str
    body: dict[str, Any]
    ok: bool


@dataclass(frozen=True)
class _Failure:
    status: int
    description: str | None
    retry_after: int | None
    header: str | None
    html: bool


def _error(code: int, description: str, **parameters: Any) -> Reply:
    payload: dict[str, Any] = {"ok": False, "error_code": code, "description": description}
    if parameters:
        payload["parameters"] = parameters
    return code, payload


def _chat(chat_id: Any) -> Any:
    """A chat id as Telegram writes it in a message: a number, unless it is an @username."""
    text = str(chat_id)
    return int(text) if text.lstrip("-").isdigit() else text


class FakeTelegram:
    def __init__(self, token: str = "123:ABC") -> None:
        self.token = token
        self.api_base = ""
        self._webhook: dict[str, Any] | None = None
        self._cond = threading.Condition()
        self._sent: list[Call] = []
        self._log: list[str] = []
        self._updates: list[dict[str, Any]] = []
        self._messages: dict[int, dict[str, Any]] = {}
        self._queries: set[str] = set()
        self._failures: list[_Failure] = []
        self._next_update = self._next_message = self._next_query = 1
        self._polling = 0
        self._down = self._closing = False
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- what tests read -------------------------------------------------------------------------------
    @property
    def sent(self) -> list[Call]:
        """Every call the API answered, in order (a copy)."""
        with self._cond:
            return list(self._sent)

    @property
    def requests_log(self) -> list[str]:
        """The raw path of every request that arrived, failed or not: the token as it travels."""
        with self._cond:
            return list(self._log)

    def messages(self, chat_id: str | None = None) -> list[dict[str, Any]]:
        """The bodies of the sendMessage calls that succeeded, optionally to one chat."""
        return [c.body for c in self._ok("sendMessage") if chat_id is None or str(c.body["chat_id"]) == chat_id]

    def edits(self) -> list[dict[str, Any]]:
        """The bodies of the editMessageText calls that changed a message."""
        return [c.body for c in self._ok("editMessageText")]

    def answers(self) -> list[dict[str, Any]]:
        """The bodies of the answerCallbackQuery calls that succeeded."""
        return [c.body for c in self._ok("answerCallbackQuery")]

    def current(self, message_id: int) -> dict[str, Any]:
        """What a sent message says now: its chat_id, text and reply_markup (None once removed)."""
        with self._cond:
            return dict(self._messages[message_id])

    def webhook(self) -> dict[str, Any] | None:
        """The last setWebhook body, until deleteWebhook."""
        with self._cond:
            return self._webhook

    def _ok(self, method: str) -> list[Call]:
        return [c for c in self.sent if c.method == method and c.ok]

    # -- what tests do ---------------------------------------------------------------------------------
    def push_update(self, update: dict[str, Any]) -> int:
        """Queue an update for getUpdates (an update_id is assigned if it has none); its update_id."""
        with self._cond:
            update = dict(update)
            update.setdefault("update_id", self._next_update)
            self._next_update = max(self._next_update, int(update["update_id"]) + 1)
            query = update.get("callback_query")
            if isinstance(query, dict):
                self._queries.add(str(query.get("id")))
            self._updates.append(update)
            self._cond.notify_all()
            return int(update["update_id"])

    def callback_update(self, message_id: int, data: str, from_id: int, first_name: str = "Ann") -> dict[str, Any]:
        """The update Telegram makes of a press on a sent message (``data`` is not checked against
        the keyboard: a modified client can send any), its query known to answerCallbackQuery.
        ``press`` queues it for getUpdates; a webhook test POSTs it."""
        with self._cond:
            if message_id not in self._messages:
                raise ValueError(f"no message {message_id} was sent: press one that sendMessage returned")
            message = self._messages[message_id]
            query_id = f"cq{self._next_query}"
            self._next_query += 1
            self._queries.add(query_id)
            update_id = self._next_update
            self._next_update += 1
        return {
            "update_id": update_id,
            "callback_query": {
                "id": query_id,
                "from": {"id": from_id, "is_bot": False, "first_name": first_name},
                "message": {
                    "message_id": message_id,
                    "from": BOT,
                    "chat": {"id": _chat(message["chat_id"]), "type": "private"},
                    "date": int(time.time()),
                    "text": message["text"],
                },
                "chat_instance": "1",
                "data": data,
            },
        }

    def press(self, message_id: int, data: str, from_id: int, first_name: str = "Ann") -> str:
        """Someone presses a button on a sent message; the callback query's id."""
        update = self.callback_update(message_id, data, from_id, first_name)
        self.push_update(update)
        return str(update["callback_query"]["id"])

    def fail_next(
        self,
        n: int = 1,
        status: int = 502,
        retry_after: int | None = None,
        *,
        description: str | None = None,
        header: str | None = None,
        html: bool = False,
    ) -> None:
        """The next ``n`` requests answer ``status``: a 429 with ``parameters.retry_after`` if given,
        ``header`` as a Retry-After header, ``html`` as a proxy's error page instead of JSON."""
        with self._cond:
            self._failures += [_Failure(status, description, retry_after, header, html)] * n

    def down(self) -> None:
        """Drop every connection without an answer (a pending long poll too) until ``up``."""
        with self._cond:
            self._down = True
            self._cond.notify_all()

    def up(self) -> None:
        with self._cond:
            self._down = False

    def wait_for_poll(self, timeout: float = 5.0) -> None:
        """Block until a getUpdates call is waiting for updates."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._polling > 0, timeout):
                raise AssertionError(f"no getUpdates call was waiting within {timeout} s")

    # -- the Bot API -----------------------------------------------------------------------------------
    def _answer(self, path: str, body: dict[str, Any]) -> _Out | None:
        """The reply to one request, or None to drop the connection."""
        with self._cond:
            self._log.append(path)
            if self._down:
                return None
            if self._failures:
                return self._injected(self._failures.pop(0))
            match = _PATH.fullmatch(path.split("?", 1)[0])
            if match is None or match[1] != self.token:
                return _Out(*_error(404, "Not Found"))
            method = match[2]
            handler = getattr(self, f"_api_{method.lower()}", None)
            reply: Reply | None = handler(body) if handler is not None else _error(404, "Not Found")
            if reply is None:
                return None
            self._sent.append(Call(method, body, reply[0] == 200))
            return _Out(*reply)

    def _injected(self, failure: _Failure) -> _Out:
        description = failure.description or _DESCRIPTIONS.get(failure.status, f"Injected failure {failure.status}")
        if failure.status == 429:
            description = failure.description or f"Too Many Requests: retry after {failure.retry_after or 1}"
        parameters = {} if failure.retry_after is None else {"retry_after": failure.retry_after}
        headers = {} if failure.header is None else {"Retry-After": failure.header}
        return _Out(*_error(failure.status, description, **parameters), headers=headers, html=failure.html)

    def _api_sendmessage(self, body: dict[str, Any]) -> Reply:
        text = body.get("text")
        if not body.get("chat_id"):
            return _error(400, "Bad Request: chat_id is empty")
        if not isinstance(text, str) or not text:
            return _error(400, "Bad Request: message text is empty")
        if len(text) > 4096:
            return _error(400, "Bad Request: message is too long")
        if not _valid_markup(body.get("reply_markup")):
            return _error(400, "Bad Request: BUTTON_DATA_INVALID")
        message_id = self._next_message
        self._next_message += 1
        self._messages[message_id] = {
            "chat_id": body["chat_id"],
            "text": text,
            "reply_markup": body.get("reply_markup"),
        }
        return 200, {"ok": True, "result": self._message_object(message_id)}

    def _api_editmessagetext(self, body: dict[str, Any]) -> Reply:
        message = self._messages.get(body.get("message_id", -1))
        if message is None or str(message["chat_id"]) != str(body.get("chat_id")):
            return _error(400, "Bad Request: message to edit not found")
        if not isinstance(body.get("text"), str) or not body["text"]:
            return _error(400, "Bad Request: message text is empty")
        if not _valid_markup(body.get("reply_markup")):
            return _error(400, "Bad Request: BUTTON_DATA_INVALID")
        if (message["text"], message["reply_markup"]) == (body["text"], body.get("reply_markup")):
            return _error(400, NOT_MODIFIED)
        message.update(text=body["text"], reply_markup=body.get("reply_markup"))
        return 200, {"ok": True, "result": self._message_object(int(body["message_id"]))}

    def _api_answercallbackquery(self, body: dict[str, Any]) -> Reply:
        if str(body.get("callback_query_id")) not in self._queries:
            return _error(400, "Bad Request: query is too old and response timeout expired or query ID is invalid")
        return 200, {"ok": True, "result": True}

    def _api_getupdates(self, body: dict[str, Any]) -> Reply | None:
        if self._webhook is not None:
            return _error(409, CONFLICT_WEBHOOK)
        if self._polling:
            return _error(409, CONFLICT_POLL)
        offset = body.get("offset")
        if isinstance(offset, int):  # confirms every update before it; a negative one keeps the last -offset
            self._updates = (
                self._updates[offset:] if offset < 0 else [u for u in self._updates if u["update_id"] >= offset]
            )
        allowed = body.get("allowed_updates") or None
        limit = int(body.get("limit", 100))
        deadline = time.monotonic() + float(body.get("timeout", 0))
        self._polling += 1
        self._cond.notify_all()
        try:
            while True:
                ready = [u for u in self._updates if allowed is None or any(k in u for k in allowed)][:limit]
                left = deadline - time.monotonic()
                if ready or left <= 0 or self._down or self._closing:
                    break
                self._cond.wait(left)
        finally:
            self._polling -= 1
        if self._down or self._closing:
            return None
        return 200, {"ok": True, "result": ready}

    def _api_setwebhook(self, body: dict[str, Any]) -> Reply:
        if not str(body.get("url", "")).startswith("https://"):
            return _error(400, "Bad Request: bad webhook: An HTTPS URL must be provided for webhook")
        self._webhook = body
        return 200, {"ok": True, "result": True, "description": "Webhook was set"}

    def _api_deletewebhook(self, body: dict[str, Any]) -> Reply:
        was, self._webhook = self._webhook, None
        return 200, {
            "ok": True,
            "result": True,
            "description": "Webhook was deleted" if was else "Webhook is already deleted",
        }

    def _api_getme(self, body: dict[str, Any]) -> Reply:
        return 200, {"ok": True, "result": {"id": 1, "is_bot": True, "username": "memsync_test_bot"}}

    def _message_object(self, message_id: int) -> dict[str, Any]:
        message = self._messages[message_id]
        out = {
            "message_id": message_id,
            "from": BOT,
            "chat": {"id": _chat(message["chat_id"]), "type": "private"},
            "date": int(time.time()),
            "text": message["text"],
        }
        if message["reply_markup"]:
            out["reply_markup"] = message["reply_markup"]
        return out

    # -- the server ------------------------------------------------------------------------------------
    def __enter__(self) -> Self:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    body = None
                out = (
                    fake._answer(self.path, body)
                    if isinstance(body, dict)
                    else _Out(*_error(400, "Bad Request: bad JSON"))
                )
                if out is None:
                    self.close_connection = True  # no answer at all: the client sees the connection end
                    return
                if out.html:
                    data = f"<html><body><h1>{out.status}</h1>nginx</body></html>".encode()
                else:
                    data = json.dumps(out.payload).encode()
                kind = "text/html" if out.html else "application/json"
                self.send_response(out.status)
                for name, value in {**out.headers, "Content-Type": kind, "Content-Length": str(len(data))}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that hung up mid-answer (a timed-out poll) is not the test's failure

        self._server = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        self.api_base = f"http://127.0.0.1:{self._server.server_address[1]}"
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        with self._cond:
            self._closing = True  # wakes pending long polls, which then drop their connections
            self._cond.notify_all()
        if self._server is not None and self._thread is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join()


def _valid_markup(markup: Any) -> bool:
    """None, or an inline keyboard whose every button has text and 1 to 64 bytes of callback_data."""
    if markup is None:
        return True
    rows = markup.get("inline_keyboard") if isinstance(markup, dict) else None
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        return False
    return all(
        isinstance(b, dict)
        and isinstance(b.get("text"), str)
        and b["text"]
        and isinstance(b.get("callback_data"), str)
        and 1 <= len(b["callback_data"].encode()) <= 64
        for row in rows
        for b in row
    )
