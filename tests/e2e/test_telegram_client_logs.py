"""Tier: e2e. The bot token in no log line, the client run in a child process with each logging setup."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from fake_telegram import FakeTelegram
from test_telegram_client import SECRET, TOKEN

LOG_RUN = """
import logging, sys
from daemon import logs
from daemon.telegram.client import BotApi
if sys.argv[1] == "memsync":
    logs.configure("debug", "json")
else:
    logging.basicConfig(level=logging.DEBUG)
with BotApi(sys.argv[2], sys.argv[3]) as api:
    api.get_me()
"""


@pytest.fixture
def tg() -> Iterator[FakeTelegram]:
    with FakeTelegram(token=TOKEN) as fake:
        yield fake


def test_no_log_line_holds_the_token(tg: FakeTelegram) -> None:
    def stderr(setup: str) -> str:
        argv = [sys.executable, "-c", LOG_RUN, setup, TOKEN, tg.api_base]
        return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60).stderr

    # At debug level, with memsync's logging, httpcore's lines are there but no URL is.
    memsync = stderr("memsync")
    assert "send_request_headers" in memsync
    assert SECRET not in memsync
    # The check can see a leak: without memsync's logging, httpx logs the URL with the token.
    assert TOKEN in stderr("plain")
