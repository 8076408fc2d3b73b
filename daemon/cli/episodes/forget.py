"""``memsync forget``: take episodes back for good, by key (``SITE:ID``, several at once) or by a
text that must go (``--matching TEXT``: what it finds, hot or archived, is listed, and confirmed
unless ``--yes``). The work is ``daemon.usecases.memory.forget``'s; this module asks, and says where each
episode was removed and which sites' indexes have yet to catch up.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any

from daemon.cli.common import EX_USAGE, Commands, add_config, add_json, fail, handled, load, say
from daemon.usecases.memory.forget import MIN_MATCHING, report_lines
from sync.errors import EX_CONFIG

if TYPE_CHECKING:
    from daemon.usecases.memory.forget import ForgetReport, IndexReach, Match


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "forget",
        help="delete episodes for good: by SITE:ID, or every one holding --matching TEXT",
        description="Delete episodes from the backbone for good (a tombstone keeps their keys refused) and "
        "from every site's search index. Give keys (SITE:ID ...) or --matching TEXT (what it finds is listed "
        "and confirmed; --yes for scripts).",
    )
    add_config(parser)
    parser.add_argument("keys", nargs="*", metavar="SITE:ID", help="the episodes to forget")
    parser.add_argument("--matching", metavar="TEXT", help="forget every episode whose text holds TEXT")
    parser.add_argument("--yes", action="store_true", help="do not ask before forgetting what --matching found")
    parser.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="how long to wait for this site's search index to purge them (default 60)",
    )
    add_json(parser)
    parser.set_defaults(run=main)


def main(args: argparse.Namespace) -> int:
    from daemon.duties import OperatorRefused
    from daemon.site import NeverSynced, duties_of, opened_backbone
    from daemon.usecases.memory.forget import forget, matching, parse_keys

    if not args.keys and not args.matching:
        fail("give SITE:ID keys or --matching TEXT", EX_USAGE)
    if args.matching is not None and len(args.matching) < MIN_MATCHING:
        fail(f"--matching needs at least {MIN_MATCHING} characters (a shorter text matches too much)", EX_USAGE)
    try:
        keys = parse_keys(args.keys)
    except ValueError as exc:
        fail(str(exc), EX_USAGE)
    with handled():
        settings = load(args, log_level="error")
        try:
            # A writer: it brings an older hub to the current schema.
            with opened_backbone(settings, existing=True) as backbone:
                if args.matching is not None:
                    keys += _confirmed(matching(backbone, args.matching), args.matching, ask=not args.yes)
                report = forget(
                    settings,
                    backbone,
                    duties_of(settings, backbone),
                    keys,
                    text=args.matching,
                    purge_timeout=args.timeout,
                    now=time.time(),
                )
        except NeverSynced as exc:
            fail(f"the hub {exc.hub} does not exist yet: nothing has been synced, so nothing to forget", 1)
        except OperatorRefused as exc:
            fail(str(exc), EX_CONFIG)
    return _report(args, report)


def _confirmed(found: list[Match], text: str, *, ask: bool) -> list[tuple[str, str]]:
    """What ``--matching`` found, listed on stderr and confirmed (unless ``ask`` is False)."""
    if not found:
        say(f"no episode holds {text!r}")
        return []
    for match in found:
        sys.stderr.write(f"  {match.site}:{match.source_id}  {match.task[:70]}\n")
    these = "this episode" if len(found) == 1 else f"these {len(found)} episodes"
    if ask and not _confirm(f"forget {these} for good?"):
        fail("nothing forgotten", 1)
    return [match.key for match in found]


def _confirm(question: str) -> bool:
    if not sys.stdin.isatty():
        fail(f"{question} Not asked: stdin is not a terminal. Add --yes to forget without asking", EX_USAGE)
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def _index_json(index: IndexReach) -> dict[str, Any]:
    shown: dict[str, Any] = {"site": index.site, "running": index.running}
    if index.purged is not None:
        shown["purged"] = index.purged
    if index.problem is not None:
        shown["problem"] = index.problem
    return shown


def as_json(report: ForgetReport) -> dict[str, Any]:
    """``forget --json``'s document."""
    return {
        "forgotten": [{"key": k.key, "archiveWeek": k.archive_week} for k in report.forgotten],
        "unknown": [{"key": k.key, "archiveWeek": k.archive_week} for k in report.unknown],
        "refused": [{"key": key} for key in report.refused],
        "wal": [] if report.wal_left is None else [{"file": report.wal_left}],
        "elsewhere": [{"file": e.file, "rows": e.rows} for e in report.elsewhere],
        "indexes": [_index_json(index) for index in report.indexes],
    }


def _report(args: argparse.Namespace, report: ForgetReport) -> int:
    import json

    if args.as_json:
        sys.stdout.write(json.dumps(as_json(report)) + "\n")
    for line in report_lines(report, args.timeout):
        say(line)
    return 0 if report.complete else 1
