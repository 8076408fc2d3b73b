"""``memsync archive list|verify|restore``: the cold archive the weekly cleanup-old-episodes job
writes (one compressed JSON Lines file per site and ISO week: beside the hub, or in Convex's file
storage). ``--site``, ``--since`` and ``--until`` pick the files by their episodes' dates.

``verify`` reads every file back against its manifest and exits 1 naming each damaged one;
``restore`` brings archived episodes back to the backbone's hot tables (idempotent: what is hot
already stays as it is). The files stay either way.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from daemon.cli.common import EX_USAGE, Commands, add_config, add_json, console, fail, handled, load, say
from daemon.counts import counted

if TYPE_CHECKING:
    from sync.archive.manifest import ArchiveFile
    from sync.backbone.base import Backbone

T = TypeVar("T")


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "archive",
        help="the cold archive of old episodes: list, verify, restore",
        description="The cold archive: episodes older than jobs.archive_after_days, one compressed JSON Lines "
        "file per site and week, written by the weekly cleanup-old-episodes job.",
    )
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    for name, run, help_text in (
        ("list", list_main, "every archive file: site, week, episodes, size, key range"),
        ("verify", verify_main, "read every file back against its manifest; exit 1 if one is damaged"),
        ("restore", restore_main, "bring archived episodes back to the backbone's hot tables (idempotent)"),
    ):
        action = actions.add_parser(name, help=help_text, description=help_text)
        add_config(action)
        action.add_argument("--site", metavar="SITE", help="only this site's files (default: every site)")
        action.add_argument("--since", metavar="YYYY-MM-DD", help="files with episodes on or after this UTC day")
        action.add_argument("--until", metavar="YYYY-MM-DD", help="files with episodes before this UTC day")
        add_json(action)
        action.set_defaults(run=run)


def _day_ms(value: str | None, option: str) -> int | None:
    if value is None:
        return None
    try:
        day = datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        fail(f"{option} {value!r} is not a day: give YYYY-MM-DD, e.g. 2026-08-01", EX_USAGE)
    return int(day.timestamp() * 1000)


def _range(args: argparse.Namespace) -> tuple[str | None, int | None, int | None]:
    return args.site, _day_ms(args.since, "--since"), _day_ms(args.until, "--until")


def _on_backbone(args: argparse.Namespace, call: Callable[[Backbone], T]) -> T:
    """``call`` on the configured backbone, opened for it and closed after; errors as sentences."""
    from daemon.site import NeverSynced, opened_backbone

    with handled():
        settings = load(args, log_level="error")
        try:
            with opened_backbone(settings, create=False, existing=True) as backbone:
                return call(backbone)
        except NeverSynced as exc:
            fail(f"the hub {exc.hub} does not exist yet: nothing has been synced or archived", 1)
    raise AssertionError("handled() exits on every error")  # pragma: no cover


def _row(file: ArchiveFile, archived: int | None = None) -> dict[str, Any]:
    """``episodes``: archived now (a restore or an edit makes fewer), when the backbone counts them;
    ``inFile``: the file's own count, which a restore leaves as it was."""
    return {
        "site": file.site,
        "week": file.week,
        "episodes": file.count if archived is None else archived,
        "inFile": file.count,
        "bytes": file.bytes,
        "sha256": file.sha256,
        "firstId": file.first_id,
        "lastId": file.last_id,
        "fromTs": file.from_ts,
        "toTs": file.to_ts,
        "writtenAt": file.written_at,
        "location": file.location,
    }


def _day(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d")


def list_main(args: argparse.Namespace) -> int:
    files, counts = _on_backbone(
        args, lambda backbone: (backbone.archive_files(*_range(args)), backbone.archived_counts(args.site))
    )

    def now(f: ArchiveFile) -> int:
        return f.count if counts is None else counts.get((f.site, f.week), 0)

    if args.as_json:
        sys.stdout.write(json.dumps([_row(f, None if counts is None else now(f)) for f in files]) + "\n")
        return 0
    if not files:
        say("no archive files in that range (the weekly cleanup-old-episodes job writes them)")
        return 0
    out = console()
    for f in files:
        hot = f.count - now(f)
        out.print(
            f"{f.site:<16} {f.week}  {counted(now(f), 'episode'):>14}  {f.bytes:>10,} bytes  "
            f"{_day(f.from_ts)} .. {_day(f.to_ts)}  keys {f.first_id} .. {f.last_id}"
            + (f"  ({hot} of the file's {f.count} hot again: restored, edited or forgotten)" if hot > 0 else "")
        )
    out.print(
        f"{counted(len(files), 'file')}, {counted(sum(now(f) for f in files), 'episode')} archived, "
        f"{sum(f.bytes for f in files):,} bytes"
    )
    return 0


def verify_main(args: argparse.Namespace) -> int:
    checks = _on_backbone(args, lambda backbone: backbone.verify_archive(*_range(args)))
    damaged = [c for c in checks if c.problem is not None]
    if args.as_json:
        sys.stdout.write(json.dumps([_row(c.file) | {"problem": c.problem} for c in checks]) + "\n")
    else:
        for check in damaged:
            say(f"damaged: {check.file.site} {check.file.week} ({check.file.location}): {check.problem}")
        say(
            f"{len(checks) - len(damaged)} of {len(checks)} archive files verified"
            + (": restore the damaged ones from a backup" if damaged else "")
        )
    return 1 if damaged else 0


def restore_main(args: argparse.Namespace) -> int:
    restored = _on_backbone(args, lambda backbone: backbone.restore_archive(*_range(args)))
    if args.as_json:
        sys.stdout.write(json.dumps({"restored": restored}) + "\n")
    else:
        say(
            f"{restored} archived episodes are back in the backbone's hot tables"
            + ("" if restored else " (none was archived in that range, or all were restored already)")
            + "; the next cleanup run archives those still older than the retention again"
        )
    return 0
