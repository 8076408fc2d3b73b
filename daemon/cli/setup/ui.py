"""``memsync ui``: the web viewer (``daemon.viewer``) on 127.0.0.1, with a one-time login link."""

from __future__ import annotations

import argparse

from daemon.cli.common import EX_USAGE, Commands, add_config, fail, handled, load


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "ui",
        help="a web viewer of the memory, the fleet, approvals and the digest (127.0.0.1, a login link)",
        description="Serve the web viewer on 127.0.0.1: search the memory and read, or forget, a memory; the fleet "
        "live; approvals to decide (as the collaborator ui.user) and tasks; the digest. Prints a login link that "
        "works once; the browser then holds a session cookie. Searches go through the running daemon.",
    )
    add_config(parser)
    parser.add_argument("--port", type=int, metavar="N", help="the port (default: ui.port, 8766; 0: any free one)")
    parser.set_defaults(run=main)


def main(args: argparse.Namespace) -> int:
    from daemon.viewer.serve import serve

    with handled():
        settings = load(args, log_level="warning")
        port = settings.ui.port if args.port is None else args.port
        if not 0 <= port <= 65535:
            fail(f"--port {port}: use 0-65535", EX_USAGE)
        try:
            serve(settings, port)
        except KeyboardInterrupt:
            return 0
    return 0
