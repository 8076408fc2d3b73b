"""What memsync watches (daemon/alerts/signals.py): the signal table, the fleet signals, the
approval lead time and how durations read, from contracts/alert_signals.json, which
cloud_functions/alertSignals.test.ts runs against lib/alertSignals.ts too."""

from __future__ import annotations

from typing import Any

import pytest
from contract import contract

from daemon.alerts.signals import APPROVAL_LEAD_MS, FLEET_SIGNALS, SIGNALS, duration
from daemon.signal_names import SIGNAL_NAMES

TABLE = contract("alert_signals.json")


def test_the_signal_table_is_the_contract() -> None:
    assert {
        name: {
            "code": spec.code,
            "severity": spec.severity,
            "grace_ms": spec.grace_ms,
            "bad_count": spec.bad_count,
            "reminders_ms": list(spec.reminders_ms),
            "recovery": spec.recovery,
        }
        for name, spec in SIGNALS.items()
    } == TABLE["signals"]
    assert list(FLEET_SIGNALS) == TABLE["fleet_signals"]
    assert TABLE["approval_lead_ms"] == APPROVAL_LEAD_MS


def test_the_names_the_settings_accept_are_the_signal_table_s() -> None:
    assert list(SIGNAL_NAMES) == list(SIGNALS) == list(TABLE["signals"])


@pytest.mark.parametrize("case", TABLE["duration"], ids=lambda c: c["said"])
def test_durations_read_as_people_say_them(case: dict[str, Any]) -> None:
    assert duration(case["ms"]) == case["said"]
