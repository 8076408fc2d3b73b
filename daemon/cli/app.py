"""The ``memsync`` parser: one module per command (``daemon/cli/<command>.py`` for the light
paths' commands, ``daemon/cli/<room>/<command>.py`` for the others), each adding its parser and
the function that runs it.

Exit codes: 0 ok; 1 a command failed (or status: degraded); 2 status: down, or a usage error;
75 try again later (another memsync holds the site, the backbone stayed unreachable, a wait timed
out); 78 only a person can fix it (configuration, a path memsync cannot use, another source
already feeds the site); 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys

from daemon import version
from daemon.cli import context, heartbeat, search
from daemon.cli import sync as sync_command
from daemon.cli.common import Exit, os_error_exit
from daemon.cli.episodes import adopt, archive, dream, export, forget, quarantine, related, remember, retag, uses
from daemon.cli.fleet import agents, approval, collaborators, jobs, status, tasks
from daemon.cli.setup import capture, demo, docs, hooks, mcp, run, service, telegram, ui

DESCRIPTION = "Keep AI agents' AgentDB memories in step across machines."
EPILOG = (
    "Run `memsync COMMAND --help` for a command's options, and `memsync docs` for the guides and the "
    "references (commands, configuration), installed with memsync. Exit codes: 0 ok; 1 failed (status: "
    "degraded); 2 status: down, or a usage error; 75 try again later; 78 only a person can fix it (the "
    "configuration, a path, another source feeding the site); 130 interrupted."
)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="memsync",
        description=DESCRIPTION,
        epilog=EPILOG,
    )
    top.add_argument("--version", action="version", version=f"memsync {version()}")
    # `memsync docs commands` writes its reference from this parser: given, not imported (a cycle).
    top.set_defaults(memsync_parser=top)
    commands = top.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for module in (
        run,
        sync_command,
        status,
        search,
        context,
        remember,
        retag,
        export,
        related,
        forget,
        adopt,
        archive,
        quarantine,
        dream,
        uses,
        jobs,
        agents,
        heartbeat,
        hooks,
        capture,
        approval,
        tasks,
        collaborators,
        mcp,
        ui,
        telegram,
        service,
        demo,
        docs,
    ):
        module.register(commands)
    return top


def run_app(argv: list[str]) -> None:
    args = parser().parse_args(argv)
    try:
        code = int(args.run(args))
    except Exit as done:
        code = done.code
    except OSError as exc:  # a command's own handler did not know the path: still one sentence
        code = os_error_exit(exc)
    except KeyboardInterrupt:
        code = 130
    sys.exit(code)


__all__ = ["parser", "run_app", "version"]
