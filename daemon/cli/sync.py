"""``memsync sync``: one pass now, for agent hooks and backfills; with ``--wait``, return only once
the file's episodes are in the backbone (and with ``--searchable``, in the search index too).

Exit codes: 0 done (quarantined rows are reported, as in status); 75 not done within ``--timeout``; 78 only a
person can fix it; 130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from daemon.cli.common import (
    Commands,
    Exit,
    add_config,
    add_take_over,
    console,
    fail,
    handled,
    load,
    parse_or_none,
    say,
)
from sync.errors import EX_CONFIG, EX_TEMPFAIL, ConfigError, Interrupted, MemsyncError

if TYPE_CHECKING:
    from rich.progress import Progress

    from daemon.cli.locate import QuickPaths
    from daemon.config import Settings
    from daemon.site import Site
    from sync.search.indexing.indexer import PassReport as IndexReport


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "sync",
        help="one pass now (hooks, backfills); --wait returns once it is in the backbone",
        description="One sync pass, then exit, with a progress bar on stderr; episodes it synced are indexed "
        "for search too. If the daemon runs, it asks the daemon to sync now instead.",
    )
    add_sync_arguments(parser)
    parser.set_defaults(run=main)


def add_sync_arguments(parser: argparse.ArgumentParser) -> None:
    add_config(parser)
    parser.add_argument("--once", action="store_true", help="one pass, then exit: what `sync` always does")
    parser.add_argument(
        "--wait",
        action="store_true",
        help="return only once every episode in the AgentDB file is in the backbone, whether or not a daemon runs",
    )
    parser.add_argument(
        "--searchable",
        action="store_true",
        help="with --wait: also wait until they are in the search index",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="give up after this many seconds (exit 75): an unreachable backbone, a daemon that does not "
        "finish (default: 60)",
    )
    add_take_over(parser)


def fast_sync(argv: Sequence[str]) -> int | None:
    """``sync`` with a daemon running, with the fewest imports: poke it and, with --wait, wait for
    its pass; None when the full path must answer (no daemon, or only the full settings can tell)."""
    from daemon.cli.locate import quick_paths
    from daemon.cli.oneshot import poke_daemon

    args = parse_or_none("memsync sync", add_sync_arguments, argv)
    if args is None or args.take_over:
        return None
    paths = quick_paths(args.config, os.environ)
    if paths is None:
        return None
    deadline, asked_at = time.monotonic() + args.timeout, time.time()
    try:
        pid = poke_daemon(paths.lock)
    except OSError:
        return None  # the full path says what is wrong with the lock's path
    if pid is None:
        return None
    try:
        return through_daemon(paths, pid, args, asked_at, deadline)
    except Exit as done:
        return done.code


def main(args: argparse.Namespace) -> int:
    from daemon.cli.locate import QuickPaths
    from daemon.cli.oneshot import poke_daemon

    with handled():
        settings = load(args)
        if args.searchable and not settings.warm.enabled:
            raise ConfigError("--searchable: the search index is off (warm.enabled = false)")
        deadline, asked_at = time.monotonic() + args.timeout, time.time()
        pid = poke_daemon(settings.lock_path)
        if pid is not None:
            socket = settings.socket_path if settings.warm.enabled else None
            paths = QuickPaths(settings.site.name, socket, settings.state_path, settings.lock_path)
            return through_daemon(paths, pid, args, asked_at, deadline)
        return _sync_here(settings, args)


def through_daemon(paths: QuickPaths, pid: int, args: argparse.Namespace, asked_at: float, deadline: float) -> int:
    """The daemon (pid) was asked for a pass at ``asked_at``; with --wait, wait for it (and with
    --searchable, for its search index to reach the feed's end)."""
    from daemon.cli.oneshot import daemon_record, wait_for_daemon_pass

    if not (args.wait or args.searchable):
        say(f"the daemon (pid {pid}) syncs this site; asked it to sync now")
        return 0
    record = wait_for_daemon_pass(paths.state, asked_at, deadline)
    if record is None:
        last = daemon_record(paths.state)
        problem = last.get("last_error") or last.get("source_error")
        why = f"; its last problem: {problem}" if problem else ""
        fail(f"the daemon (pid {pid}) did not finish a pass within {args.timeout:g}s{why}", EX_TEMPFAIL)
    say(f"synced by the daemon (pid {pid}); backlog {record.get('backlog')}")
    if args.searchable:
        _wait_searchable(paths, deadline, args.timeout)
    return 0


def _wait_searchable(paths: QuickPaths, deadline: float, timeout: float) -> None:
    from daemon.control.client import ControlClient

    if paths.socket is None:
        fail("--searchable: the search index is off (warm.enabled = false)", EX_CONFIG)
    left = max(0.1, deadline - time.monotonic())
    try:
        reply = ControlClient(paths.socket).indexed(None, wait=left)
    except MemsyncError as exc:
        fail(f"synced, but the search index could not catch up: {exc}", EX_TEMPFAIL)
    if not reply.done:
        fail(
            f"synced, but not searchable within {timeout:g}s: the index is at feed position {reply.cursor} "
            f"of {reply.through}",
            EX_TEMPFAIL,
        )
    say("searchable")


def _sync_here(settings: Settings, args: argparse.Namespace) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from daemon.cli.oneshot import one_shot

    err = console(stderr=True)
    with (
        one_shot(settings, args.timeout, take_over=args.take_over) as (site, stop),
        Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=err,
            transient=not err.is_terminal,
            disable=not err.is_terminal,
        ) as bar,
    ):
        if settings.journal_path.exists():  # the memories agents saved (memsync remember), first: few and quick
            try:
                saved = site.journal.run_pass(stop)
            except Interrupted:
                say("interrupted; the next pass resumes from the cursor")
                raise Exit(130) from None
            if saved.changed_anything():
                say(f"saved memories: {saved.inserted} new, {saved.updated} updated, {saved.quarantined} quarantined")
        if not settings.agentdb.path.exists():
            # What docs/guides/run.md promises: a missing file is an agent that has not written yet, not an error.
            say(
                f"nothing to sync yet: the AgentDB file {settings.agentdb.path} does not exist (the agent has not "
                "written it)"
            )
            return 0
        task = bar.add_task(f"syncing {settings.site.name}", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        try:
            report = site.engine.run_pass(stop, progress)
        except Interrupted:
            say("interrupted; the next pass resumes from the cursor")
            raise Exit(130) from None
        say(
            f"{report.inserted} new, {report.updated} updated, {report.unchanged} already there, "
            f"{report.reused} reused ids kept, "
            f"{report.quarantined} quarantined; cursor {report.cursor}, backlog {report.backlog}"
        )
        if report.interrupted:
            fail(f"interrupted: {report.backlog} episodes left to sync; the next pass resumes from the cursor", 130)
        if settings.warm.enabled:
            _index_here(settings, site, bar, stop, required=args.searchable)
    return 0  # quarantined rows are said above and in status; the pass itself succeeded


def _index_here(settings: Settings, site: Site, bar: Progress, stop: threading.Event, *, required: bool) -> None:
    """Index what the pass synced (and anything else the feed holds), so that a search right after
    finds it. Syncing has succeeded whatever happens here: a failure is said, not raised, unless
    the caller asked for --searchable."""
    from daemon.search_worker.wiring import offline_layer

    task = bar.add_task("indexing for search", total=None)

    def progress(report: IndexReport) -> None:
        bar.update(task, completed=report.cursor, total=report.end or None)

    interrupted = False
    try:
        with offline_layer(settings, site.backbone, stop=stop, leases=site.backbone) as layer:
            report = layer.catch_up(progress)
            interrupted = stop.is_set()  # closing the layer sets it too
    except Exception as exc:  # noqa: BLE001 - every failure becomes the sentence below
        if isinstance(exc, Interrupted):  # a Ctrl-C while waiting to retry the embedder or the backbone
            _interrupted_indexing(None)
        problem = str(exc) if isinstance(exc, MemsyncError) else f"{type(exc).__name__}: {exc}"
        if isinstance(exc, ConfigError):  # a missing package, another model: only a person can fix it
            fail(f"synced, but not indexed for search: {problem}", EX_CONFIG)
        if required:
            fail(f"synced, but not searchable: {problem}", EX_TEMPFAIL)
        say(f"synced, but not indexed for search: {problem}")
        return
    if interrupted:  # a Ctrl-C the index's pages obeyed (or that came as the last one finished)
        _interrupted_indexing(report)
    # An adopted collection's first pass keeps the seed's vectors: say how many it took over.
    adopted = f", {report.adopted} kept from the adopted collection" if report.adopted else ""
    counts = f"{report.embedded} embedded, {report.rewritten} updated, {report.deleted} removed"
    say(f"indexed for search: {counts}{adopted}")


def _interrupted_indexing(report: IndexReport | None) -> NoReturn:
    """Ctrl-C while indexing: the episodes are synced (said above); say how far the index got."""
    reached = (
        "" if report is None else f" at feed position {report.cursor} of {report.end} ({report.embedded} embedded)"
    )
    fail(
        f"interrupted while indexing for search: synced, but the index stopped{reached}; the next `memsync sync` "
        "or the daemon indexes the rest",
        130,
    )
