"""The daily digest's text (daemon/alerts/messages.py's digest_message), word for word, from
contracts/digest_messages.json, which cloud_functions/digestMessage.test.ts runs against
lib/digestMessage.ts too."""

from __future__ import annotations

from typing import Any

import pytest
from contract import contract

from daemon.alerts.messages import digest_message

GOLDEN = contract("digest_messages.json")


@pytest.mark.parametrize("case", GOLDEN["cases"], ids=lambda c: c["why"])
def test_the_digest_reads_as_the_golden_text(case: dict[str, Any]) -> None:
    message = digest_message(case["digest"])
    assert message.text == case["text"]
    assert not message.buttons
