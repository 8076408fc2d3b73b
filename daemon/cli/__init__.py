"""The ``memsync`` command. This module stays light: what agents' hooks call on every prompt or
episode, ``memsync search``, ``context``, ``sync [--wait]`` and ``heartbeat`` with a daemon
running, is answered without importing the rest of the CLI (``fast_search``, ``fast_context``,
``fast_sync``, ``fast_heartbeat``); every other command, and anything the light paths cannot
answer, goes to the full parser (``daemon.cli.app``), one module per command.

The light paths' commands live here with what every command shares (``common``, ``locate``,
``oneshot``); the others in rooms by concept: ``episodes`` (export, forget, archive, adopt,
quarantine), ``fleet`` (status, agents, jobs, approvals, tasks, collaborators) and ``setup`` (run,
service, hooks, capture, mcp, telegram, demo, docs). What a command does is its use case's
(``daemon.usecases``); a command module parses, calls, renders and maps errors to exit codes."""

from __future__ import annotations

import sys


def main() -> None:
    from daemon.modes import private_by_default

    private_by_default()  # before anything is created: every file and folder is this user's only
    argv = sys.argv[1:]
    code: int | None = None
    if argv[:1] == ["search"]:
        from daemon.cli.search import fast_search

        code = fast_search(argv[1:])
    elif argv[:1] == ["sync"]:
        from daemon.cli.sync import fast_sync

        code = fast_sync(argv[1:])
    elif argv[:1] == ["context"]:
        from daemon.cli.context import fast_context

        code = fast_context(argv[1:])
    elif argv[:1] == ["heartbeat"]:
        from daemon.cli.heartbeat import fast_heartbeat

        code = fast_heartbeat(argv[1:])
    if code is not None:
        sys.exit(code)
    from daemon.cli.app import run_app

    run_app(argv)


__all__ = ["main"]
