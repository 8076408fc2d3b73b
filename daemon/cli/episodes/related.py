"""``memsync related ID``: an episode's neighbours (the context mesh) with the reason for each link
(``daemon.usecases.memory.related``); ``--json`` as data."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from daemon.cli.common import EX_USAGE, Commands, add_config, fail, handled, load
from daemon.usecases.memory.related import DEFAULT_LIMIT, MAX_LIMIT, Related

ARROWS = {"out": "->", "in": "<-", "both": "<>"}
TASK_CHARS = 80


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "related",
        help="an episode's neighbours, with the reason for each link",
        description="An episode's neighbours in the context mesh, with the reason for each link: the "
        "memory it updates or is about, its near-duplicates (explicit links), the episodes just before "
        "and after it in its session (led_to), other tries of the same task (evolved_from), and those "
        "naming an identifier it names (mentions). The arrow says which end it is: -> it links to the "
        "other, <- the other links to it.",
    )
    add_config(parser)
    parser.add_argument("id", metavar="ID", help="the episode: SITE:ID as search shows it, or this site's ID")
    parser.add_argument(
        "--limit", metavar="N", type=_limit, default=DEFAULT_LIMIT, help=f"at most N links (1-{MAX_LIMIT})"
    )
    parser.add_argument("--json", action="store_true", help="the links as one JSON object")
    parser.set_defaults(run=main)


def _limit(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = 0
    if not 1 <= n <= MAX_LIMIT:
        raise argparse.ArgumentTypeError(f"{value!r} is not a limit: give a whole number from 1 to {MAX_LIMIT}")
    return n


def render(found: Related, out: TextIO) -> None:
    """The links as a person reads them: kind, arrow, the other end, why, and its task's first words."""
    if not found.links:
        out.write(f"{found.key}: no related memories\n")
        return
    out.write(f"{found.key}: {len(found.links)} related\n")
    width = max(len(str(link.other)) for link in found.links)
    for link in found.links:
        task = " ".join((link.task or "").split())
        task = task if len(task) <= TASK_CHARS else task[: TASK_CHARS - 1] + "…"
        line = f"  {link.kind:<12} {ARROWS[link.direction]} {link.other!s:<{width}}  {link.reason}"
        out.write(line + (f": {task}" if task else "") + "\n")


def main(args: argparse.Namespace) -> int:
    from daemon.site import NeverSynced
    from daemon.usecases.memory.related import BadKey, related

    with handled():
        settings = load(args, log_level="error")
        try:
            found = related(settings, args.id, args.limit)
        except BadKey as exc:
            fail(str(exc), EX_USAGE)
        except NeverSynced as exc:
            fail(f"{exc} (run `memsync sync` or `memsync run` first)", 1)
        if args.json:
            sys.stdout.write(json.dumps(found.to_wire(), ensure_ascii=False) + "\n")
        else:
            render(found, sys.stdout)
        return 0
