"""The names of the signals memsync watches, which ``[alerts] grace`` may name: here, not with
their table (``daemon/alerts/signals.py``), so that the settings can check a name without
importing the alerts, which take the settings. ``tests/contracts/test_alert_signals.py`` holds the two
together."""

from __future__ import annotations

from typing import Final

SIGNAL_NAMES: Final = ("silent", "offline", "quarantine", "paused", "expiring", "backbone", "agentdb")
