"""``memsync forget``: take episodes back for good, by key (``SITE:ID``, several at once) or by a
text that must go (``--matching TEXT``: what it finds is listed, and confirmed unless ``--yes``).

The backbone deletes the episode and keeps a content-free tombstone, so a later push of the key is
refused (and an agent's copy in its AgentDB file is never synced again). Every site's search index
drops the episode from the change feed: at once where a daemon runs, when it starts where none
does; the store's own files (Qdrant's WAL and segments) keep the bytes until ``memsync reindex``
rebuilds the collection, which is what purges them. A site forgets its own episodes; on the
embedded hub a site may forget another's. On Convex a site's secret reaches only its own: another
site's needs that site (or the deployment's admin).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from daemon.cli.common import EX_USAGE, Commands, add_config, add_json, fail, handled, load, say

if TYPE_CHECKING:
    from daemon.config import Settings
    from sync.backbone.base import Backbone

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
    from daemon.site import open_backbone

    if not args.keys and not args.matching:
        fail("give SITE:ID keys or --matching TEXT", EX_USAGE)
    if args.matching is not None and len(args.matching) < 4:
        fail("--matching needs at least 4 characters (a shorter text matches too much)", EX_USAGE)
    keys = parse_keys(args.keys)
    with handled():
        settings = load(args, log_level="error")
        backbone = open_backbone(settings, create=False)
        try:
            if args.matching is not None:
                keys += _matching(backbone, args.matching, ask=not args.yes)
            outcome = _forget(settings, backbone, keys)
        finally:
            backbone.close()
    return _report(args, settings.backbone.kind, outcome)


def _matching(backbone: Backbone, text: str, *, ask: bool) -> list[tuple[str, str]]:
    """Every episode the backbone shows this site whose text holds ``text``, listed on stderr and
    confirmed (unless ``ask`` is False)."""
    found = [
        (str(e["sourceSite"]), str(e["sourceId"]), str(e.get("task") or ""))
        for e in backbone.episodes(None)
        if _holds(e, text)
    ]
    if not found:
        say(f"no episode holds {text!r}")
        return []
    for site, source_id, task in found:
        sys.stderr.write(f"  {site}:{source_id}  {task[:70]}\n")
    if ask and not _confirm(f"forget these {len(found)} episodes for good?"):
        fail("nothing forgotten", 1)
    return [(site, source_id) for site, source_id, _ in found]


def _forget(settings: Settings, backbone: Backbone, keys: list[tuple[str, str]]) -> dict[str, list[str]]:
    from sync.backbone.hub import HubBackbone

    outcome: dict[str, list[str]] = {"forgotten": [], "unknown": [], "refused": []}
    for site, source_id in dict.fromkeys(keys):
        key = f"{site}:{source_id}"
        if site == settings.site.name:
            deleted = backbone.forget(source_id)
        elif settings.backbone.kind == "local":  # the hub is one file every site writes
            other = HubBackbone(settings.hub_path, site, create=False)
            try:
                deleted = other.forget(source_id)
            finally:
                other.close()
        else:
            outcome["refused"].append(key)
            continue
        outcome["forgotten" if deleted else "unknown"].append(key)
    return outcome


def _confirm(question: str) -> bool:
    if not sys.stdin.isatty():
        fail(f"{question} Not asked: stdin is not a terminal. Add --yes to forget without asking", EX_USAGE)
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def _report(args: argparse.Namespace, kind: str, outcome: dict[str, list[str]]) -> int:
    import json

    if args.as_json:
        sys.stdout.write(json.dumps(outcome) + "\n")
    for key in outcome["forgotten"]:
        say(f"forgotten: {key} (the backbone keeps a tombstone; every site's index drops it as it catches up)")
    for key in outcome["unknown"]:
        say(f"{key}: no such episode in the backbone")
    for key in outcome["refused"]:
        say(
            f"{key}: another site's episode; on Convex a site forgets only its own: run `memsync forget` "
            "on that site (or `npx convex run` with the deployment's admin key)"
        )
    if outcome["forgotten"]:
        where = "the hub file" if kind == "local" else "the Convex deployment"
        say(
            f"removed from {where}; search indexes drop them at their next catch-up (seconds where a daemon "
            "runs; at start, or `memsync sync`, where none does). An index's files keep the old bytes until "
            "it is rebuilt: run `memsync reindex` on each site to purge them"
        )
    return 1 if outcome["refused"] else 0
