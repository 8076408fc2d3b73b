"""``memsync forget``: take episodes back for good, by key (``SITE:ID``, several at once) or by a
text that must go (``--matching TEXT``: what it finds, hot or archived, is listed, and confirmed
unless ``--yes``).

The backbone deletes the episode and keeps a content-free tombstone, so a later push of the key is
refused (and an agent's copy in its AgentDB file is never synced again); an archived episode's
week file is rewritten without it. Every site's search index drops the episode from the change feed
and purges its files of it: at once where a daemon runs, when it starts where none does. On the embedded
hub the forget then empties the hub's -wal (a checkpoint that cuts it to zero bytes), where the
deleted text would otherwise stay readable for as long as any daemon keeps the hub open. The report
says where it was removed and which sites' indexes have yet to catch up.

A site forgets its own episodes; on the embedded hub a site may forget another's. On Convex a
site's secret reaches only its own: another site's needs the operator's credential, the
deployment's deploy key in ``CONVEX_DEPLOY_KEY`` (in the shell that runs ``forget``, never in a
daemon's environment: it is full access to the deployment).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from daemon.cli.common import EX_USAGE, Commands, add_config, add_json, fail, handled, load, say
from daemon.counts import counted
from daemon.duties import OPERATOR_KEY_ENV
from sync.errors import EX_CONFIG, MemsyncError

if TYPE_CHECKING:
    from daemon.config import Settings
    from daemon.duties import ServerDuties
    from sync.backbone.base import Backbone, Forgotten

# Fields --matching looks in (the text people and agents write; not hashes or ids).
SEARCHED = ("task", "input", "output", "critique", "tags", "metadata", "sessionId")


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


def parse_keys(keys: Iterable[str]) -> list[tuple[str, str]]:
    """``SITE:ID`` pairs; a malformed one is a usage error naming it."""
    found = []
    for key in keys:
        site, sep, source_id = key.partition(":")
        if not sep or not site or not source_id:
            fail(f"{key!r} is not SITE:ID (e.g. laptop:1234; `memsync export` lists them)", EX_USAGE)
        found.append((site, source_id))
    return found


def _holds(episode: dict[str, Any], text: str) -> bool:
    import json

    return any(
        text in (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
        for name in SEARCHED
        if (value := episode.get(name)) is not None
    )


def main(args: argparse.Namespace) -> int:
    from daemon.site import duties_of, never_synced, open_backbone

    if not args.keys and not args.matching:
        fail("give SITE:ID keys or --matching TEXT", EX_USAGE)
    if args.matching is not None and len(args.matching) < 4:
        fail("--matching needs at least 4 characters (a shorter text matches too much)", EX_USAGE)
    keys = parse_keys(args.keys)
    with handled():
        settings = load(args, log_level="error")
        if never_synced(settings):
            fail(f"the hub {settings.hub_path} does not exist yet: nothing has been synced, so nothing to forget", 1)
        backbone = open_backbone(settings)  # a writer: it brings an older hub to the current schema
        try:
            duties = duties_of(settings, backbone)
            if args.matching is not None:
                keys += _matching(backbone, args.matching, ask=not args.yes)
            outcome = _forget(settings, backbone, duties, keys)
            outcome["wal"] = _empty_forgotten(duties)  # also when nothing new was found: a retry empties it
            if args.matching is not None:
                outcome["elsewhere"] = _forget_text_here(settings, args.matching)
            indexes = _indexes(settings, backbone) if outcome["forgotten"] else []
            if outcome["forgotten"]:
                _purge_here(settings, backbone, indexes, timeout=args.timeout)
        finally:
            backbone.close()
    return _report(args, duties.where, outcome, indexes)


def _matching(backbone: Backbone, text: str, *, ask: bool) -> list[tuple[str, str]]:
    """Every episode the backbone shows this site whose text holds ``text``, listed on stderr and
    confirmed (unless ``ask`` is False)."""
    from itertools import chain

    found = [
        (str(e["sourceSite"]), str(e["sourceId"]), str(e.get("task") or ""))
        for e in chain(backbone.episodes(None), backbone.archived_episodes(None))
        if _holds(e, text)
    ]
    if not found:
        say(f"no episode holds {text!r}")
        return []
    for site, source_id, task in found:
        sys.stderr.write(f"  {site}:{source_id}  {task[:70]}\n")
    these = "this episode" if len(found) == 1 else f"these {len(found)} episodes"
    if ask and not _confirm(f"forget {these} for good?"):
        fail("nothing forgotten", 1)
    return [(site, source_id) for site, source_id, _ in found]


Outcome = dict[str, list[dict[str, Any]]]


def _forget(settings: Settings, backbone: Backbone, duties: ServerDuties, keys: list[tuple[str, str]]) -> Outcome:
    """Each key forgotten where this site may: its own; another's where the server's duties say
    it may (on the hub, always; on Convex, with the operator's credential)."""
    from daemon.duties import OperatorRefused

    outcome: Outcome = {"forgotten": [], "unknown": [], "refused": [], "wal": [], "elsewhere": []}
    for site, source_id in dict.fromkeys(keys):
        key = f"{site}:{source_id}"
        if site == settings.site.name:
            done: Forgotten | None = backbone.forget(source_id)
        else:
            try:
                done = duties.forget_elsewhere(site, source_id)
            except OperatorRefused as exc:
                fail(str(exc), EX_CONFIG)
        if done is None:
            outcome["refused"].append({"key": key})
            continue
        entry = {"key": key, "archiveWeek": done.archive_week}
        outcome["forgotten" if done.deleted else "unknown"].append(entry)
    return outcome


def _empty_forgotten(duties: ServerDuties) -> list[dict[str, Any]]:
    """The server's own files emptied of the forgotten text (the hub's -wal cut to nothing: see
    ``HubConnection.empty_wal``); the file that still holds it, if another process kept the hub
    busy throughout (Convex: nothing to do here)."""
    left = duties.empty_forgotten()
    return [] if left is None else [{"file": left}]


def _forget_text_here(settings: Settings, text: str) -> list[dict[str, Any]]:
    """``--matching``: the text out of this site's files that keep text outside the backbone, the
    sidecar's quarantine previews (rows that never became episodes) and the alerts file's kept
    messages (a digest quotes top tasks)."""
    from daemon.alerts.store import AlertStore
    from daemon.paths import exists
    from sync.sidecar import Sidecar

    found: list[dict[str, Any]] = []
    opener: type[Sidecar] | type[AlertStore]
    for path, key, opener in (
        (settings.state_path, "state.path", Sidecar),
        (settings.alerts_path, "alerts", AlertStore),
    ):
        if not exists(path, key):
            continue
        held = opener(path)
        try:
            found.append({"file": str(path), "rows": held.forget_text(text)})
        finally:
            held.close()
    return [entry for entry in found if entry["rows"]]


def _indexes(settings: Settings, backbone: Backbone) -> list[dict[str, Any]]:
    """Every site's search index, and whether its daemon runs to drop (and purge) what was
    forgotten now: this site's by its lock; another's by a heartbeat within two intervals (the
    registry says offline only after the stale sweep). A site whose daemon is down does it when it
    starts."""
    import time

    from daemon.control.lock import holder_pid

    if not settings.warm.enabled:
        return []
    recent = time.time() * 1000 - 2 * settings.jobs.heartbeat_interval * 1000
    indexes = []
    for state in backbone.sites():
        if state.index_state in (None, "off") and state.site != settings.site.name:
            continue
        if state.site == settings.site.name:
            running = holder_pid(settings.lock_path) is not None
        else:
            running = state.online and (state.last_heartbeat or 0) >= recent
        indexes.append({"site": state.site, "running": running})
    if settings.site.name not in {i["site"] for i in indexes}:
        indexes.append({"site": settings.site.name, "running": holder_pid(settings.lock_path) is not None})
    return indexes


def _purge_here(settings: Settings, backbone: Backbone, indexes: list[dict[str, Any]], *, timeout: float) -> None:
    """This site's search index purged of what was forgotten before ``forget`` returns: by its
    daemon, waited for through the control socket; with none running, here (the catch-up that
    ``sync`` runs, which purges once it has read the feed's tombstones)."""
    from daemon.control.client import ControlClient
    from daemon.warm.layer import offline_layer

    mine = next((i for i in indexes if i["site"] == settings.site.name), None)
    if mine is None or not settings.warm.enabled:
        return
    try:
        if mine["running"]:
            mine["purged"] = ControlClient(settings.socket_path).purged(wait=timeout).done
        else:
            with offline_layer(settings, backbone, leases=backbone) as layer:
                layer.catch_up()
            mine["purged"] = True
    except MemsyncError as exc:
        mine["purged"] = False
        mine["problem"] = str(exc)


def _confirm(question: str) -> bool:
    if not sys.stdin.isatty():
        fail(f"{question} Not asked: stdin is not a terminal. Add --yes to forget without asking", EX_USAGE)
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def _report(args: argparse.Namespace, where: str, outcome: Outcome, indexes: list[dict[str, Any]]) -> int:
    import json

    if args.as_json:
        sys.stdout.write(json.dumps(outcome | {"indexes": indexes}) + "\n")
    for entry in outcome["forgotten"]:
        week = entry["archiveWeek"]
        archive = f" and its archive file of {week} (rewritten without it)" if week else ""
        say(f"forgotten: {entry['key']}: removed from {where}{archive}; a tombstone keeps the key refused")
    for entry in outcome["wal"]:
        say(
            f"{entry['file']} may still hold the forgotten text: other processes kept the hub busy. Run "
            "the same `memsync forget` again (it empties that file), or stop the daemons that use the hub"
        )
    for entry in outcome.get("elsewhere", []):
        say(f"also taken out of {entry['file']}: {counted(entry['rows'], 'row')} (quarantine previews, kept messages)")
    for entry in outcome["unknown"]:
        say(f"{entry['key']}: no such episode in the backbone (a tombstone keeps the key refused)")
    for entry in outcome["refused"]:
        say(
            f"{entry['key']}: another site's episode; on Convex a site's secret reaches only its own. Run "
            f"`memsync forget` on that site, or set {OPERATOR_KEY_ENV} to the deployment's deploy key (Convex "
            "dashboard, Settings, Deploy keys) in this shell only, never in a daemon's environment, and run it again"
        )
    for index in indexes:
        if index.get("purged"):
            say(f"search index on {index['site']}: purged (the forgotten text is in none of its files)")
        elif "purged" in index:
            why = index.get("problem") or f"not within {args.timeout:g}s"
            say(
                f"search index on {index['site']}: not purged yet ({why}); its daemon finishes it, "
                "or run the same forget again"
            )
        elif index["running"]:
            say(f"search index on {index['site']}: drops and purges them within seconds (its daemon is running)")
        else:
            say(
                f"search index on {index['site']}: not reached yet (no daemon running there): it drops and "
                "purges them when its daemon starts, or at its next `memsync sync`"
            )
    unpurged = any(index.get("purged") is False for index in indexes)
    return 1 if outcome["refused"] or outcome["wal"] or unpurged else 0
