"""The one rule for recurring problems (a backbone being retried, a pass failing again and again):
log a problem once when it appears (or changes), and once when it ends, never once per retry or
poll. ``status`` shows the problem meanwhile, from the sidecar."""

from __future__ import annotations

from typing import Any


class ProblemLog:
    """Problems by kind, each logged once when it starts and once when it ends."""

    def __init__(self, logger: Any) -> None:
        self._log = logger
        self._current: dict[str, str] = {}

    def problem(self, kind: str, detail: str, *, quiet: bool = False, **extra: Any) -> bool:
        """Record the problem; True when it was logged (new, or different from before)."""
        if self._current.get(kind) == detail:
            return False
        self._current[kind] = detail
        (self._log.info if quiet else self._log.error)("problem", kind=kind, detail=detail, **extra)
        return True

    def recovered(self, kind: str | None = None) -> None:
        """The problem of ``kind`` (default: every one) has ended."""
        for key in [kind] if kind is not None else list(self._current):
            previous = self._current.pop(key, None)
            if previous is not None:
                self._log.info("recovered", kind=key, previous=previous)

    @property
    def current(self) -> dict[str, str]:
        return dict(self._current)
