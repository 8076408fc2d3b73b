"""``memsync demo``: two sites, two live agents, one hub."""

from __future__ import annotations

import argparse
from pathlib import Path

from daemon.cli.common import Commands, console, handled


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "demo",
        help="two sites, two live agents, one hub: watch them sync",
        description="Two sites, two live agents, one embedded hub: watch them sync, then search.",
    )
    parser.add_argument("--duration", type=float, default=20.0, metavar="S", help="seconds the agents write")
    parser.add_argument("--dir", dest="directory", type=Path, metavar="DIR", help="keep the demo's files here")
    parser.add_argument("--rate", type=float, default=5.0, metavar="N", help="episodes a second each agent writes")
    parser.set_defaults(run=main)


def main(args: argparse.Namespace) -> int:
    from daemon import logs
    from daemon.demo.run import run_demo

    with handled():
        logs.configure("warning", "console")
        return run_demo(duration=args.duration, directory=args.directory, rate=args.rate, console=console())
