"""``memsync context [QUERY...] [--for claude-code|codex|gemini]``: the memories that matter for a
task or a prompt, as a block an agent's prompt can take (``daemon.usecases.memory.context``).

Without ``--for`` it prints the block for QUERY. With it, it is an agent tool's hook
(``daemon.context.hook``): the tool's JSON on stdin, the tool's JSON on stdout, and whatever
happens, exit 0 within ``--timeout`` seconds of wall time: with no daemon, a daemon that does not
answer, a config that does not validate or a stdin that is not the tool's, it prints nothing (``{}``
for Gemini) and says why in one sentence on stderr. An agent must never wait on its memory.

Both take the light path (``fast_context``): the control socket's location from the settings cache
(``daemon.cli.locate``), one ``context`` request to the daemon (which searches and composes), the
standard library and the op's wire types only; the full settings are read only when the cache
cannot answer (and then remembered).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any, Final

from daemon.cli.common import (
    EX_USAGE,
    Commands,
    add_config,
    add_json,
    add_types,
    fail,
    handled,
    load,
    parse_or_none,
    say,
)
from daemon.context.hook import TOOLS
from daemon.context.wire import BlockAsk, BlockReply
from daemon.usecases.memory.context import context_block

DEFAULT_BUDGET: Final = 4_000  # characters of the block for a query given by hand
DEFAULT_LIMIT: Final = 12  # results asked of the search: more than fit, so that folding has a choice
DEFAULT_TIMEOUT: Final = 2.0
MAX_STDIN: Final = 4 * 1024 * 1024  # a hook's JSON is small; a prompt pasted with a file may not be


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "context",
        help="the memories that matter for a task or prompt, as a block for an agent's prompt (or its hook)",
        description="Search the memory for QUERY and print the memories that match it well, whole, as one "
        "fenced block of reference data within a budget (nothing when none does). With --for TOOL it is that "
        "agent tool's SessionStart / per-prompt hook (at a start, this project's latest sessions too): its "
        "JSON on stdin, its JSON on stdout, always exit 0 within --timeout.",
    )
    add_context_arguments(parser)
    parser.set_defaults(run=main)


def add_context_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", nargs="*", help="what the task or prompt is about (not with --for: read from stdin)")
    add_config(parser)
    parser.add_argument("--for", dest="tool", choices=TOOLS, help="answer as this tool's hook (JSON in and out)")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--budget-chars", type=int, metavar="N", help=f"the block's size (default: {DEFAULT_BUDGET})")
    budget.add_argument("--budget-tokens", type=int, metavar="N", help="the block's size in tokens (4 characters each)")
    parser.add_argument(
        "-n", "--limit", type=int, default=DEFAULT_LIMIT, metavar="N", help="results to weigh (default: 12)"
    )
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS", help="give up after (default: 2)"
    )
    add_types(parser)
    add_json(parser)


class _OutOfTime(BaseException):
    """The hook's time is up (a BaseException: nothing on the way may swallow it)."""


class _Quiet(Exception):
    """The hook cannot answer; the message says why, in one sentence."""


def budget_of(args: argparse.Namespace) -> int | None:
    """The budget asked for, in characters; ValueError if it is not a positive number."""
    if args.budget_tokens is not None:
        if args.budget_tokens < 1:
            raise ValueError(f"--budget-tokens must be at least 1, got {args.budget_tokens}")
        return int(args.budget_tokens) * 4
    if args.budget_chars is not None:
        if args.budget_chars < 1:
            raise ValueError(f"--budget-chars must be at least 1, got {args.budget_chars}")
        return int(args.budget_chars)
    return None


@contextmanager
def _time_limit(seconds: float) -> Iterator[float]:
    """Raise _OutOfTime after ``seconds`` of wall time, wherever the hook is (reading stdin, loading
    settings, waiting on the socket); yields the deadline on the monotonic clock."""

    def expired(signum: int, frame: FrameType | None) -> None:
        raise _OutOfTime

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, max(0.01, seconds))
    try:
        yield time.monotonic() + seconds
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _left(deadline: float) -> float:
    return max(0.05, deadline - time.monotonic())


def _paths(config: Path | None) -> tuple[Path | None, Path]:
    """The control socket (None: the search index is off) and the state file: from the light
    paths' cache, else from the full settings (which validate, and are remembered for next time)."""
    from daemon.cli.locate import quick_paths, remember, stamps

    quick = quick_paths(config, os.environ)
    if quick is not None:
        return quick.socket, quick.state
    from daemon.config import load_settings

    try:
        key: dict[str, Any] | None = stamps(config, os.environ)
    except (OSError, RuntimeError):
        key = None
    settings = load_settings(config)
    if key is not None:
        remember(settings, config, key, os.environ)
    return (settings.socket_path if settings.warm.enabled else None), settings.state_path


def _said(reply: BlockReply) -> BlockReply:
    """The block, having said on stderr when the daemon refused the project's latest sessions."""
    if reply.recent_refused is not None:
        say(f"context: the daemon refused `recent` ({reply.recent_refused}); no latest sessions this time")
    return reply


def _tool_in(argv: Sequence[str]) -> str | None:
    """The --for value in arguments the parser refused: a hook must still answer as its tool."""
    for i, arg in enumerate(argv):
        if arg == "--for" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--for="):
            return arg.split("=", 1)[1]
    return None


def fast_context(argv: Sequence[str]) -> int | None:
    """The command on the light path; None when the full path must answer (help, a mistake by
    hand, anything to explain without ``--for``)."""
    args = parse_or_none("memsync context", add_context_arguments, argv)
    if args is None:
        tool = _tool_in(argv)
        if tool is None:
            return None
        say(f"context: arguments not understood ({' '.join(argv)}): see `memsync context --help`")
        sys.stdout.write("{}\n" if tool == "gemini" else "")
        return 0
    if args.tool is not None:
        return run_hook(args)
    from sync.errors import MemsyncError

    try:
        text, reply, project = _by_hand(args, deadline=time.monotonic() + args.timeout)
    except (ValueError, MemsyncError, OSError, _Quiet):
        return None  # the full path says what is wrong
    _show(args, text, reply, project)
    return 0


def _by_hand(args: argparse.Namespace, *, deadline: float) -> tuple[str, BlockReply, str | None]:
    query = " ".join(" ".join(args.query).split())
    if not query:
        raise ValueError("give a QUERY (what the task is about), or --for TOOL to answer a hook's stdin")
    budget = budget_of(args) or DEFAULT_BUDGET
    socket, _ = _paths(args.config)
    if socket is None:
        raise _Quiet("the search index is off (warm.enabled = false): there is nothing to search")
    from daemon.context.files import project_name

    project = project_name(os.getcwd())
    ask = BlockAsk(query, limit=args.limit, budget=budget, project=project, types=_types(args))
    return query, _said(context_block(socket, ask, deadline=deadline)), project


def _types(args: argparse.Namespace) -> tuple[str, ...]:
    return tuple(args.types or ())


def _show(args: argparse.Namespace, query: str, reply: BlockReply, project: str | None) -> None:
    if args.as_json:
        payload = {"query": query, "project": project, "ids": list(reply.ids), "block": reply.text}
        sys.stdout.write(json.dumps(payload, ensure_ascii=False) + "\n")
    elif reply.text:
        sys.stdout.write(reply.text)
    else:
        say("context: no memories for this query")


def main(args: argparse.Namespace) -> int:
    """The full path: the same, with every problem explained and its exit code."""
    from daemon.context.files import project_name
    from sync.errors import EX_TEMPFAIL, DaemonNotListening

    if args.tool is not None:
        return run_hook(args)
    query = " ".join(" ".join(args.query).split())
    with handled():
        try:
            budget = budget_of(args) or DEFAULT_BUDGET
        except ValueError as exc:
            fail(f"context: {exc}", EX_USAGE)
        if not query:
            fail("context: give a QUERY (what the task is about), or --for TOOL to answer a hook's stdin", EX_USAGE)
        settings = load(args, log_level="error")
        if not settings.warm.enabled:
            fail("context: the search index is off (warm.enabled = false): there is nothing to search", 1)
        project = project_name(os.getcwd())
        ask = BlockAsk(query, limit=args.limit, budget=budget, project=project, types=_types(args))
        try:
            reply = context_block(settings.socket_path, ask, deadline=time.monotonic() + args.timeout)
        except DaemonNotListening as exc:
            fail(f"context: {exc}: start it (memsync run, or memsync service install)", EX_TEMPFAIL)
        except ValueError as exc:
            fail(f"context: {exc}", EX_USAGE)
    _show(args, query, _said(reply), project)
    return 0


def run_hook(args: argparse.Namespace) -> int:
    """Answer the tool's hook: always exit 0, within ``args.timeout`` seconds."""
    tool: str = args.tool
    from daemon.context.hook import reply_for_error

    try:
        with _time_limit(args.timeout) as deadline:
            out = _hook_answer(args, deadline)
    except _OutOfTime:
        say(f"context: gave up after {args.timeout:g}s (the daemon did not answer in time); no memories this time")
        out = reply_for_error(tool)
    except _Quiet as exc:
        say(f"context: {exc}; no memories this time")
        out = reply_for_error(tool)
    except Exception as exc:  # noqa: BLE001 - a hook never fails its agent: one sentence, and the agent goes on
        from sync.errors import MemsyncError

        said = str(exc) if isinstance(exc, MemsyncError | ValueError | OSError) else type(exc).__name__
        say(f"context: {said}; no memories this time")
        out = reply_for_error(tool)
    sys.stdout.write(out)
    sys.stdout.flush()
    return 0


def _hook_answer(args: argparse.Namespace, deadline: float) -> str:
    from daemon.context.files import given, last_prompt, project_name, remember_given
    from daemon.context.hook import POINTER, plan, read_input, render
    from sync.errors import DaemonNotListening

    try:
        hook = read_input(args.tool, sys.stdin.read(MAX_STDIN))
        asked = budget_of(args)
    except ValueError as exc:
        raise _Quiet(str(exc)) from None
    project = project_name(hook.cwd) if hook.cwd else None
    last = None
    if hook.source == "resume" and hook.transcript_path:
        last = last_prompt(hook.transcript_path)
    decided = plan(hook, project=project, last_prompt=last, budget=asked)
    if decided.action == "skip":
        return render(hook.tool, hook.event, "")
    if decided.action == "pointer":
        return render(hook.tool, hook.event, POINTER)
    socket, state = _paths(args.config)
    if socket is None:
        raise _Quiet("the search index is off (warm.enabled = false)")
    session = hook.session_id
    exclude = given(state, hook.tool, session) if session and not decided.start else frozenset()
    ask = BlockAsk(
        decided.query,
        # More than the limit by what the session was given, so that leaving those out leaves enough.
        limit=args.limit + len(exclude),
        budget=decided.budget,
        project=project,
        types=_types(args),
        start=decided.start,
        exclude=tuple(sorted(exclude)),
        tool=hook.tool,
        event=hook.event,
    )
    try:
        reply = _said(context_block(socket, ask, deadline=deadline))
    except DaemonNotListening as exc:
        raise _Quiet(f"{exc}: start it (memsync run, or memsync service install)") from None
    if session and (decided.start or reply.ids):
        remember_given(state, hook.tool, session, reply.ids, fresh=decided.start)
    if reply.handed:
        _note_handed(state, hook.tool, reply.handed)
    return reply.out


def _note_handed(state: Path, tool: str, handed: Sequence[tuple[str, str]]) -> None:
    """Note the memories the block handed to ``tool`` in the site's use spool (one appended line;
    the daemon sends it on): a use that cannot be noted is said, never the hook's failure."""
    from daemon.usecases.memory.uses import noted

    why = noted(state, "context", list(handed), agent=tool)
    if why is not None:
        say(f"context: {why}; this use is not counted")


__all__ = ["add_context_arguments", "fast_context", "register"]
