"""The Telegram client against a fake Bot API over real HTTP: what it sends, how every failure is
classified, and that the bot token (which is in every URL) leaks into no error, traceback or log."""

from __future__ import annotations

import io
import socket
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import pytest
import rich.console
import rich.traceback
from fake_providers import closed_url
from fake_telegram import FakeTelegram

from daemon.alerts.messages import Button
from daemon.telegram.client import BotApi, redact
from sync.errors import (
    ConfigError,
    MemsyncError,
    TelegramAuthError,
    TelegramConflict,
    TelegramRejected,
    TelegramUnavailable,
)

TOKEN = "7000001:AAF-fake_SECRET-0123456789abcdefXYZ"
SECRET = TOKEN.partition(":")[2]
E = TypeVar("E", bound=MemsyncError)


@pytest.fixture
def tg() -> Iterator[FakeTelegram]:
    with FakeTelegram(token=TOKEN) as fake:
        yield fake


@pytest.fixture
def api(tg: FakeTelegram) -> Iterator[BotApi]:
    with BotApi(TOKEN, tg.api_base, timeout=5.0) as client:
        yield client


def assert_hidden(exc: BaseException, api: BotApi) -> None:
    """The token is nowhere a person or a log could see it, with tracebacks rendered both ways."""
    # A console log renders tracebacks with rich, locals included: no frame may hold the URL.
    rendered = io.StringIO()
    rich.console.Console(file=rendered, width=300).print(
        rich.traceback.Traceback.from_exception(type(exc), exc, exc.__traceback__, show_locals=True)
    )
    text = "".join(traceback.format_exception(exc)) + str(exc) + repr(exc) + repr(api) + rendered.getvalue()
    assert TOKEN not in text
    assert SECRET not in text
    # httpx's error carries the request and its URL: it must not ride along.
    assert exc.__cause__ is None
    assert exc.__context__ is None


def refused(kind: type[E], api: BotApi, call: Callable[[], object]) -> E:
    with pytest.raises(kind) as info:
        call()
    assert_hidden(info.value, api)
    return info.value


# --- what goes out ------------------------------------------------------------------------------------


def test_send_message_with_a_keyboard(tg: FakeTelegram, api: BotApi) -> None:
    keyboard = [[Button("Approve", "a:1"), Button("Reject", "r:1")], [Button("Snooze 1 h", "s:1:3600")]]
    first = api.send_message("42", "deploy to prod?", keyboard)
    second = api.send_message("43", "disk full")
    assert (first, second) == (1, 2)
    assert tg.messages("42") == [
        {
            "chat_id": "42",
            "text": "deploy to prod?",
            "reply_markup": {
                "inline_keyboard": [
                    [{"text": "Approve", "callback_data": "a:1"}, {"text": "Reject", "callback_data": "r:1"}],
                    [{"text": "Snooze 1 h", "callback_data": "s:1:3600"}],
                ]
            },
        }
    ]
    assert tg.messages("43") == [{"chat_id": "43", "text": "disk full"}]  # no keyboard, no reply_markup
    # The token travels in the path, which is why it must be kept out of everything else.
    assert tg.requests_log == [f"/bot{TOKEN}/sendMessage"] * 2


def test_callback_data_is_at_most_64_bytes() -> None:
    Button("ok", "x" * 64)
    with pytest.raises(ValueError, match="1 to 64 bytes"):
        Button("too long", "x" * 65)
    with pytest.raises(ValueError, match="1 to 64 bytes"):
        Button("multibyte", "é" * 33)  # 33 characters, 66 bytes
    with pytest.raises(ValueError, match="1 to 64 bytes"):
        Button("empty", "")


@dataclass(frozen=True)
class OtherButton:
    """A button type of another module: the client takes any with text and data, and checks it."""

    text: str
    data: str


def test_any_button_type_is_taken_and_checked(tg: FakeTelegram, api: BotApi) -> None:
    api.send_message("42", "deploy?", [[OtherButton("Approve", "a:1")]])
    assert tg.messages()[0]["reply_markup"] == {"inline_keyboard": [[{"text": "Approve", "callback_data": "a:1"}]]}
    with pytest.raises(ValueError, match="1 to 64 bytes"):
        api.send_message("42", "deploy?", [[OtherButton("Approve", "a" * 65)]])
    assert len(tg.messages()) == 1  # refused before it travelled


def test_edit_replaces_the_text_and_removes_the_keyboard(tg: FakeTelegram, api: BotApi) -> None:
    message_id = api.send_message("42", "deploy to prod?", [[Button("Approve", "a:1")]])
    api.edit_message_text("42", message_id, "approved by Ann")
    assert tg.current(message_id) == {"chat_id": "42", "text": "approved by Ann", "reply_markup": None}
    api.edit_message_text("42", message_id, "approved by Ann", [[Button("Undo", "u:1")]])
    assert tg.current(message_id)["reply_markup"] == {"inline_keyboard": [[{"text": "Undo", "callback_data": "u:1"}]]}


def test_an_edit_that_changes_nothing_succeeds(tg: FakeTelegram, api: BotApi) -> None:
    message_id = api.send_message("42", "approved by Ann")
    api.edit_message_text("42", message_id, "approved by Ann")  # a retried edit
    # Telegram did refuse it: the client took "not modified" for success.
    assert [(c.method, c.ok) for c in tg.sent] == [("sendMessage", True), ("editMessageText", False)]
    assert tg.edits() == []


def test_editing_an_unknown_message_is_rejected(api: BotApi) -> None:
    exc = refused(TelegramRejected, api, lambda: api.edit_message_text("42", 999, "hello"))
    assert "message to edit not found" in str(exc)


def test_answer_a_button_press(tg: FakeTelegram, api: BotApi) -> None:
    message_id = api.send_message("42", "deploy?", [[Button("Approve", "a:1")]])
    query_id = tg.press(message_id, "a:1", from_id=7)
    api.answer_callback_query(query_id, "approved", alert=True)
    api.answer_callback_query(query_id)
    assert tg.answers() == [
        {"callback_query_id": query_id, "text": "approved", "show_alert": True},
        {"callback_query_id": query_id, "show_alert": False},
    ]
    exc = refused(TelegramRejected, api, lambda: api.answer_callback_query("no-such-query"))
    assert "query ID is invalid" in str(exc)


def test_webhook_and_get_me(tg: FakeTelegram, api: BotApi) -> None:
    assert api.get_me()["username"] == "memsync_test_bot"
    api.set_webhook("https://hub.example/telegram", "s3cret-header")
    assert tg.webhook() == {
        "url": "https://hub.example/telegram",
        "secret_token": "s3cret-header",
        "allowed_updates": ["callback_query"],
    }
    # While a webhook receives the updates, getUpdates is a conflict, as on Telegram.
    exc = refused(TelegramConflict, api, lambda: api.get_updates(None, timeout_s=0))
    assert "webhook" in str(exc)
    api.delete_webhook()
    assert tg.webhook() is None
    assert api.get_updates(None, timeout_s=0) == []


# --- what comes in ------------------------------------------------------------------------------------


def test_get_updates_honours_the_offset(tg: FakeTelegram, api: BotApi) -> None:
    message_id = api.send_message("42", "deploy?", [[Button("Approve", "a:1")]])
    ids = [tg.push_update({"message": {"text": "hi"}}), tg.press(message_id, "a:1", from_id=7, first_name="Bo")]
    assert ids[0] == 1
    updates = api.get_updates(None, timeout_s=0)
    assert [u["update_id"] for u in updates] == [2]  # only callback queries were asked for
    query = updates[0]["callback_query"]
    assert (query["id"], query["data"], query["from"]["id"], query["from"]["first_name"]) == (ids[1], "a:1", 7, "Bo")
    assert query["message"]["message_id"] == message_id
    assert query["message"]["chat"]["id"] == 42
    # Asked again without an offset, the same update comes back: nothing was confirmed.
    assert [u["update_id"] for u in api.get_updates(None, timeout_s=0)] == [2]
    assert api.get_updates(3, timeout_s=0) == []
    tg.press(message_id, "a:1", from_id=8)
    assert [u["update_id"] for u in api.get_updates(None, timeout_s=0)] == [3]  # 1 and 2 were confirmed by offset 3


def test_a_long_poll_returns_as_soon_as_an_update_arrives(tg: FakeTelegram, api: BotApi) -> None:
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(api.get_updates, None, 60)
        tg.wait_for_poll()
        tg.push_update({"callback_query": {"id": "q1", "data": "a:1"}})
        updates = pending.result(timeout=10)  # far less than the poll's 60 s
    assert [u["callback_query"]["id"] for u in updates] == ["q1"]


def test_a_long_poll_outlasts_the_clients_timeout(tg: FakeTelegram) -> None:
    # The read timeout of a poll is its own timeout + 10 s, not the client's: an empty poll is no error.
    with BotApi(TOKEN, tg.api_base, timeout=0.3) as api:
        assert api.get_updates(None, timeout_s=1) == []


def test_a_second_poller_is_a_conflict(tg: FakeTelegram, api: BotApi) -> None:
    with ThreadPoolExecutor(1) as pool, BotApi(TOKEN, tg.api_base) as other:
        pending = pool.submit(api.get_updates, None, 60)
        tg.wait_for_poll()
        exc = refused(TelegramConflict, other, lambda: other.get_updates(None, timeout_s=0))
        assert "another getUpdates poller" in str(exc)
        tg.push_update({"callback_query": {"id": "q1", "data": "a:1"}})
        assert len(pending.result(timeout=10)) == 1  # the first poller was not disturbed


# --- failures -----------------------------------------------------------------------------------------


def test_429_is_transient_with_telegrams_retry_after(tg: FakeTelegram, api: BotApi) -> None:
    tg.fail_next(1, status=429, retry_after=3)
    exc = refused(TelegramUnavailable, api, lambda: api.send_message("42", "hello"))
    assert exc.retry_after == 3.0
    assert "Too Many Requests" in str(exc)
    # Without parameters.retry_after, the Retry-After header decides.
    tg.fail_next(1, status=429, header="7")
    assert refused(TelegramUnavailable, api, lambda: api.send_message("42", "hello")).retry_after == 7.0
    assert api.send_message("42", "hello") == 1  # nothing was sent while it failed


def test_a_retry_after_date_is_counted_from_the_clients_clock(tg: FakeTelegram) -> None:
    """A Retry-After header given as an HTTP date is the seconds from the client's clock (an
    argument, as every clock is) to that date."""
    now = 1_800_000_000.0  # Fri, 15 Jan 2027 08:00:00 GMT
    with BotApi(TOKEN, tg.api_base, timeout=5.0, clock=lambda: now) as api:
        tg.fail_next(1, status=429, header="Fri, 15 Jan 2027 08:01:30 GMT")
        assert refused(TelegramUnavailable, api, lambda: api.send_message("42", "hello")).retry_after == 90.0
        assert api.send_message("42", "hello") == 1  # nothing was sent while it failed


def test_5xx_is_transient(tg: FakeTelegram, api: BotApi) -> None:
    tg.fail_next(1, status=502)
    exc = refused(TelegramUnavailable, api, lambda: api.send_message("42", "hello"))
    assert exc.retry_after is None
    assert "HTTP 502" in str(exc)
    tg.fail_next(1, status=502, html=True)  # a proxy's error page, not the Bot API's JSON
    assert "HTTP 502" in str(refused(TelegramUnavailable, api, api.get_me))
    tg.fail_next(1, status=503, header="2")
    assert refused(TelegramUnavailable, api, api.get_me).retry_after == 2.0


def test_no_answer_is_transient(tg: FakeTelegram, api: BotApi) -> None:
    tg.down()
    exc = refused(TelegramUnavailable, api, lambda: api.send_message("42", "hello"))
    assert tg.api_base in str(exc)
    tg.up()
    assert api.send_message("42", "hello") == 1
    with BotApi(TOKEN, closed_url()) as nowhere:
        refused(TelegramUnavailable, nowhere, nowhere.get_me)


def test_a_server_that_never_answers_times_out() -> None:
    with socket.socket() as listener:  # listens, never accepts: the request is sent, no answer comes
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        with BotApi(TOKEN, f"http://127.0.0.1:{listener.getsockname()[1]}", timeout=0.3) as api:
            exc = refused(TelegramUnavailable, api, api.get_me)
    assert "(timed out)" in str(exc)


def test_a_wrong_token_is_an_auth_error(tg: FakeTelegram) -> None:
    wrong = "7000001:AAF-another-token-98765432109876"
    with BotApi(wrong, tg.api_base) as api:
        for call in (api.get_me, lambda: api.send_message("42", "hello")):
            with pytest.raises(TelegramAuthError) as info:
                call()
            assert "MEMSYNC_TELEGRAM__BOT_TOKEN" in str(info.value)
            assert wrong not in "".join(traceback.format_exception(info.value)) + repr(api)
    assert tg.sent == []


def test_401_is_an_auth_error_and_403_is_not(tg: FakeTelegram, api: BotApi) -> None:
    tg.fail_next(1, status=401)
    assert "MEMSYNC_TELEGRAM__BOT_TOKEN" in str(refused(TelegramAuthError, api, api.get_me))
    # 403 is about a chat (the person blocked the bot), not about the token: one message fails, not the daemon.
    tg.fail_next(1, status=403)
    exc = refused(TelegramRejected, api, lambda: api.send_message("42", "hello"))
    assert "bot was blocked by the user" in str(exc)


def test_400_is_rejected_with_telegrams_description(tg: FakeTelegram, api: BotApi) -> None:
    tg.fail_next(1, status=400, description="Bad Request: chat not found")
    exc = refused(TelegramRejected, api, lambda: api.send_message("-100", "hello"))
    assert "Bad Request: chat not found" in str(exc)


def test_a_malformed_token_or_address_is_refused_before_any_request() -> None:
    with pytest.raises(TelegramAuthError, match="MEMSYNC_TELEGRAM__BOT_TOKEN") as info:
        BotApi(TOKEN + "\n")
    assert SECRET not in str(info.value)
    with pytest.raises(ConfigError, match="http"):
        BotApi(TOKEN, "api.telegram.org")


# --- the token stays secret -----------------------------------------------------------------------------


def test_redact() -> None:
    line = f"POST http://127.0.0.1/bot{TOKEN}/getMe and bot7000001%3A{SECRET} and {SECRET}"
    assert redact(line, TOKEN) == "POST http://127.0.0.1/bot[redacted]/getMe and bot[redacted] and [redacted]"
    assert redact("Too Many Requests", "1:ABC") == "Too Many Requests"
    assert TOKEN not in repr(BotApi(TOKEN))
