"""Quiet hours (daemon/quiet_hours.py): how a window and a zone are read or refused, and when a
message may go out, from contracts/quiet_hours.json, which cloud_functions/quietHours.test.ts runs too."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from contract import contract

from daemon.quiet_hours import parse_quiet_hours, send_after, zone

QUIET = contract("quiet_hours.json")


def _ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso).timestamp() * 1000)


@pytest.mark.parametrize("case", QUIET["parse"], ids=lambda c: repr(c["text"]))
def test_reading_a_window(case: dict[str, Any]) -> None:
    if "window" in case:
        assert parse_quiet_hours(case["text"]) == tuple(case["window"])
    else:
        with pytest.raises(ValueError, match=r".") as refused:
            parse_quiet_hours(case["text"])
        assert str(refused.value) == case["problem"]


@pytest.mark.parametrize("case", QUIET["zones"], ids=lambda c: c["zone"])
def test_reading_a_zone(case: dict[str, Any]) -> None:
    if "problem" not in case:
        assert zone(case["zone"]).key == case["zone"]
    else:
        with pytest.raises(ValueError, match=r".") as refused:
            zone(case["zone"])
        assert str(refused.value) == case["problem"]


@pytest.mark.parametrize("case", QUIET["send_after"], ids=lambda c: c["why"])
def test_when_a_message_may_go(case: dict[str, Any]) -> None:
    assert send_after(case["severity"], _ms(case["at"]), case["quiet_hours"], case["zone"]) == _ms(case["sends"])
