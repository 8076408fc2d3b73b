"""Convex backfill: HTTP requests per episode for one full sync pass of a 20k-episode AgentDB file
into the local Convex server, and its episodes/s beside the embedded hub's from the same run.

The local server is tests/convex_local/server.mjs: Convex's HTTP API served from convex-test's
in-memory backend, loaded with the real cloud_functions. That backend scans tables linearly and
there is no network, so its episodes/s says nothing about a real deployment's speed; the requests
per episode are the meaningful figure (each request is one round trip and one function call).

Per repetition: a fresh local Convex server (so data never accumulates across repetitions), a site
registered on it, the site wired as the product wires it (``daemon.site.Site``, default settings,
the secret from the environment) with a ``ConvexBackbone`` whose httpx transport counts requests,
and one timed ``engine.run_pass()``. Then the same file into a fresh embedded hub, wired the same
way, one timed pass.

    python -m bench.convex_backfill [--runs 1] [--episodes 20000]
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from bench.common import (
    SITE,
    Figure,
    SiteFiles,
    agentdb_fixture,
    at_most,
    emit,
    make_site,
    median,
    progress,
    result,
    stopwatch,
    timed_pass,
    workdir,
)

if TYPE_CHECKING:
    from harness.convex import LocalConvex

    from daemon.config import Settings

TARGET_EPISODES_PER_REQUEST = 200  # at most one request per 200 episodes
SECRET_VARIABLE = "MEMSYNC_BACKBONE__SITE_SECRET"
# One repetition takes 7 to 7.5 minutes on a 2-core machine (the in-memory backend's linear scans
# make the pass quadratic in the episodes), so one by default; ask for more with --runs.
RUNS = 1


class CountingTransport(httpx.HTTPTransport):
    """httpx's own transport, counting the requests that go through it and keeping the longest
    one's seconds: a measurement at the transport seam, nothing else changes."""

    def __init__(self) -> None:
        super().__init__()
        self.requests = 0
        self.slowest_s = 0.0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        with stopwatch() as elapsed:
            response = super().handle_request(request)
            self.slowest_s = max(self.slowest_s, elapsed())
        return response


@contextmanager
def local_convex() -> Iterator[LocalConvex]:
    """A fresh local Convex server (the harness's, as the tests start it), stopped on exit."""
    from harness.convex import running_local_convex

    with running_local_convex() as convex:
        yield convex


def convex_settings(files: SiteFiles, secret: str) -> Settings:
    """The site's settings as the product loads them: the file, and the secret from the environment."""
    previous = os.environ.get(SECRET_VARIABLE)
    os.environ[SECRET_VARIABLE] = secret
    try:
        settings: Settings = files.settings()
        return settings
    finally:
        if previous is None:
            del os.environ[SECRET_VARIABLE]
        else:
            os.environ[SECRET_VARIABLE] = previous


def convex_pass(source: Path, episodes: int) -> dict[str, Any]:
    """Seconds and requests for the backfill pass into a fresh local Convex server."""
    from daemon.site import Site, open_backbone, retry_policy

    with local_convex() as convex, workdir("convex-backfill") as root:
        secret = convex.register_site(SITE)
        settings = convex_settings(make_site(root, agentdb=source, convex_url=convex.url), secret)
        transport = CountingTransport()
        backbone = open_backbone(settings, transport=transport)
        with Site(settings, backbone, retry=retry_policy(settings)) as site:
            opening = transport.requests  # the ping when the backbone opens, before any pass
            seconds, report = timed_pass(site)
            requests = transport.requests - opening
            cursor = site.backbone.site_cursor()
    held = None if cursor is None else cursor.total_synced
    if report.inserted != episodes or held != episodes:
        raise RuntimeError(f"expected {episodes} episodes inserted and held; inserted {report.inserted}, held {held}")
    return {
        "convex_s": seconds,
        "requests": requests,
        "opening_requests": opening,
        "slowest_request_s": transport.slowest_s,
        "client_timeout_s": settings.backbone.timeout,
    }


def hub_pass(source: Path, episodes: int) -> float:
    """Seconds for the backfill pass into a fresh embedded hub (as bench.backfill measures it)."""
    from daemon.site import Site, open_backbone, retry_policy

    with workdir("convex-backfill-hub") as root:
        settings = make_site(root, agentdb=source).settings()
        with Site(settings, open_backbone(settings), retry=retry_policy(settings)) as site:
            seconds, report = timed_pass(site)
    if report.inserted != episodes:
        raise RuntimeError(f"expected {episodes} episodes inserted into the hub, not {report.inserted}")
    return seconds


def one_run(source: Path, episodes: int) -> dict[str, Any]:
    convex = convex_pass(source, episodes)
    hub_s = hub_pass(source, episodes)
    convex_rate, hub_rate = episodes / convex["convex_s"], episodes / hub_s
    return {
        **convex,
        "hub_s": hub_s,
        "requests_per_episode": convex["requests"] / episodes,
        "episodes_per_request": episodes / convex["requests"],
        "convex_eps": convex_rate,
        "hub_eps": hub_rate,
        "ratio": convex_rate / hub_rate,
    }


def describe_run(r: dict[str, Any]) -> str:
    return (
        f"{r['requests']} requests (1 per {r['episodes_per_request']:,.0f} episodes, "
        f"+{r['opening_requests']} on opening, slowest {r['slowest_request_s']:.1f} s), "
        f"convex {r['convex_eps']:,.1f}/s vs hub {r['hub_eps']:,.0f}/s ({r['ratio']:.4f}x)"
    )


def run(runs: int = RUNS, episodes: int = 20_000) -> dict[str, Any]:
    from daemon import logs

    logs.configure("warning", "json")
    source = agentdb_fixture(episodes)
    source.read_bytes()  # warm the page cache, so that neither side pays for the first read from disk
    records: list[dict[str, Any]] = []
    for i in range(runs):
        progress(f"convex_backfill: run {i + 1}/{runs} ({episodes} episodes)")
        record = one_run(source, episodes)
        progress(f"  {describe_run(record)}")
        records.append({"run": i + 1, **record})
    per_request = median([r["episodes_per_request"] for r in records])
    met = per_request >= TARGET_EPISODES_PER_REQUEST
    target = f">= {TARGET_EPISODES_PER_REQUEST} episodes/request"
    figures = [
        at_most(
            "requests per episode, convex backfill",
            median([r["requests_per_episode"] for r in records]),
            "requests/episode",
            1 / TARGET_EPISODES_PER_REQUEST,
        ),
        Figure("episodes per request, convex backfill", per_request, "episodes/request", target, met),
        Figure(
            "backfill rate, local Convex (convex-test, in memory)",
            median([r["convex_eps"] for r in records]),
            "episodes/s",
        ),
        Figure("backfill rate, embedded hub (same run)", median([r["hub_eps"] for r in records]), "episodes/s"),
        Figure("local Convex / hub rate", median([r["ratio"] for r in records]), "x"),
    ]
    params = {"runs": runs, "episodes": episodes, "file_bytes": source.stat().st_size}
    return result("convex_backfill", params, records, figures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--episodes", type=int, default=20_000)
    args = parser.parse_args()
    emit(run(args.runs, args.episodes))


if __name__ == "__main__":
    main()
