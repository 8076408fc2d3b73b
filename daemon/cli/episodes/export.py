"""``memsync export``: the backbone's episodes as JSON lines (``daemon.usecases.memory.export``);
``--archived`` adds those the cleanup job moved to the cold archive; ``--since`` and ``--limit``
cut it down."""

from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import closing

from daemon.cli.common import EX_USAGE, Commands, add_config, add_types, fail, handled, load


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "export",
        help="the backbone's episodes as JSON lines on stdout",
        description="The backbone's episodes as JSON lines on stdout, oldest first, in the backbone's "
        "camelCase fields (the same names `search --json` uses).",
    )
    add_config(parser)
    parser.add_argument("--site", metavar="SITE", help="only this site's episodes (default: every site)")
    parser.add_argument(
        "--archived",
        action="store_true",
        help="also the archived episodes, read from the cold archive, with archived: true (after the hot ones)",
    )
    parser.add_argument(
        "--since", metavar="WHEN", help="only episodes since (by their ts): 7d, 12h, 30m, or an ISO date/time"
    )
    parser.add_argument("--limit", metavar="N", type=_count, help="at most N episodes (the first N, oldest first)")
    add_types(parser)
    parser.set_defaults(run=main)


def _count(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"{value!r} is not a count: give a whole number, 0 or more")
    return n


def main(args: argparse.Namespace) -> int:
    from daemon.site import NeverSynced
    from daemon.usecases.memory.export import export
    from sync.search.query.results_text import parse_since

    with handled():
        settings = load(args, log_level="error")
        try:
            since_ms = None if args.since is None else parse_since(args.since, time.time())
        except ValueError as exc:
            fail(str(exc), EX_USAGE)
        episodes = export(
            settings,
            site=args.site,
            since_ms=since_ms,
            archived=args.archived,
            limit=args.limit,
            types=args.types or (),
        )
        try:
            with closing(episodes):
                write = sys.stdout.write
                for episode in episodes:
                    write(json.dumps(episode, ensure_ascii=False) + "\n")
        except BrokenPipeError:  # `memsync export | head` is fine
            sys.stderr.close()
            return 0
        except NeverSynced as exc:
            fail(f"{exc} (run `memsync sync` or `memsync run` first)", 1)
        return 0
