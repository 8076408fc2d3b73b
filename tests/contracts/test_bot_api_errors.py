"""How the hub takes a Bot API answer (contracts/bot_api_errors.json): the client's classification
as the outbox's sender acts on it (retry when told, back off, hold everything, give the message
up), as Convex's callBotApi and deliver take the same answers. The answers come through httpx's
transport, the lowest seam."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from contract import contract

from daemon.telegram.client import BotApi
from sync.errors import TelegramAuthError, TelegramConflict, TelegramRejected, TelegramUnavailable

CASES: list[dict[str, Any]] = contract("bot_api_errors.json")["cases"]
TOKEN = "7000001:AAF-fake_SECRET-0123456789abcdefXYZ"


def answering(case: dict[str, Any]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        if case["status"] is None:
            raise httpx.ConnectError("connection refused", request=request)
        body = case["body"]
        content = body if isinstance(body, str) else json.dumps(body)
        return httpx.Response(case["status"], content=content.encode())

    return httpx.MockTransport(handle)


def verdict(case: dict[str, Any]) -> tuple[str, int | None]:
    """What daemon/telegram/sender.py does with the answer: its verdict, and how long it waits."""
    with BotApi(TOKEN, "https://bot.invalid", transport=answering(case)) as bot:
        try:
            bot.send_message("-100", "hello")
        except TelegramUnavailable as exc:
            if exc.retry_after is None:
                return "transient", None
            return "retry", int(exc.retry_after * 1000)
        except TelegramAuthError:
            return "hold", None
        except (TelegramRejected, TelegramConflict):
            return "give_up", None
    return "ok", None


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_the_hub_takes_an_answer_as_the_contract_says(case: dict[str, Any]) -> None:
    assert verdict(case) == (case["verdict"], case.get("after_ms"))


def test_the_contract_covers_every_verdict() -> None:
    assert {c["verdict"] for c in CASES} == {"ok", "retry", "transient", "hold", "give_up"}
