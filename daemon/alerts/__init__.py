"""Alerts: the pure state machine (``machine``), what is watched (``signals``), when a message may
go (``quiet``), what it says (``messages``), and where it waits to be sent (``store``)."""
