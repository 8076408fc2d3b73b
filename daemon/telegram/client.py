"""The one Telegram Bot API client: plain httpx, one request a call, every failure classified.

Not python-telegram-bot: memsync needs six methods, synchronous, with its own error tree, and no
retries of its own (the caller's outbox owns them, so one call is exactly one request).

The bot token is part of every request URL (``/bot<token>/<method>``), so it is kept out of
everything a person or a log can see: exception messages are built from redacted text only, and
are raised outside the ``except`` block that caught httpx's error, so that error (whose request
holds the URL) is neither the ``__cause__`` nor the ``__context__``; no frame here keeps the URL in
a local variable (a console traceback with locals would print it); ``repr`` hides the token. httpx
logs request URLs at INFO: ``daemon.logs.configure`` sets its logger to WARNING.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Protocol, Self
from urllib.parse import quote

import httpx

from daemon.alerts.messages import check_callback_data
from sync import http as http_policy
from sync.errors import (
    ConfigError,
    TelegramAuthError,
    TelegramConflict,
    TelegramRejected,
    TelegramUnavailable,
)

DEFAULT_API_BASE = "https://api.telegram.org"
TOKEN_ENV = "MEMSYNC_TELEGRAM__BOT_TOKEN"  # noqa: S105 (the variable's name, not a token)
_TOKEN = re.compile(r"[0-9]+:[A-Za-z0-9_-]+")
_NOT_MODIFIED = "message is not modified"


class ButtonLike(Protocol):
    """Any button with a label and callback data (``daemon.alerts.messages.Button``, or another)."""

    @property
    def text(self) -> str: ...
    @property
    def data(self) -> str: ...


Keyboard = Sequence[Sequence[ButtonLike]]


def _check(button: ButtonLike) -> None:
    check_callback_data(button.text, button.data)


def redact(text: str, token: str) -> str:
    """``text`` with the bot token (as is or URL-quoted) and its secret half replaced by [redacted]."""
    if not token:
        return text
    forms = {token, quote(token, safe="")}
    secret = token.partition(":")[2]
    if len(secret) >= 8:  # a shorter fragment is no secret, and would mangle ordinary words
        forms.add(secret)
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, "[redacted]")
    return text


class BotApi:
    """One bot's Bot API: ``POST {api_base}/bot{token}/{method}`` with a JSON body."""

    def __init__(
        self,
        token: str,
        api_base: str = DEFAULT_API_BASE,
        *,
        timeout: float = 15.0,
        transport: httpx.BaseTransport | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not _TOKEN.fullmatch(token):
            # Never echo it: a near-miss is still mostly the secret.
            raise TelegramAuthError(
                f"the Telegram bot token is not of the form <digits>:<letters, digits, - or _>: check {TOKEN_ENV} "
                "(no quotes, spaces or newline)"
            )
        if not api_base.startswith(("https://", "http://")):
            raise ConfigError(
                f"the Telegram API address must be an http(s) URL such as {DEFAULT_API_BASE}, not {api_base!r}"
            )
        self.api_base = api_base.rstrip("/")
        self._token = token
        self._timeout = timeout
        self._clock = clock  # what an HTTP-date Retry-After is counted from
        self._client = httpx.Client(timeout=self._timeouts(None), transport=transport)

    def __repr__(self) -> str:
        return f"BotApi({self.api_base!r}, token=[redacted])"

    # -- the methods memsync uses ---------------------------------------------------------------------
    def send_message(self, chat_id: str, text: str, buttons: Keyboard | None = None) -> int:
        """Send ``text`` (plain, no markup parsing) with an optional inline keyboard; its message_id."""
        body: dict[str, Any] = {"chat_id": chat_id, "text": text}
        if buttons:
            body["reply_markup"] = _keyboard(buttons)
        result = self._call("sendMessage", body)
        message_id = result.get("message_id") if isinstance(result, dict) else None
        if not isinstance(message_id, int):
            raise TelegramUnavailable("telegram sendMessage: the answer has no message_id: is the API address right?")
        return message_id

    def edit_message_text(self, chat_id: str, message_id: int, text: str, buttons: Keyboard | None = None) -> None:
        """Replace a sent message's text; ``buttons`` None removes its keyboard. Editing to what it
        already says succeeds (Telegram's "message is not modified"), so a retried edit is harmless."""
        body: dict[str, Any] = {"chat_id": chat_id, "message_id": message_id, "text": text}
        if buttons:
            body["reply_markup"] = _keyboard(buttons)
        self._call("editMessageText", body, not_modified_ok=True)

    def answer_callback_query(self, callback_query_id: str, text: str | None = None, *, alert: bool = False) -> None:
        """Stop the pressed button's spinner; ``text`` shows as a toast (a dialog if ``alert``)."""
        body: dict[str, Any] = {"callback_query_id": callback_query_id, "show_alert": alert}
        if text is not None:
            body["text"] = text
        self._call("answerCallbackQuery", body)

    def get_updates(
        self, offset: int | None, timeout_s: int = 25, allowed: Sequence[str] = ("callback_query",)
    ) -> list[dict[str, Any]]:
        """Long poll: the updates from ``offset`` on (which confirms every one before it), waiting up
        to ``timeout_s`` for the first. Only one poller per bot: another one is a TelegramConflict."""
        if timeout_s < 0:
            raise ValueError(f"timeout_s must be 0 or more seconds, not {timeout_s}")
        body: dict[str, Any] = {"timeout": timeout_s, "allowed_updates": list(allowed)}
        if offset is not None:
            body["offset"] = offset
        # Telegram holds the request up to timeout_s; the read timeout leaves it room to answer.
        result = self._call("getUpdates", body, read_timeout=timeout_s + 10)
        if not isinstance(result, list) or not all(isinstance(u, dict) for u in result):
            raise TelegramUnavailable(
                "telegram getUpdates: the answer is not a list of updates: is the API address right?"
            )
        return result

    def set_webhook(self, url: str, secret_token: str, allowed: Sequence[str] = ("callback_query",)) -> None:
        """Have Telegram POST updates to ``url`` with ``secret_token`` in the
        X-Telegram-Bot-Api-Secret-Token header (getUpdates then answers 409)."""
        self._call("setWebhook", {"url": url, "secret_token": secret_token, "allowed_updates": list(allowed)})

    def delete_webhook(self) -> None:
        self._call("deleteWebhook", {})

    def get_me(self) -> dict[str, Any]:
        """The bot's own user (id, username): a cheap check that the token works."""
        result = self._call("getMe", {})
        if not isinstance(result, dict):
            raise TelegramUnavailable("telegram getMe: the answer is not a user: is the API address right?")
        return result

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # -- one request, classified -----------------------------------------------------------------------
    def _call(
        self, method: str, body: Mapping[str, Any], *, read_timeout: float | None = None, not_modified_ok: bool = False
    ) -> Any:
        try:
            # The URL is built in the call, never bound to a local: tracebacks with locals print locals.
            response = self._client.post(self._url(method), json=body, timeout=self._timeouts(read_timeout))
        except httpx.TimeoutException:
            failure = "timed out"
        except httpx.HTTPError as exc:
            failure = redact(f"{type(exc).__name__}: {exc}", self._token)
        else:
            return self._result(method, response, not_modified_ok)
        # Raised here, after the except block, so httpx's error is not even this one's __context__.
        raise TelegramUnavailable(
            f"telegram {method}: no answer from {self.api_base} ({failure}): Telegram or the network is down"
        )

    def _result(self, method: str, response: httpx.Response, not_modified_ok: bool) -> Any:
        payload = _json_object(response)
        status = response.status_code
        if payload is not None and payload.get("ok") is True and status < 300:
            return payload.get("result")
        if payload is None or "ok" not in payload:
            if status < 300:
                raise TelegramUnavailable(
                    f"telegram {method}: HTTP {status} but not the Bot API's JSON: is {self.api_base} the Bot API?"
                )
            payload = {}
        code = payload.get("error_code") if status < 300 else status
        code = code if isinstance(code, int) else 500
        description = redact(str(payload.get("description") or f"HTTP {code}"), self._token)[:300]
        parameters = payload.get("parameters")
        parameters = parameters if isinstance(parameters, dict) else {}
        if not_modified_ok and code == 400 and _NOT_MODIFIED in description:
            return None
        if code == 404:  # Telegram's answer to a wrong token, whatever the method
            where = "" if self.api_base == DEFAULT_API_BASE else f" (and that {self.api_base} is the Bot API)"
            raise TelegramAuthError(f"telegram refused the bot token (HTTP 404 on {method}): check {TOKEN_ENV}{where}")
        if code == 409:
            raise TelegramConflict(
                f"telegram {method}: another getUpdates poller or a webhook already receives this bot's updates "
                f"({description}): run one receiver per bot token, or delete the webhook"
            )
        if code == 403:
            # Forbidden is about a chat (the bot was blocked, or is not a member), not the token.
            raise TelegramRejected(
                f"telegram {method}: {description}: the person must start the bot, or add it to the chat, again"
            )
        verdict = http_policy.classify(code)
        if verdict is http_policy.Verdict.TRANSIENT:
            wait = _seconds(parameters.get("retry_after"))
            if wait is None:
                wait = http_policy.retry_after(response.headers.get("retry-after"), self._clock())
            raise TelegramUnavailable(f"telegram {method}: HTTP {code}: {description}", wait)
        if verdict is http_policy.Verdict.AUTH:
            raise TelegramAuthError(f"telegram refused the bot token (HTTP {code} on {method}): check {TOKEN_ENV}")
        moved = parameters.get("migrate_to_chat_id")
        hint = f": the group is now chat {moved}, update its chat id" if moved is not None else ""
        raise TelegramRejected(f"telegram refused {method} (HTTP {code}: {description}){hint}")

    def _url(self, method: str) -> str:
        return f"{self.api_base}/bot{self._token}/{method}"

    def _timeouts(self, read: float | None) -> httpx.Timeout:
        read = self._timeout if read is None else read
        return httpx.Timeout(self._timeout, connect=min(self._timeout, 5.0), read=read)


def _keyboard(buttons: Keyboard) -> dict[str, Any]:
    for row in buttons:
        for button in row:
            _check(button)  # a Button checked itself; other buttons are checked before they travel
    return {"inline_keyboard": [[{"text": b.text, "callback_data": b.data} for b in row] for row in buttons]}


def _json_object(response: httpx.Response) -> dict[str, Any] | None:
    """The answer's JSON object, or None (a proxy's HTML error page, an empty body)."""
    try:
        payload = response.json()
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return max(0.0, float(value)) if math.isfinite(value) else None
