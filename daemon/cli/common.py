"""What every command shares: the ``-c`` option, loading settings, the consoles, and turning
memsync's errors into one sentence and the documented exit code."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TypeAlias

from sync.errors import (
    EX_CONFIG,
    EX_TEMPFAIL,
    AlreadyRunning,
    ConfigError,
    MemsyncError,
    PathProblem,
    QuotaExhausted,
    SourceConflict,
    TransientError,
)
from sync.source.type_names import MEMORY_TYPES, check_type

if TYPE_CHECKING:
    from rich.console import Console

    from daemon.config import Settings

Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


EX_USAGE = 2  # a usage error: what argparse exits with too


class Exit(Exception):
    """Leave the command with this exit code (its message, if any, has been printed)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def add_config(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-c",
        "--config",
        metavar="FILE",
        type=Path,
        default=os.environ.get("MEMSYNC_CONFIG") or None,
        help="the site's TOML config file (default: $MEMSYNC_CONFIG; else MEMSYNC_* variables only)",
    )


def add_take_over(parser: argparse.ArgumentParser) -> None:
    """``run``'s and ``sync``'s: feed the site from here even though another source fed it."""
    parser.add_argument(
        "--take-over",
        action="store_true",
        help="feed this site from here even though another machine or AgentDB file fed it until now "
        "(a replaced laptop, a restored backup)",
    )


def add_types(parser: argparse.ArgumentParser) -> None:
    """``--type``, repeatable: only memories of these types (``sync.source.types``), each checked."""
    parser.add_argument(
        "--type",
        dest="types",
        action="append",
        type=_memory_type,
        metavar="TYPE",
        help=f"only memories of this type (repeat: any of them): {', '.join(MEMORY_TYPES)}",
    )


def _memory_type(value: str) -> str:
    try:
        return check_type(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", dest="as_json", action="store_true", help="machine-readable output")


def parse_or_none(
    prog: str, add_arguments: Callable[[argparse.ArgumentParser], None], argv: Sequence[str]
) -> argparse.Namespace | None:
    """A light path's arguments, or None when anything is unusual (``--help``, a mistake): the full
    parser then answers, with its help and its messages."""
    parser = _QuietParser(prog=prog, add_help=False)
    add_arguments(parser)
    try:
        args, extra = parser.parse_known_args(argv)
    except _Unusual:
        return None
    return None if extra else args


class _Unusual(Exception):
    """A light path's arguments that only the full parser may answer."""


class _QuietParser(argparse.ArgumentParser):
    """Says nothing of a mistake: the full parser says it once, with its help."""

    def error(self, message: str) -> NoReturn:
        raise _Unusual(message)


def say(message: str) -> None:
    """One line on stderr, never wrapped: under journald or launchd a wrapped line becomes several
    entries, and a path cut in two cannot be pasted."""
    sys.stderr.write(f"memsync: {message}\n")
    sys.stderr.flush()


def fail(message: str, code: int) -> NoReturn:
    say(message)
    raise Exit(code)


def console(*, stderr: bool = False) -> Console:
    """A rich console that wraps only on a terminal."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    terminal = stream.isatty()
    return Console(file=stream, soft_wrap=not terminal, width=None if terminal else 10_000, highlight=False)


def load(args: argparse.Namespace, *, log_level: str | None = None, daemon: bool = False) -> Settings:
    """The settings, with logging set up: the configured level, or ``log_level`` for commands
    whose output is their result (status, export, search); ``daemon`` for ``run`` (JSON logs when
    not on a terminal, every level)."""
    from daemon import logs, modes
    from daemon.cli.locate import remember, stamps
    from daemon.config import load_settings

    try:
        key = stamps(args.config, os.environ)  # before reading: a file changed meanwhile makes it stale
    except (OSError, RuntimeError):
        key = None
    settings = load_settings(args.config)
    if key is not None:
        remember(settings, args.config, key, os.environ)  # for the light paths of the next hooks
    modes.follow(settings)
    logs.configure(log_level or settings.log.level, settings.log.format, command=not daemon)
    telegram = settings.telegram
    logs.register_secrets(s.get_secret_value() for s in (telegram.bot_token, telegram.webhook_secret) if s is not None)
    logs.bind(site=settings.site.name)
    return settings


def os_error_exit(exc: OSError) -> int:
    """Say an OSError that reached a command in one sentence; its exit code. One on a path is for
    a person to fix (78): the sentence names the path, the user and what to do."""
    if exc.filename is None:
        say(f"failed: {exc.strerror or exc}")
        return 1
    say(str(PathProblem.from_os_error(exc)))
    return EX_CONFIG


@contextmanager
def handled() -> Iterator[None]:
    """memsync's errors as one sentence on stderr and the documented exit code, never a traceback."""
    try:
        yield
    except OSError as exc:
        raise Exit(os_error_exit(exc)) from None
    except (PathProblem, SourceConflict) as exc:
        fail(str(exc), EX_CONFIG)
    except ConfigError as exc:
        fail(f"configuration error: {exc}", EX_CONFIG)
    except AlreadyRunning as exc:
        fail(str(exc), EX_TEMPFAIL)
    except TransientError as exc:
        fail(f"gave up for now: {exc}", EX_TEMPFAIL)
    except QuotaExhausted as exc:
        fail(f"{exc}: try again in {max(1, round(exc.retry_after / 60))} min", EX_TEMPFAIL)
    except MemsyncError as exc:
        fail(str(exc), 1)
