"""The one HTTP policy (``sync.http``), from tables."""

from __future__ import annotations

import pytest

from sync.http import Verdict, classify, retry_after

NOW = 1_764_000_000.0  # 2025-11-24T16:00:00Z


@pytest.mark.parametrize(
    ("status", "verdict"),
    [
        (None, Verdict.TRANSIENT),
        (408, Verdict.TRANSIENT),
        (429, Verdict.TRANSIENT),
        (500, Verdict.TRANSIENT),
        (503, Verdict.TRANSIENT),
        (401, Verdict.AUTH),
        (403, Verdict.AUTH),
        (400, Verdict.PERMANENT),
        (404, Verdict.PERMANENT),
        (413, Verdict.PERMANENT),
        (422, Verdict.PERMANENT),
    ],
)
def test_statuses(status: int | None, verdict: Verdict) -> None:
    assert classify(status) is verdict


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        (None, None),
        ("", None),
        ("7", 7.0),
        (" 2.5 ", 2.5),
        ("-3", 0.0),
        ("inf", None),
        ("nan", None),
        ("soon", None),
        ("Mon, 24 Nov 2025 16:00:30 GMT", 30.0),
        ("Mon, 24 Nov 2025 15:00:00 GMT", 0.0),
    ],
)
def test_retry_after(header: str | None, seconds: float | None) -> None:
    assert retry_after(header, NOW) == seconds
