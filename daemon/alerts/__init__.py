"""Alerts: the pure state machine (``machine``), what is watched (``signals``), what it says
(``messages``), where it waits to be sent (``store``), and the rules the settings read (``policy``:
when a message may go, the signals' names)."""
