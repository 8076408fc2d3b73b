"""``memsync retag ID``: correct a saved memory's type or tags (``daemon.usecases.memory.retag``);
the daemon pushes the correction like any edit, and every site sees it."""

from __future__ import annotations

import argparse
import getpass
import json
import socket
import sys
import time

from daemon.cli.common import EX_USAGE, Commands, add_config, add_json, fail, handled, load, say
from sync.source.type_names import MEMORY_TYPES

EXIT_UNKNOWN = 64  # as `memsync pin`: an id that names no memory here


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "retag",
        help="correct a saved memory's type or tags (every site sees the correction)",
        description="Correct the type or the tags of a memory saved on this site (`memsync remember`, the MCP "
        "save_memory: ids m<n>). The journal's row is corrected in place, with a record of the correction in its "
        "metadata, and the daemon pushes it as an edit: every site's search then sees the new type and tags. "
        "--tag gives the memory's tags (they replace the old ones; its project: tags stay). A memory saved on "
        "another site is corrected there; an agent's own episode (its AgentDB file) cannot be.",
    )
    add_config(parser)
    add_json(parser)
    parser.add_argument("memory", metavar="ID", help="the memory: m<n>, or SITE:ID / SITE#ID as search shows it")
    parser.add_argument("--type", dest="memory_type", choices=MEMORY_TYPES, help="its type")
    parser.add_argument(
        "--tag", dest="tags", action="append", metavar="TAG", help="a tag (repeatable): the memory's tags become these"
    )
    parser.add_argument("--no-tags", action="store_true", help="remove its tags (but its project: tags)")
    parser.add_argument("--by", help="who corrects it (default: USER@HOST)")
    parser.set_defaults(run=main)


def main(args: argparse.Namespace) -> int:
    from daemon.usecases.memory.retag import retag

    with handled():
        if args.no_tags and args.tags:
            fail("retag: give --tag or --no-tags, not both", EX_USAGE)
        tags = [] if args.no_tags else args.tags
        if args.memory_type is None and tags is None:
            fail("retag: nothing to correct: give --type, --tag or --no-tags", EX_USAGE)
        settings = load(args, log_level="error")
        by = args.by or f"{getpass.getuser()}@{socket.gethostname()}"
        try:
            done = retag(settings, args.memory, memory_type=args.memory_type, tags=tags, by=by, clock=time.time)
        except ValueError as exc:
            fail(f"retag: {exc}", EX_USAGE)
        except LookupError as exc:
            fail(f"retag: {exc}", EXIT_UNKNOWN)
    if args.as_json:
        out = {
            "id": f"{done.key[0]}:{done.key[1]}",
            "memoryType": done.memory_type,
            "tags": list(done.tags),
            "was": {"memoryType": done.was_type, "tags": list(done.was_tags)},
            "changed": done.changed,
            "message": done.message,
        }
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
    else:
        say(done.message)
    return 0
