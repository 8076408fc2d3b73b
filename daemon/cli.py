"""The ``memsync`` command.

Exit codes: 0 ok; 1 a command failed (or status: degraded); 2 status: down; 75 another memsync
holds the site, or the backbone stayed unreachable (try again later); 78 configuration error.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import structlog
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from daemon import logs
from daemon.config import Settings, load_settings
from daemon.lock import DAEMON, ONCE, SiteLock, lock_holder
from daemon.site import Site, open_backbone
from sync.errors import (
    EX_CONFIG,
    EX_TEMPFAIL,
    AlreadyRunning,
    ConfigError,
    MemsyncError,
    TransientError,
)
from sync.retry import Interrupted, RetryPolicy

app = typer.Typer(
    name="memsync",
    help="Keep AI agents' AgentDB memories in step across machines.",
    no_args_is_help=True,
    add_completion=False,
    # Tracebacks with local variables are where secrets leak: never print them.
    pretty_exceptions_enable=False,
)
quarantine_app = typer.Typer(help="Episodes that could not be synced, with the reason.", no_args_is_help=True)
app.add_typer(quarantine_app, name="quarantine")

err = Console(stderr=True)
out = Console()

ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        envvar="MEMSYNC_CONFIG",
        help="TOML config file (else MEMSYNC_* environment variables and .env only).",
        dir_okay=False,
    ),
]


@contextmanager
def _handled() -> Iterator[None]:
    """Turn memsync's errors into one clear line on stderr and the documented exit code."""
    try:
        yield
    except ConfigError as exc:
        err.print(f"[red]memsync: configuration error:[/] {exc}", highlight=False)
        raise typer.Exit(EX_CONFIG) from None
    except AlreadyRunning as exc:
        err.print(f"[yellow]memsync:[/] {exc}", highlight=False)
        raise typer.Exit(EX_TEMPFAIL) from None
    except TransientError as exc:
        err.print(f"[red]memsync: gave up for now:[/] {exc}", highlight=False)
        raise typer.Exit(EX_TEMPFAIL) from None
    except MemsyncError as exc:
        err.print(f"[red]memsync:[/] {exc}", highlight=False)
        raise typer.Exit(1) from None


def _settings(config: Path | None) -> Settings:
    settings = load_settings(config)
    logs.configure(settings.log.level, settings.log.format)
    logs.bind(site=settings.site.name)
    return settings


def _poke_daemon(settings: Settings) -> int | None:
    """Ask a running daemon for a pass now; returns its pid, or None when no daemon holds the site."""
    holder = lock_holder(settings.lock_path)
    if holder is None or holder.role != DAEMON or holder.pid <= 0:
        return None
    try:
        os.kill(holder.pid, signal.SIGUSR1)
    except ProcessLookupError:
        return None
    return holder.pid


@contextmanager
def _one_shot(settings: Settings, timeout: float) -> Iterator[tuple[Site, threading.Event]]:
    """The site, opened for one pass by this process: waits for another one-shot to finish first,
    stops cleanly on SIGINT/SIGTERM, and gives up on an unreachable backbone after ``timeout``."""
    from daemon.site import Site

    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # a poke meant for a daemon must not kill us
    retry = RetryPolicy(maximum=settings.sync.retry_max_wait, give_up_after=timeout)
    with SiteLock(settings.lock_path, settings.site.name, role=ONCE, wait=timeout):
        backbone = retry.call(lambda: open_backbone(settings), stop=stop)
        with Site(settings, backbone) as site:
            site.engine.retry = retry
            yield site, stop


@app.command()
def run(config: ConfigOption = None) -> None:
    """Run the daemon: tail the AgentDB file and sync every episode until stopped (SIGTERM/SIGINT)."""
    from daemon.runner import Daemon

    with _handled():
        settings = _settings(config)
        code = Daemon(settings).run()
    raise typer.Exit(code)


@app.command()
def sync(
    config: ConfigOption = None,
    once: Annotated[bool, typer.Option("--once", help="One pass, then exit (the only mode: see `run`).")] = True,
    timeout: Annotated[float, typer.Option(help="Give up on an unreachable backbone after this many seconds.")] = 60.0,
) -> None:
    """One sync pass with a progress bar: for agent hooks and backfills."""
    with _handled():
        settings = _settings(config)
        pid = _poke_daemon(settings)
        if pid is not None:
            err.print(f"memsync: the daemon (pid {pid}) syncs this site; asked it to sync now")
            return
        with (
            _one_shot(settings, timeout) as (site, stop),
            Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=err,
                transient=not err.is_terminal,
            ) as bar,
        ):
            task = bar.add_task(f"syncing {settings.site.name}", total=None)

            def progress(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            try:
                report = site.engine.run_pass(stop, progress)
            except Interrupted:
                err.print("memsync: interrupted; the next pass resumes from the cursor")
                raise typer.Exit(130) from None
        err.print(
            f"memsync: {report.inserted} new, {report.updated} updated, {report.reused} reused ids kept, "
            f"{report.quarantined} quarantined; cursor {report.cursor}, backlog {report.backlog}",
            highlight=False,
        )
        if report.interrupted:
            raise typer.Exit(130)


@app.command()
def status(
    config: ConfigOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Site, cursor, backlog, last sync, lag, quarantine and conflicts. Exit 0 ok, 1 degraded, 2 down."""
    from daemon.status import gather, render

    with _handled():
        settings = load_settings(config)
        logs.configure("error", settings.log.format)
        report = gather(settings)
    if as_json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        render(report, out)
    raise typer.Exit(report["exitCode"])


@app.command()
def export(
    config: ConfigOption = None,
    site: Annotated[str | None, typer.Option(help="Only this site's episodes (default: every site).")] = None,
) -> None:
    """The backbone's episodes as JSON lines on stdout, oldest first."""

    with _handled():
        settings = load_settings(config)
        logs.configure("error", settings.log.format)
        backbone = open_backbone(settings, create=False)
        try:
            write = sys.stdout.write
            for episode in backbone.episodes(site):
                write(json.dumps(episode, ensure_ascii=False) + "\n")
        except BrokenPipeError:  # `memsync export | head` is fine
            sys.stderr.close()
        finally:
            backbone.close()


@quarantine_app.command("list")
def quarantine_list(
    config: ConfigOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Quarantined rows with their reasons."""
    from sync.sidecar import Sidecar

    with _handled():
        settings = load_settings(config)
        try:
            sidecar = Sidecar(settings.state_path, readonly=True)
        except FileNotFoundError:
            entries = []  # never synced
        else:
            entries = sidecar.quarantine()
            sidecar.close()
    if as_json:
        for e in entries:
            sys.stdout.write(
                json.dumps(
                    {
                        "id": e.local_id,
                        "stage": e.stage,
                        "reason": e.reason,
                        "attempts": e.attempts,
                        "retryRequested": e.retry_requested,
                        "firstSeen": e.first_seen,
                        "lastSeen": e.last_seen,
                    }
                )
                + "\n"
            )
        return
    if not entries:
        out.print("nothing quarantined")
        return
    table = Table("id", "stage", "attempts", "reason")
    for e in entries:
        table.add_row(str(e.local_id), e.stage, str(e.attempts), e.reason)
    out.print(table)


@quarantine_app.command("retry")
def quarantine_retry(
    ids: Annotated[list[int] | None, typer.Argument(help="AgentDB ids to retry (default: all).")] = None,
    config: ConfigOption = None,
) -> None:
    """Try quarantined rows again (after fixing them, or the backbone)."""
    from sync.sidecar import Sidecar

    with _handled():
        settings = _settings(config)
        sidecar = Sidecar(settings.state_path)
        try:
            marked = sidecar.request_retry(ids or None)
        finally:
            sidecar.close()
        if marked == 0:
            err.print("memsync: nothing to retry")
            return
        pid = _poke_daemon(settings)
        if pid is not None:
            err.print(f"memsync: {marked} marked; the daemon (pid {pid}) retries them now")
            return
        with _one_shot(settings, 60.0) as (site, stop):
            report = site.engine.run_pass(stop)
        remaining = report.quarantined
        err.print(f"memsync: retried {marked}: {report.released} delivered, {remaining} still quarantined")
        if remaining:
            raise typer.Exit(1)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for: words, an error code, a function name.")],
    config: ConfigOption = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=100, help="Results to show.")] = 10,
    site: Annotated[str | None, typer.Option(help="Only episodes from this site.")] = None,
    agent: Annotated[str | None, typer.Option(help="Only this agent's episodes.")] = None,
    session: Annotated[str | None, typer.Option(help="Only this session's episodes.")] = None,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", help="Only episodes with this tag (repeat: any of them).")
    ] = None,
    since: Annotated[str | None, typer.Option(help="Only episodes since: 7d, 12h, 30m, or an ISO date.")] = None,
    rerank: Annotated[
        bool, typer.Option("--rerank", help="Rerank with Voyage rerank-2.5 (needs a Voyage key).")
    ] = False,
    use_mmr: Annotated[bool, typer.Option("--mmr", help="Diversify the results (maximal marginal relevance).")] = False,
    all_duplicates: Annotated[
        bool, typer.Option("--all", help="Show near-duplicates too (collapsed into their best match by default).")
    ] = False,
    mode: Annotated[str, typer.Option(help="hybrid (default), dense or bm25: the latter two to compare.")] = "hybrid",
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Search every site's episodes: BM25 and dense vectors fused, then recency decay."""
    from daemon.recall import parse_since, render_results, run_search
    from sync.warm.search import SearchRequest
    from sync.warm.store import SearchFilter

    with _handled():
        settings = load_settings(config)
        logs.configure("error", settings.log.format)
        if not settings.warm.enabled:
            raise ConfigError("the warm layer is off (warm.enabled = false): nothing is indexed to search")
        try:
            request = SearchRequest(
                query=query,
                limit=limit,
                filter=SearchFilter(
                    site=site,
                    agent=agent,
                    session=session,
                    tags=tuple(tag or ()),
                    since_ms=None if since is None else parse_since(since, time.time()),
                ),
                collapse=not all_duplicates,
                rerank=rerank,
                mmr=use_mmr,
                mode=mode,  # type: ignore[arg-type]  # checked just below
            )
            request.check()
            results, via = run_search(settings, request)
        except ValueError as exc:
            err.print(f"[red]memsync search:[/] {exc}", highlight=False)
            raise typer.Exit(2) from None
    if as_json:
        payload = {"query": query, "via": via, "results": [r.to_wire() for r in results]}
        sys.stdout.write(json.dumps(payload, ensure_ascii=False) + "\n")
        return
    render_results(results, out)


@app.command()
def reindex(config: ConfigOption = None) -> None:
    """Rebuild the vector collection from the backbone with the configured embedding model, then
    switch searches to it (the old collection serves until the new one is complete)."""
    from daemon.recall import run_reindex

    with _handled():
        settings = _settings(config)
        if not settings.warm.enabled:
            raise ConfigError("the warm layer is off (warm.enabled = false)")
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("changes"),
            TimeRemainingColumn(),
            console=err,
            transient=not err.is_terminal,
        ) as bar:
            task = bar.add_task(f"reindexing {settings.warm.collection}", total=None)

            def progress(report: Mapping[str, Any]) -> None:
                bar.update(task, completed=report.get("cursor", 0), total=report.get("end") or None)

            report, via = run_reindex(settings, progress)
        err.print(
            f"memsync: reindexed ({via}): {report['embedded']} embedded, {report['linked']} linked as "
            f"near-duplicates, {report['failed']} refused by the embedder",
            highlight=False,
        )
        if report["failed"]:
            raise typer.Exit(1)


@app.command()
def demo(
    duration: Annotated[float, typer.Option(help="Seconds the agents keep writing.")] = 20.0,
    directory: Annotated[Path | None, typer.Option("--dir", help="Keep the demo's files here.")] = None,
    rate: Annotated[float, typer.Option(help="Episodes a second each agent writes.")] = 5.0,
) -> None:
    """Two sites, two live agents, one embedded hub: watch them sync, then see the figures."""
    from daemon.demo import run_demo

    with _handled():
        logs.configure("warning", "console")
        code = run_demo(duration=duration, directory=directory, rate=rate, console=out)
    raise typer.Exit(code)


def main() -> None:
    structlog.contextvars.clear_contextvars()
    app()


__all__ = ["app", "main"]
