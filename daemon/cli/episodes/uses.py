"""``memsync pin ID``, ``memsync unpin ID`` and ``memsync uses [ID...]``: the fleet's use of its
memories, and the pins that keep one from ever decaying (``daemon.usecases.memory.uses``).

A memory is named as search results show it, ``SITE#ID`` (or ``SITE:ID``). ``uses`` with no ID
lists the fleet's most salient memories: how often they were handed to agents or opened by them,
when last, and their salience now (``sync.policy.salience``). An ID that names no memory exits 64.
"""

from __future__ import annotations

import argparse
import getpass
import json
import socket
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from daemon.cli.common import EX_USAGE, Commands, add_config, add_json, console, fail, handled, load, say

if TYPE_CHECKING:
    from daemon.usecases.memory.pins import MemoryUse

EXIT_UNKNOWN = 64  # sysexits' EX_USAGE: an id that names no memory (as `memsync tasks show`)


def register(commands: Commands) -> None:
    for name, pinned in (("pin", True), ("unpin", False)):
        verb = commands.add_parser(
            name,
            help="pin a memory so that its salience never decays" if pinned else "let a pinned memory decay again",
            description="Pin a memory (any site's) so that ranking always treats it as most salient; `unpin` "
            "lets it follow its use again. Name it as search results show it: SITE#ID or SITE:ID.",
        )
        add_config(verb)
        add_json(verb)
        verb.add_argument("memory", metavar="ID", help="the memory, SITE#ID or SITE:ID")
        verb.add_argument("--by", help="who pins it (default: USER@HOST)")
        verb.set_defaults(run=pin_main, pinned=pinned)
    uses = commands.add_parser(
        "uses",
        help="how the fleet's agents used memories, and their salience",
        description="How often memories were handed to agents (context hook, search_memory, search) or opened "
        "by them (get_episode, related), when last, whether pinned, and their salience now. With no ID, the "
        "fleet's most salient memories.",
    )
    add_config(uses)
    add_json(uses)
    uses.add_argument("memories", nargs="*", metavar="ID", help="memories to show, SITE#ID or SITE:ID")
    uses.add_argument("-n", "--limit", type=int, default=20, metavar="N", help="memories listed (default: 20)")
    uses.set_defaults(run=uses_main)


def _at(ms: int | None) -> str:
    return "never" if ms is None else datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")


def view(use: MemoryUse) -> dict[str, Any]:
    totals = use.totals
    return {
        "sourceSite": use.key[0],
        "sourceId": use.key[1],
        "salience": round(use.salience, 4),
        "accessCount": 0 if totals is None else totals.access_count,
        "lastAccessed": None if totals is None else totals.last_accessed,
        "byKind": {} if totals is None else dict(totals.by_kind),
        "pinned": bool(totals and totals.pinned),
        "pinnedBy": None if totals is None else totals.pinned_by,
    }


def _line(use: MemoryUse) -> str:
    totals = use.totals
    kinds = ", ".join(f"{k} {n}" for k, n in sorted((totals.by_kind if totals else {}).items()))
    pin = f", pinned by {totals.pinned_by}" if totals is not None and totals.pinned else ""
    count = 0 if totals is None else totals.access_count
    last = _at(None if totals is None else totals.last_accessed)
    used = f"used {count}x ({kinds or 'never'}), last {last}"
    return f"{use.key[0]}#{use.key[1]}: salience {use.salience:.2f}, {used}{pin}"


def pin_main(args: argparse.Namespace) -> int:
    from daemon.usecases.memory.pins import pin
    from daemon.usecases.memory.uses import key_of

    with handled():
        try:
            key = key_of(args.memory)
        except ValueError as exc:
            fail(f"{'pin' if args.pinned else 'unpin'}: {exc}", EX_USAGE)
        settings = load(args, log_level="error")
        by = args.by or f"{getpass.getuser()}@{socket.gethostname()}"
        try:
            use = pin(settings, key, pinned=args.pinned, by=by)
        except LookupError as exc:
            fail(str(exc), EXIT_UNKNOWN)
    if args.as_json:
        sys.stdout.write(json.dumps(view(use), indent=2) + "\n")
    else:
        say(("pinned " if args.pinned else "unpinned ") + _line(use))
    return 0


def uses_main(args: argparse.Namespace) -> int:
    from daemon.usecases.memory.pins import used
    from daemon.usecases.memory.uses import key_of

    with handled():
        try:
            keys = [key_of(m) for m in args.memories] or None
        except ValueError as exc:
            fail(f"uses: {exc}", EX_USAGE)
        if args.limit < 1:
            fail(f"uses: --limit must be at least 1, got {args.limit}", EX_USAGE)
        settings = load(args, log_level="error")
        found = used(settings, keys, top=args.limit)
    if args.as_json:
        sys.stdout.write(json.dumps([view(u) for u in found], indent=2) + "\n")
        return 0
    if not found:
        say("no memory has been used or pinned yet")
        return 0
    out = console()
    for use in found:
        out.print(_line(use), markup=False, highlight=False)
    return 0
