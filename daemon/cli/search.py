"""``memsync search``, ``memsync reindex`` and ``memsync adopt-collection``.

Agents call ``search`` from hooks, on every prompt, so its usual path is light: with a daemon
running, ``fast_search`` parses the arguments, finds the control socket from the config file
(``daemon.cli.locate``), asks the daemon and prints, importing nothing but the standard library
and a few small modules of memsync's own. Anything else (no daemon, an error to explain, a config
only the full settings can read) takes the full path, ``main``, which says the same things.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

from daemon.cli.common import EX_USAGE, Commands, add_config, add_json, console, fail, handled, load, parse_or_none, say
from sync.search.query.results_text import parse_since, render_answer, render_results
from sync.search.request import MAX_LIMIT, OUTCOMES, SearchAnswer, SearchRequest

if TYPE_CHECKING:
    from daemon.config import Settings
    from daemon.search_worker.adopt import ServerFactory


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "search",
        help="search every site's episodes (BM25 and meaning, fused)",
        description="Search every site's episodes: BM25 and dense vectors fused, then recency decay. Goes "
        "through the running daemon; with none, this process opens the index itself, catching it up first.",
    )
    add_search_arguments(parser)
    parser.set_defaults(run=main)
    reindex = commands.add_parser(
        "reindex",
        help="rebuild the search index with the configured model",
        description="Rebuild the vector collection from the backbone with the configured embedding model, then "
        "switch searches to it (the old collection serves until the new one is complete).",
    )
    add_config(reindex)
    reindex.set_defaults(run=reindex_main)
    adopt = commands.add_parser(
        "adopt-collection",
        help="take over a Qdrant collection memsync did not make, when its vectors fit",
        description="Adopt a collection on the Qdrant server that memsync did not make (e.g. the seed design's "
        "agent_memory_hybrid) for the configured model, without re-embedding it: one named dense vector of the "
        "model's size with cosine distance and one named sparse vector with the IDF modifier. memsync then "
        "searches and writes it through the alias warm.collection, and never drops it.",
    )
    adopt.add_argument("collection", help="the collection to adopt (warm.collection, the alias, names memsync's own)")
    add_config(adopt)
    adopt.set_defaults(run=adopt_main)


def add_search_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", help="what to look for: words, an error code, a function name")
    add_config(parser)
    parser.add_argument(
        "-n",
        "--limit",
        type=int,
        default=10,
        metavar="N",
        help=f"results to show at most, 1-{MAX_LIMIT} (default: 10); those under the relevance floor are cut",
    )
    parser.add_argument(
        "--site", metavar="SITE", help="only episodes from this site (a name no site has: exit 2, naming the sites)"
    )
    parser.add_argument("--agent", metavar="NAME", help="only this agent's episodes")
    parser.add_argument("--session", metavar="ID", help="only this session's episodes")
    parser.add_argument(
        "--tag", action="append", metavar="TAG", help="only episodes with this tag (repeat: any of them)"
    )
    parser.add_argument("--since", metavar="WHEN", help="only episodes since: 7d, 12h, 30m, or an ISO date")
    parser.add_argument(
        "--type",
        dest="types",
        action="append",
        metavar="TYPE",
        help="only memories of this type (repeat: any of them): error_fix, decision, warning, learning, discovery, "
        "codebase_knowledge, observation, event",
    )
    parser.add_argument(
        "--outcome",
        choices=OUTCOMES,
        help="only memories that went this way: success or failure (one that recorded neither matches neither)",
    )
    parser.add_argument("--rerank", action="store_true", help="rerank with Voyage rerank-2.5 (needs a Voyage key)")
    parser.add_argument("--mmr", action="store_true", help="diversify the results (maximal marginal relevance)")
    parser.add_argument(
        "--include-merged",
        action="store_true",
        help="also the memories the dream folded into another or marked superseded (hidden by default)",
    )
    parser.add_argument(
        "--all",
        dest="all_duplicates",
        action="store_true",
        help="show everything found: near-duplicates (collapsed by default) and results under the relevance floor",
    )
    parser.add_argument(
        "--floor",
        type=float,
        metavar="P",
        help="the least relevance a result needs, 0-1 (default: the calibrated floor, which cuts what shares "
        "nothing with the query; 0: none)",
    )
    parser.add_argument(
        "--mode", choices=("hybrid", "dense", "bm25"), default="hybrid", help="hybrid (default); the others compare"
    )
    parser.add_argument(
        "--follow",
        action="store_true",
        help="follow one hop from the best 3 hits: the episodes just before and after each in its session, "
        "placed after it (off by default: see docs/BENCHMARKS.md)",
    )
    add_json(parser)


def request_from(args: argparse.Namespace) -> SearchRequest:
    """The request the arguments ask for (``daemon.usecases.memory.search``); ValueError says what is wrong."""
    from daemon.usecases.memory.search import search_request

    return search_request(
        args.query,
        now=time.time(),
        limit=args.limit,
        site=args.site,
        agent=args.agent,
        session=args.session,
        tags=args.tag or (),
        since=args.since,
        mode=args.mode,
        everything=args.all_duplicates,
        floor=args.floor,
        rerank=args.rerank,
        mmr=args.mmr,
        types=args.types or (),
        include_merged=args.include_merged,
        follow=args.follow,
        outcome=args.outcome,
    )


def fast_search(argv: Sequence[str]) -> int | None:
    """Search through a running daemon with the fewest imports; None when the full path must answer
    (no daemon listening, or anything to explain)."""
    from daemon.cli.locate import quick_paths
    from daemon.control.client import ControlClient
    from sync.errors import MemsyncError

    args = parse_or_none("memsync search", add_search_arguments, argv)
    if args is None:
        return None
    paths = quick_paths(args.config, os.environ)
    if paths is None or paths.socket is None:
        return None
    try:
        answer = ControlClient(paths.socket).answer(request_from(args))
    except (ValueError, MemsyncError, OSError):
        return None
    if not answer.results and not answer.cut and args.site is not None:
        return None  # nothing from that site: the full path says whether there is such a site
    show(answer, args, sys.stdout, via="daemon")
    _note_shown(paths.state, answer)
    return 0


def _note_shown(state: Path, answer: SearchAnswer) -> None:
    """Note the results shown as a use (the site's spool; the daemon sends it on), once printed."""
    from daemon.usecases.memory.uses import noted

    why = noted(state, "cli_search", [(r.site, r.source_id) for r in answer.results], agent=None)
    if why is not None:
        say(f"search: {why}; this use is not counted")


def main(args: argparse.Namespace) -> int:
    from daemon.search_worker.recall import run_search

    with handled():
        settings = load(args, log_level="error")
        try:
            found = run_search(settings, request_from(args))
        except ValueError as exc:  # the request's, or the daemon's verdict on it ("invalid")
            fail(f"search: {exc}", EX_USAGE)
        nothing = not found.results and not found.answer.cut
        if nothing and args.site is not None and (unknown := _unknown_site(settings, args.site)):
            fail(f"search: {unknown}", EX_USAGE)
        if found.behind:
            say(found.behind)
    show(found.answer, args, sys.stdout, via=found.via, behind=found.behind)
    _note_shown(settings.state_path, found.answer)
    return 0


def _unknown_site(settings: Settings, site: str) -> str | None:
    """Why --site matched nothing when the backbone knows no such site (``fleet.unknown_site``);
    None when it does, or cannot say."""
    from daemon.health.fleet import unknown_site
    from daemon.site import opened_backbone
    from sync.errors import MemsyncError

    try:
        with opened_backbone(settings, create=False, existing=True) as backbone:
            return unknown_site(site, backbone.sites())
    except MemsyncError:  # NeverSynced too: with nothing synced, there is no site to name
        return None


def show(answer: SearchAnswer, args: argparse.Namespace, out: IO[str], *, via: str, behind: str | None = None) -> None:
    """``via``: who searched, "daemon" or "this process" (``--json`` says it, for scripts and tests)."""
    if args.as_json:
        payload: dict[str, object] = {"query": args.query, "via": via, **answer.to_wire()}
        if behind:
            payload["warning"] = behind
        out.write(json.dumps(payload, ensure_ascii=False) + "\n")
    else:
        render_answer(answer, out, color=out.isatty())


def reindex_main(args: argparse.Namespace) -> int:
    from collections.abc import Mapping
    from typing import Any

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from daemon.search_worker.recall import run_reindex
    from sync.errors import ConfigError

    with handled():
        settings = load(args)
        if not settings.warm.enabled:
            raise ConfigError("the warm layer is off (warm.enabled = false)")
        err = console(stderr=True)
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("changes"),
            TimeRemainingColumn(),
            console=err,
            transient=not err.is_terminal,
            disable=not err.is_terminal,
        ) as bar:
            task = bar.add_task(f"reindexing {settings.warm.collection}", total=None)

            def progress(report: Mapping[str, Any]) -> None:
                bar.update(task, completed=report.get("cursor", 0), total=report.get("end") or None)

            try:
                report, via = run_reindex(settings, progress)
            except ValueError as exc:  # the daemon refused the request as invalid
                fail(f"reindex: {exc}", EX_USAGE)
        say(
            f"reindexed ({via}): {report['embedded']} embedded, {report['linked']} linked as "
            f"near-duplicates, {report['failed']} refused by the embedder"
        )
        return 1 if report["failed"] else 0


def adopt_main(args: argparse.Namespace, *, server: ServerFactory | None = None) -> int:
    """``server``: how a Qdrant server store is made from the settings (``daemon.search_worker.adopt``); the
    CLI's is a client on ``warm.url``."""
    from daemon.search_worker.adopt import adopt_collection
    from daemon.search_worker.wiring import open_server_store
    from sync.errors import ConfigError

    with handled():
        settings = load(args)
        if not settings.warm.enabled:
            raise ConfigError("the warm layer is off (warm.enabled = false)")
        say(adopt_collection(settings, args.collection, server=server or open_server_store).summary())
    return 0


__all__ = ["fast_search", "parse_since", "register", "render_results"]
