"""The one logging setup: structlog, JSON when stderr is not a terminal (journald, launchd, files),
a console renderer when it is. Standard-library loggers (httpx, apscheduler...) go through the same
pipeline, and a redaction step masks secrets before anything is rendered.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterable
from typing import Any, Literal

import structlog
from structlog.typing import EventDict, Processor

_SECRET_KEYS = re.compile(r"(secret|token|password|api[_-]?key|authorization|deploy[_-]?key)", re.I)
_known_secrets: set[str] = set()


def register_secrets(values: Iterable[str | None]) -> None:
    """Values that must never appear in a log line, wherever they turn up."""
    _known_secrets.update(v for v in values if v and len(v) >= 6)


def redact(_: Any, __: str, event: EventDict) -> EventDict:
    for key, value in list(event.items()):
        if _SECRET_KEYS.search(key) and value is not None:
            event[key] = "[redacted]"
        elif isinstance(value, str) and _known_secrets:
            text = value
            for secret in _known_secrets:
                text = text.replace(secret, "[redacted]")
            event[key] = text
    return event


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is when a line is logged: while a progress bar is live,
    rich puts its own stream there, which prints the line above the bar instead of over it."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


def configure(level: str = "info", fmt: Literal["auto", "json", "console"] = "auto", *, command: bool = False) -> None:
    """``command``: for a command a person or a hook runs (not the daemon), whose stderr is for
    people: with ``fmt`` "auto", only warnings and errors, as text, even when piped."""
    use_json = fmt == "json" or (fmt == "auto" and not command and not sys.stderr.isatty())
    if command and fmt == "auto" and logging.getLevelName(level.upper()) < logging.WARNING:
        level = "warning"
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        redact,
    ]
    renderer: Processor
    if use_json:
        # Tracebacks as data, but without local variables: they are where secrets hide.
        shared.append(
            structlog.processors.ExceptionRenderer(structlog.tracebacks.ExceptionDictTransformer(show_locals=False))
        )
        renderer = structlog.processors.JSONRenderer()
    else:
        # Rich tracebacks, without their local variables either (a token read into a local would show).
        renderer = structlog.dev.ConsoleRenderer(
            colors=sys.stderr.isatty(), exception_formatter=structlog.dev.RichTracebackFormatter(show_locals=False)
        )
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        cache_logger_on_first_use=False,
    )
    handler = _StderrHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared, processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer]
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # httpx logs every request URL at INFO; some APIs put credentials in URLs.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    # watchfiles logs every batch of file events at INFO: the daemon says what it did instead.
    logging.getLogger("watchfiles").setLevel(logging.WARNING)
    # APScheduler logs every job it adds and runs at INFO: the scheduler logs each run's outcome instead.
    logging.getLogger("apscheduler").setLevel(logging.WARNING)


def bind(**values: Any) -> None:
    structlog.contextvars.bind_contextvars(**values)
