"""``memsync remember``: save a memory into the site's journal (``daemon.usecases.memory.remember``); the
daemon pushes it like an episode of the AgentDB file, and every site's search finds it."""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from dataclasses import asdict
from pathlib import Path

from daemon.cli.common import EX_USAGE, Commands, add_config, fail, handled, load
from sync.source.type_names import MEMORY_TYPES


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "remember",
        help="save a memory (a fix, a decision, a warning...) for every site's agents",
        description="Save a memory into this site's journal: the daemon pushes it to the backbone and every "
        "site's search finds it. A memory the site already has is not saved again (its id is said); a changed "
        "value (pool_size 20 -> 30) is saved as an update of the older one.",
    )
    add_config(parser)
    parser.add_argument("content", help="what to remember ('-': read it from stdin)")
    parser.add_argument(
        "--type", dest="memory_type", choices=MEMORY_TYPES, help="the memory's type (default: inferred)"
    )
    parser.add_argument("--tag", dest="tags", action="append", default=[], metavar="TAG", help="a tag (repeatable)")
    parser.add_argument(
        "--file", dest="files", action="append", default=[], metavar="PATH", help="a related file (repeatable)"
    )
    parser.add_argument(
        "--project",
        help="the project it is about (default: the git top-level's name here, as the context hook finds it)",
    )
    parser.add_argument("--about", metavar="SITE:ID", help="the episode it belongs to")
    parser.add_argument("--session", help="the session it belongs to")
    parser.add_argument("--agent", help="who remembers it (default: [site.defaults] agent_name)")
    parser.add_argument("--json", action="store_true", help="the outcome as one JSON object")
    parser.set_defaults(run=main)


def main(args: argparse.Namespace) -> int:
    from daemon.context.files import project_name
    from daemon.usecases.memory.remember import Memory, remember

    content = sys.stdin.read() if args.content == "-" else args.content
    with handled():
        settings = load(args, log_level="error")
        memory = Memory(
            content,
            args.memory_type,
            args.tags,
            args.files,
            args.project if args.project is not None else project_name(Path.cwd()),
            args.about,
            args.session,
            args.agent,
            "cli" if args.agent is None else None,
        )
        try:
            done = remember(settings, memory, now=time.time())
        except ValueError as exc:
            fail(str(exc), EX_USAGE)
        except sqlite3.Error as exc:
            fail(f"cannot write the journal {settings.journal_path}: {exc}", 1)
    if args.json:
        print(json.dumps({**asdict(done), "message": done.message}, ensure_ascii=False))
    else:
        print(done.message)
    return 0
