"""``memsync adopt``: take over a Convex deployment the seed design filled (``daemon.usecases.fleet.adopt``).

``--check`` says what the deployment holds, table by table and by shape, and what a run would
change; it changes nothing. Without it the migration runs to the end, a batch at a time with
progress; interrupted (Ctrl-C, SIGTERM), running it again goes on where it stopped. ``--undo``
returns every episode to the seed's shape (and the tasks to theirs).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from daemon.cli.common import EX_USAGE, Commands, add_config, add_json, fail, handled, load, say
from daemon.duties import OPERATOR_KEY_ENV
from sync.errors import EX_CONFIG

if TYPE_CHECKING:
    from daemon.usecases.fleet.adopt import Adoption
    from sync.backbone.convex.adoption import Progress, SeedAdoption, Survey


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "adopt",
        help="take over a Convex deployment the seed design filled (--check first; --undo to roll back)",
        description="Bring the seed design's episodes (and tasks) on this site's Convex deployment to memsync's "
        "shape in place, keeping their keys, metadata and point ids: --check reports and changes nothing; "
        f"--undo returns them to the seed's shape. Needs {OPERATOR_KEY_ENV} (the deploy key) in this shell.",
    )
    add_config(parser)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="report what would change; change nothing")
    mode.add_argument("--undo", action="store_true", help="return every episode and task to the seed's shape")
    parser.add_argument(
        "--batch", type=int, default=200, metavar="N", help="documents a call (1-500; lower for very large episodes)"
    )
    add_json(parser)
    parser.set_defaults(run=main)


def main(args: argparse.Namespace) -> int:
    from daemon.duties import OperatorRefused
    from daemon.usecases.fleet.adopt import NothingToAdopt, seed_adoption
    from sync.backbone.convex.adoption import MAX_BATCH

    if not 1 <= args.batch <= MAX_BATCH:
        fail(f"--batch must be from 1 to {MAX_BATCH}, not {args.batch}", EX_USAGE)
    with handled():
        settings = load(args, log_level="error")
        try:
            with seed_adoption(settings) as adopter:
                return _run(args, adopter)
        except (NothingToAdopt, OperatorRefused) as exc:
            fail(str(exc), EX_CONFIG)


def _run(args: argparse.Namespace, adopter: SeedAdoption) -> int:
    from daemon.usecases.fleet.adopt import adopt

    before = adopter.survey()
    if args.check:
        return _report_check(args, before)
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    adoption = adopt(adopter, before, undo=args.undo, batch=args.batch, stop=stop.is_set, tick=_ticker(args))
    if not adoption.done:
        say("interrupted: run the same `memsync adopt` again; it goes on where it stopped")
        return 130
    return _report_run(args, adoption)


def _ticker(args: argparse.Namespace) -> Callable[[Progress, int], None]:
    verb = "returned" if args.undo else "adopted"

    def tick(progress: Progress, total: int) -> None:
        count = progress.undone if args.undo else progress.adopted
        if not args.as_json:
            sys.stderr.write(f"memsync: {verb} {count} of {total} episodes\n")

    return tick


def _table_lines(survey: Survey) -> list[str]:
    from sync.backbone.convex.adoption import SEED_TABLES

    lines = []
    for table in SEED_TABLES:
        shapes = survey.shapes.get(table, {})
        held = ", ".join(f"{n} {shape}" for shape, n in sorted(shapes.items())) or "empty"
        lines.append(f"{table}: {held}")
    return lines


def _report_check(args: argparse.Namespace, survey: Survey) -> int:
    from sync.backbone.convex.adoption import would_do

    changes = would_do(survey)
    if args.as_json:
        out = {"tables": survey.shapes, "wouldDo": changes, "unregistered": list(survey.unregistered)}
        sys.stdout.write(json.dumps(out) + "\n")
        return 0
    for line in _table_lines(survey):
        say(line)
    for line in changes or ["nothing to adopt: every episode already has memsync's shape"]:
        say(f"would {line}" if changes else line)
    _say_unregistered(survey)
    say("--check changed nothing")
    return 0


def _say_unregistered(survey: Survey) -> None:
    for site in survey.unregistered:
        say(
            f"site {site!r} has seed episodes but no memsync secret yet: register it before its daemon runs "
            f'(`npx convex run sites:register \'{{"name": "{site}"}}\'`)'
        )


def _report_run(args: argparse.Namespace, adoption: Adoption) -> int:
    progress, after = adoption.progress, adoption.after
    assert after is not None  # a run that ended
    if args.as_json:
        counts = {
            "adopted": progress.adopted,
            "tasksPlaced": progress.placed,
            "tasksUnplaced": progress.unplaced,
            "undone": progress.undone,
            "tasksUndone": progress.tasks_undone,
        }
        sys.stdout.write(json.dumps({"done": counts, "tables": after.shapes}) + "\n")
        return 0
    if args.undo:
        say(
            f"returned {progress.undone} episodes and {progress.tasks_undone} tasks to the seed's shape: deploy the "
            "seed's functions and schema again, then start its script and cron"
        )
        archived = after.count("episodes", "archived")
        if archived:
            say(
                f"{archived} archived episodes keep memsync's shape (their bodies are in the cold archive): restore "
                "them first (`npx convex run archive:restore`) and run `memsync adopt --undo` again"
            )
            return 1
        return 0
    say(
        f"adopted {progress.adopted} seed episodes; {progress.placed} tasks given their site"
        + (
            f", {progress.unplaced} with no site to give (no approval, no agent of one site)"
            if progress.unplaced
            else ""
        )
    )
    for line in _table_lines(after):
        say(line)
    _say_unregistered(after)
    say("start each site's daemon: its first sync finds the seed's episodes unchanged and completes them")
    return 0
