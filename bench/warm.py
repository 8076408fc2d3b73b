"""The warm layer: how soon a new episode is searchable, how fast the indexer goes, how fast search is.

1. Write to searchable: the real daemon (``python -m daemon run``, warm layer on, local MiniLM
   embedder, embedded qdrant-edge store) syncs a site whose live agent (the real agentdb package,
   tests/agentdb_gen/agent.mjs driven over stdin) stores episodes one at a time, each carrying a
   unique token in its task. Per episode: the time from the agent's save returning (its savedAtMs)
   to the first search through the daemon's control socket (``memsync search``'s path: one
   connection, one request) whose results include that episode. The socket is polled every
   20 ms, and each poll is a real search the daemon serves beside its indexing, so the poll's cost
   is part of what is measured. Polls alternate between BM25-only and hybrid searches, episode by
   episode, one figure for each.
2. Indexing throughput: N realistic episodes pushed to a fresh embedded hub (as the sync engine
   pushes them), then one ``Indexer.run()`` into a fresh EdgeStore with the local embedder, against
   the bare ``LocalEmbedder.embed_documents`` over the same texts in the same pages of 64, in feed
   order. The two alternate, bare first.
   The same for long episodes (``--long``, e.g. 100): each carries a log excerpt of 60 to 120 lines
   (1,500 to 3,000 MiniLM tokens), so the indexer cuts it into passages (``split_passages``) and
   embeds each; against the bare embedder over those passages' texts in pages of 64. Both figures
   are per episode and per passage: what a long episode costs, and whether a passage costs more
   than a short episode does.
3. Search latency on the embedded store at 10k and 100k points: the product's whole search
   (``sync.search.query.pipeline.search``: query embedding, BM25 query, dense and BM25 prefetch, fusion,
   decay, collapse) for 200 varied queries, and its store part alone (``sync.search.query.pipeline.hybrid``,
   the same request, the query vectors computed beforehand). The points are synthetic (see ``build_points``).
   Each size is measured as the indexer leaves it (upserts only: the engine scans every vector) and
   again after ``EdgeStore.optimize()`` (the HNSW graph), which the daemon runs in a child process
   once the index is idle (``daemon.search_worker.optimizer``); the optimization's own time too.

    python -m bench.warm [--runs 3] [--probes 40] [--preexisting 400] [--episodes 500] [--long 100]
                         [--points 10000 100000] [--queries 200] [--passes 3]
                         [--parts searchable throughput search]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from bench.common import (
    SITE,
    AgentProcess,
    DaemonProcess,
    Figure,
    SiteFiles,
    at_most,
    copy_fixture,
    emit,
    hub_episodes,
    make_site,
    median,
    percentile,
    progress,
    result,
    short_dir,
    stopwatch,
    wait_caught_up,
    wait_indexed,
    workdir,
)

TARGET_SEARCHABLE_P50_MS: Final = 2000.0
TARGET_RATIO: Final = 0.8
TARGET_SEARCH_P50_MS: Final = 20.0
TARGET_SEARCH_AT: Final = 100_000
POLL_S: Final = 0.02
SEARCH_LIMIT: Final = 10
PAUSE_S: Final = 0.25  # between one episode being found and the agent storing the next
WARMUP_PROBES: Final = 4
PAGE: Final = 64  # the indexer's page (warm.batch_size) and the embedder's batch
MODES: Final = ("bm25", "hybrid")
DAY_MS: Final = 86_400_000
NOW_MS: Final = 1_790_000_000_000
COLLECTION: Final = "agent_memory_hybrid"
# Perturbation strength for synthetic points (see build_points): MiniLM puts two real episodes of
# one family at cosine 0.72-0.90 (p10-p90, mean 0.81); base + s * N(0, I/384) with s in this range
# lands at 0.72-0.91 from its base.
NOISE: Final = (0.45, 0.95)

Vectors = npt.NDArray[np.float32]


def load1() -> float:
    """The 1-minute load average as a repetition ends: how busy the shared machine was."""
    return round(os.getloadavg()[0], 1)


# -- realistic episodes ---------------------------------------------------------------------------
COMPONENTS: Final = (
    "auth service", "billing API", "checkout page", "search indexer", "payments webhook handler",
    "user profile endpoint", "CI pipeline", "nightly backup job", "rate limiter", "session store",
    "notification worker", "CSV import", "GraphQL gateway", "feature-flag client", "image resizer",
    "metrics exporter", "Postgres migration runner", "Redis cache layer", "Kafka consumer group",
    "S3 uploader", "OAuth callback", "admin dashboard", "mobile sync API", "email templates",
    "edge proxy TLS termination", "Terraform state", "Helm chart", "cron scheduler", "websocket relay",
    "PDF export", "invoice generator", "audit log", "password reset flow", "report builder",
    "data retention job", "geo lookup", "i18n loader", "job queue", "webhook retries", "SSO login",
)  # fmt: skip
ACTIONS: Final = (
    "Fix", "Refactor", "Add tests for", "Speed up", "Debug", "Document", "Migrate", "Review the PR for",
    "Deploy", "Roll back", "Add caching to", "Add retries to", "Profile", "Harden",
    "Upgrade the dependencies of", "Investigate", "Split", "Instrument",
)  # fmt: skip
SYMPTOMS: Final = (
    "returns 500 on empty input", "times out after 30 s under load", "leaks memory until the pod is OOMKilled",
    "fails with E11000 duplicate key on users.email", "drops messages when the broker restarts",
    "is flaky on CI, about 1 run in 20", "double-charges when the webhook is retried",
    "logs ECONNRESET every few minutes", "serves stale data after a deploy",
    "rejects valid tokens when the clock skews", "hits the upstream 429 rate limit",
    "deadlocks on concurrent writes", "renders the wrong timezone for Asia/Kolkata users",
    "breaks on UTF-8 filenames", "takes 12 minutes instead of 2", "panics on a nil pointer in the retry path",
    "loses the last page of results", "writes duplicate rows after a partial failure",
    "ignores the configured timeout", "crashes at startup when the env var is missing",
)  # fmt: skip
FILES: Final = (
    "src/billing/invoice.ts", "services/auth/token.py", "internal/queue/worker.go", "app/models/user.rb",
    "lib/retry.ts", "src/api/routes/checkout.ts", "pkg/cache/redis.go", "web/components/Profile.tsx",
    "migrations/0042_add_index.sql", "infra/terraform/main.tf", "charts/api/values.yaml",
    ".github/workflows/ci.yml", "src/search/indexer.py", "cmd/backup/main.go", "src/export/pdf.py",
)  # fmt: skip
FUNCTIONS: Final = (
    "parse_retry_after", "normalizeEmail", "computeInvoiceTotal", "refresh_token", "enqueueJob",
    "resolveLocale", "upsert_user", "handleWebhook", "flushBatch", "rotate_keys", "validateCart",
    "load_feature_flags", "buildReport", "acquire_lock", "sendDigestEmail",
)  # fmt: skip
ERRORS: Final = (
    "TypeError: Cannot read properties of undefined (reading 'id')", "psycopg.errors.UniqueViolation",
    "context deadline exceeded", "java.lang.OutOfMemoryError: Java heap space", "ECONNREFUSED 127.0.0.1:6379",
    "KeyError: 'customer_id'", "SSL: CERTIFICATE_VERIFY_FAILED", "429 Too Many Requests",
    "fatal error: concurrent map writes", "ValueError: time data '2024-13-01' does not match format",
    "sqlite3.OperationalError: database is locked", "Error: ENOSPC: no space left on device",
)  # fmt: skip
FIXES: Final = (
    "added an idempotency key so retried webhooks are ignored", "moved the lock acquisition before the read",
    "raised the pool size from 10 to 40 and added a queue timeout", "cached the token for its lifetime minus 60 s",
    "wrapped the call in exponential backoff with jitter", "added a unique index and an upsert",
    "streamed the file instead of loading it whole", "pinned the dependency to the last good minor version",
    "converted timestamps to UTC at the boundary", "split the job into batches of 500",
    "replaced the N+1 query with a single join", "made the handler reject empty input with a 400",
    "added a regression test reproducing the race", "set the missing env var in the Helm values",
    "bounded the in-memory cache with an LRU of 10k entries",
)  # fmt: skip
LESSONS_OK: Final = (
    "Worked first try; the reproduction test made the fix obvious.",
    "Succeeded after adding retries; the upstream is flakier than documented.",
    "Good result, but slow: I should have profiled before guessing.",
    "Reading the logs around the first failure saved a lot of time.",
    "The existing tests hid the bug because they mocked the clock.",
)
LESSONS_BAD: Final = (
    "Failed: missed the edge case with an empty list.",
    "Timed out waiting for the database lock.",
    "Wrong assumption about the API contract; read the spec first.",
    "The fix only moved the race; it needs a real lock.",
    "Could not reproduce locally; needs production traces.",
)
AGENTS: Final = ("coder", "reviewer", "tester", "researcher", "planner", "ops")
TAGS: Final = ("backend", "frontend", "security", "perf", "tests", "docs", "infra", "bugfix", "urgent", "billing")
SITES: Final = (SITE, SITE, SITE, "laptop", "ci-runner", "gpu-box")  # the bench site holds half


@dataclass(frozen=True, slots=True)
class Family:
    """What a group of similar episodes shares: one job on one component, by one agent."""

    component: str
    action: str
    symptom: str
    file: str
    function: str
    agent: str
    tags: tuple[str, ...]


def make_family(rng: random.Random) -> Family:
    tags = tuple(sorted(set(rng.sample(TAGS, rng.randint(0, 3)))))
    return Family(
        rng.choice(COMPONENTS),
        rng.choice(ACTIONS),
        rng.choice(SYMPTOMS),
        rng.choice(FILES),
        rng.choice(FUNCTIONS),
        rng.choice(AGENTS),
        tags,
    )


def _log_lines(rng: random.Random, fam: Family, n: int) -> list[str]:
    lines = []
    for _ in range(n):
        ms = rng.randrange(DAY_MS)
        stamp = f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d}.{ms % 1000:03d}"
        what = rng.choice(
            (
                rng.choice(ERRORS),
                f"{fam.function} took {rng.randint(3, 9000)} ms",
                f"retrying request {rng.randint(1000, 9999)} (attempt {rng.randint(1, 5)})",
                f"{fam.file}:{rng.randint(10, 900)} {rng.choice(ERRORS)}",
            )
        )
        lines.append(f"{stamp} {rng.choice(('INFO', 'WARN', 'ERROR', 'DEBUG'))} {what}")
    return lines


def agent_episode(rng: random.Random, fam: Family) -> dict[str, Any]:
    """One episode of the family, as the agentdb package's ``storeEpisode`` takes it. About a third
    are terse (a task and a one-line result); the rest carry a report, sometimes a log excerpt
    (which MiniLM truncates at 256 tokens, as it would a real one)."""
    ticket = f"{rng.choice(('OPS', 'BILL', 'AUTH', 'WEB', 'DATA'))}-{rng.randint(100, 9999)}"
    success = rng.random() < 0.7
    fix = rng.choice(FIXES)
    task = f"{fam.action} the {fam.component}: it {fam.symptom} ({ticket})"
    terse = rng.random() < 0.35
    parts = [f"Reported in {ticket}: the {fam.component} {fam.symptom}."]
    for _ in range(0 if terse else rng.choice((0, 1, 1, 2, 2, 3, 4, 6))):
        parts.append(
            rng.choice(
                (
                    f"It started after the deploy of {rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}.",
                    f"The stack trace points at {fam.function} in {fam.file} line {rng.randint(10, 900)}.",
                    f"Customers affected: about {rng.randint(1, 500)} in the last {rng.randint(1, 48)} hours.",
                    f"Seen with {rng.choice(ERRORS)}.",
                    f"Only in {rng.choice(('prod', 'staging', 'eu-west-1', 'the canary', 'CI'))}; local runs pass.",
                    f"p99 went from {rng.randint(50, 300)} ms to {rng.randint(400, 9000)} ms.",
                )
            )
        )
    if not terse and rng.random() < 0.15:
        parts.append("Logs:\n" + "\n".join(_log_lines(rng, fam, rng.randint(5, 30))))
    out = [f"{'Fixed' if success else 'Not fixed yet'}: {fix} in {fam.file} ({fam.function})."]
    for _ in range(0 if terse else rng.choice((0, 1, 1, 2, 3))):
        out.append(
            rng.choice(
                (
                    f"Added {rng.randint(1, 12)} tests; the suite passes in {rng.randint(20, 600)} s.",
                    f"Opened PR #{rng.randint(100, 9999)} and asked {rng.choice(AGENTS)} for review.",
                    f"Benchmarked: {rng.randint(2, 40)}x faster on the {rng.randint(1, 100)}k-row fixture.",
                    f"Rolled out to {rng.randint(1, 100)}% of traffic behind a flag.",
                    f"Follow-up: {rng.choice(ACTIONS).lower()} the {rng.choice(COMPONENTS)}.",
                )
            )
        )
    if not terse and rng.random() < 0.1:
        out.append(f"```diff\n- {fam.function}(req)\n+ {fam.function}(req, timeout={rng.randint(1, 60)})\n```")
    return {
        "sessionId": f"session-{rng.randint(0, 199):03d}",
        "task": task,
        "input": None if terse and rng.random() < 0.5 else "\n".join(parts),
        "output": " ".join(out),
        "critique": rng.choice(LESSONS_OK if success else LESSONS_BAD),
        "reward": round(rng.uniform(0.5, 1.0) if success else rng.uniform(0.0, 0.5), 3),
        "success": success,
        "latencyMs": rng.randint(200, 120_000),
        "tokensUsed": rng.randint(200, 40_000),
        "tags": list(fam.tags),
        "metadata": {"agent_name": fam.agent, "llm_provider": "anthropic", "llm_model": "claude-sonnet-4-5"},
    }


@dataclass(frozen=True, slots=True)
class Converted:
    """An episode as the sync engine pushes it and as the hub's change feed hands it to the indexer."""

    source_id: str
    push: Any  # sync.backbone.base.PushItem
    exported: dict[str, Any]  # the feed's episode (camelCase fields, sourceSite, contentHash, ...)


def convert_episode(site: str, local_id: int, ep: dict[str, Any], ts_ms: int) -> Converted:
    """The agent's episode as an AgentDB row, through the engine's own conversion."""
    from sync.backbone.base import PushItem
    from sync.episode import Attribution, Episode
    from sync.source.agentdb.rows import convert

    row = {
        "id": local_id,
        "ts": ts_ms // 1000,
        "session_id": ep["sessionId"],
        "task": ep["task"],
        "input": ep["input"],
        "output": ep["output"],
        "critique": ep["critique"],
        "reward": ep["reward"],
        "success": int(ep["success"]),
        "latency_ms": ep["latencyMs"],
        "tokens_used": ep["tokensUsed"],
        "tags": json.dumps(ep["tags"]),
        "metadata": json.dumps(ep["metadata"]),
        "created_at": ts_ms // 1000,
    }
    episode = convert(row, Attribution())
    if not isinstance(episode, Episode):
        raise TypeError(f"the engine rejected a generated episode: {episode}")
    source_id = str(local_id)
    push = PushItem(source_id, local_id, episode.identity_hash, episode.content_hash, episode.fields, episode.body)
    exported = {"sourceSite": site, "sourceId": source_id, **episode.fields, "contentHash": episode.content_hash}
    return Converted(source_id, push, exported)


def corpus(n: int, seed: int) -> tuple[list[Family], list[dict[str, Any]]]:
    """``n`` episodes, each of its own family (their families seed the synthetic points)."""
    rng = random.Random(seed)
    families = [make_family(rng) for _ in range(n)]
    return families, [agent_episode(rng, fam) for fam in families]


def long_corpus(n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` episodes whose input ends in a log excerpt of 60 to 120 lines: each is several passages."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        fam = make_family(rng)
        ep = agent_episode(rng, fam)
        log = "\n".join(_log_lines(rng, fam, rng.randint(60, 120)))
        out.append(ep | {"input": f"{ep['input'] or ep['task']}\nLogs:\n{log}"})
    return out


def texts_of(episodes: Sequence[dict[str, Any]]) -> list[str]:
    from sync.search.indexing.text import episode_text

    return [episode_text(ep) for ep in episodes]


# -- 1. write to searchable -----------------------------------------------------------------------
def warm_site(root: Path, socket: Path) -> SiteFiles:
    """``make_site``'s config (every setting at the product default, the warm layer on) with the
    warm layer's folder named and its control socket on a short path."""
    return make_site(root, warm_keys=f'enabled = true\npath = "{root / "warm"}"\nsocket = "{socket}"\n')


def first_found(socket: Path, query: str, token: str, mode: str, timeout: float) -> tuple[float, int]:
    """Poll the daemon every POLL_S with a search for ``query`` (no filter, limit SEARCH_LIMIT)
    until one of its results is the episode carrying ``token``; (wall-clock ms when that answer
    arrived, searches made).

    The query is the episode's whole task, token included: the token is a term no other episode
    has, so BM25 ranks the episode first once it is indexed. In hybrid mode fusion may still put an
    earlier episode with a similar task first (dense weighs more than BM25), so the episode must be
    among the results, not necessarily the first. A limit of 10 costs what a
    limit of 1 does: the search fetches max(4 x limit, 40) candidates either way."""
    from daemon.control.client import ControlClient
    from sync.search.request import SearchRequest

    request = SearchRequest(query=query, limit=SEARCH_LIMIT, mode=mode)  # type: ignore[arg-type]
    daemon = ControlClient(socket)
    deadline = time.monotonic() + timeout
    polls = 0
    while True:
        started = time.monotonic()
        results = daemon.search(request, timeout=30)
        polls += 1
        if any(token in (r.task or "") for r in results):
            return time.time() * 1000, polls
        if started > deadline:
            raise TimeoutError(f"{token} was not searchable ({mode}) within {timeout:.0f} s")
        time.sleep(max(0.0, POLL_S - (time.monotonic() - started)))


def searchable_run(run: int, probes: int, preexisting: int) -> dict[str, Any]:
    rng = random.Random(1000 + run)
    samples: list[dict[str, Any]] = []
    with workdir("warm") as root, short_dir("ms-bench-") as sockets:
        site = warm_site(root, sockets / "bench.sock")
        copy_fixture(preexisting, site.agentdb)
        socket = site.settings().socket_path
        with DaemonProcess(site) as daemon:
            # Steady state: start-up, the first sync and the indexing of the file's episodes are not measured.
            wait_caught_up(site, daemon, preexisting, timeout=120)
            wait_indexed(site, daemon, timeout=600)
            agent = AgentProcess(site.agentdb)
            try:
                for i in range(WARMUP_PROBES + 2 * probes):
                    mode = MODES[i % 2]
                    token = f"probe{i}x{uuid.uuid4().hex}"  # one BM25 term, in no other episode
                    ep = agent_episode(rng, make_family(rng))
                    ep["task"] = f"{ep['task']} [{token}]"
                    local_id, saved_ms = agent.store_saved_at(ep)
                    found_ms, polls = first_found(socket, ep["task"], token, mode, timeout=120)
                    if i >= WARMUP_PROBES:
                        sample = {"id": local_id, "mode": mode, "saved_ms": saved_ms, "found_ms": found_ms}
                        samples.append(sample | {"polls": polls})
                    time.sleep(PAUSE_S)
            finally:
                agent.kill()
            daemon.check_alive()
        synced = {int(e["sourceId"]): float(e["syncedAt"]) for e in hub_episodes(site.hub, site.name)}
    record: dict[str, Any] = {"part": "searchable", "run": run, "preexisting": preexisting, "load1": load1()}
    for mode in MODES:
        mine = [s for s in samples if s["mode"] == mode]
        latencies = [s["found_ms"] - s["saved_ms"] for s in mine]
        to_hub = [synced[s["id"]] - s["saved_ms"] for s in mine]
        record[mode] = {
            "samples": len(latencies),
            "p50_ms": percentile(latencies, 50),
            "p99_ms": percentile(latencies, 99),
            "max_ms": max(latencies),
            "min_ms": min(latencies),
            "hub_p50_ms": percentile(to_hub, 50),
            "polls_p50": percentile([s["polls"] for s in mine], 50),
        }
    return record


# -- 2. indexing throughput -----------------------------------------------------------------------
def bare_pass(embedder: Any, texts: Sequence[str]) -> tuple[float, list[list[float]]]:
    """Seconds for ``embed_documents`` over the texts in pages of PAGE, in order, as the indexer
    hands them to it; and the vectors."""
    vectors: list[list[float]] = []
    with stopwatch() as elapsed:
        for start in range(0, len(texts), PAGE):
            vectors += embedder.embed_documents(texts[start : start + PAGE])
        seconds = elapsed()
    return seconds, vectors


def indexer_pass(embedder: Any, converted: Sequence[Converted], root: Path) -> tuple[float, int]:
    """Seconds for one ``Indexer.run()`` over a fresh hub holding the episodes, into a fresh store
    (wrapped as the daemon wraps it); and how many it embedded."""
    from sync.backbone.hub import HubBackbone
    from sync.search.collection.cursor import CursorFile
    from sync.search.indexing.indexer import Indexer
    from sync.search.stores import EdgeStore
    from sync.search.stores.locked import LockedStore

    hub = HubBackbone(root / "hub.db", SITE)
    store = LockedStore(EdgeStore(root / "qdrant"))
    try:
        for start in range(0, len(converted), 200):  # sync.batch_size
            batch = converted[start : start + 200]
            hub.push([c.push for c in batch], int(batch[-1].source_id))
        indexer = Indexer(
            backbone=hub,
            store=store,
            embedder=embedder,
            collection=COLLECTION,
            cursor_file=CursorFile(root / "indexer.json"),
            page_size=PAGE,
        )
        indexer.open()
        with stopwatch() as elapsed:
            report = indexer.run()
            seconds = elapsed()
        if report.embedded != len(converted) or report.failed:
            raise RuntimeError(f"the indexer did not embed every episode: {report}")
        return seconds, report.embedded
    finally:
        store.close()
        hub.close()


def throughput_runs(
    embedder: Any, runs: int, episodes: int
) -> tuple[list[dict[str, Any]], list[Family], list[dict[str, Any]], Vectors]:
    families, eps = corpus(episodes, seed=7)
    texts = texts_of(eps)
    converted = [convert_episode(SITE, i + 1, ep, NOW_MS - (episodes - i) * 60_000) for i, ep in enumerate(eps)]
    tokens = [len(embedder._tokenizer.encode(t).ids) for t in texts]  # what the model sees, after truncation
    records = []
    vectors: list[list[float]] = []
    for run in range(1, runs + 1):
        bare_s, vectors = bare_pass(embedder, texts)
        with workdir("warm-index") as root:
            index_s, embedded = indexer_pass(embedder, converted, root)
        record = {
            "part": "throughput",
            "run": run,
            "episodes": embedded,
            "bare_per_s": len(texts) / bare_s,
            "indexer_per_s": embedded / index_s,
            "ratio": (embedded / index_s) / (len(texts) / bare_s),
            "chars_p50": percentile([len(t) for t in texts], 50),
            "tokens_p50": percentile(tokens, 50),
            "load1": load1(),
        }
        progress(f"  {describe_run(record)}")
        records.append(record)
    return records, families, eps, np.asarray(vectors, dtype=np.float32)


def long_runs(embedder: Any, runs: int, episodes: int) -> list[dict[str, Any]]:
    """Indexing long episodes: the indexer (which splits them) against the bare embedder over the
    passages it embeds, alternating, bare first."""
    from sync.search.indexing.text import split_passages

    eps = long_corpus(episodes, seed=11)
    texts = texts_of(eps)
    spans = [split_passages(text, embedder.passage_tokens, embedder.count_tokens) for text in texts]
    passages = [text[start:end] for text, cut in zip(texts, spans, strict=True) for start, end in cut]
    counts = [len(cut) for cut in spans]
    converted = [convert_episode(SITE, i + 1, ep, NOW_MS - (episodes - i) * 60_000) for i, ep in enumerate(eps)]
    records = []
    for run in range(1, runs + 1):
        bare_s, _ = bare_pass(embedder, passages)
        with workdir("warm-long") as root:
            index_s, embedded = indexer_pass(embedder, converted, root)
        record = {
            "part": "long",
            "run": run,
            "episodes": embedded,
            "passages": len(passages),
            "passages_p50": percentile(counts, 50),
            "tokens_p50": percentile(embedder.count_tokens(texts), 50),
            "indexer_per_s": embedded / index_s,
            "indexer_passages_per_s": len(passages) / index_s,
            "bare_passages_per_s": len(passages) / bare_s,
            "ratio": bare_s / index_s,
            "load1": load1(),
        }
        progress(f"  {describe_run(record)}")
        records.append(record)
    return records


# -- 3. search latency ----------------------------------------------------------------------------
def build_points(
    store: Any, families: Sequence[Family], eps: Sequence[dict[str, Any]], bases: Vectors, start: int, stop: int
) -> float:
    """Upsert points ``start``..``stop`` of the synthetic collection; returns the seconds spent.

    Point i < len(eps) is a real episode with its real MiniLM vector. Every other point belongs to
    a family f drawn at random: its text is a new episode of that family (same job, component and
    agent, new details and length), its BM25 vector that text's, and its dense vector the family's
    real vector plus Gaussian noise, normalised (NOISE: about as far as MiniLM puts two real
    episodes of one family). Payloads are the indexer's own (``payload_for``), across 4 sites, with
    timestamps spread over the past year."""
    from sync.backbone.base import Change
    from sync.search.embedders import bm25
    from sync.search.indexing.passages import payload_for
    from sync.search.stores import WarmPoint, point_id

    rng = random.Random(start)
    noise_rng = np.random.default_rng(start)
    with stopwatch() as elapsed:
        for first in range(start, stop, 500):
            count = min(500, stop - first)
            picks = [i if i < len(eps) else rng.randrange(len(eps)) for i in range(first, first + count)]
            scale = noise_rng.uniform(*NOISE, size=(count, 1)) * (np.arange(first, first + count) >= len(eps))[:, None]
            noisy = bases[picks] + scale * noise_rng.standard_normal((count, bases.shape[1])) / np.sqrt(bases.shape[1])
            dense = (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).tolist()
            points = []
            for k, (i, f) in enumerate(zip(range(first, first + count), picks, strict=True)):
                ep = eps[i] if i < len(eps) else agent_episode(rng, families[f])
                site = rng.choice(SITES)
                conv = convert_episode(site, i + 1, ep, NOW_MS - rng.randrange(365 * DAY_MS))
                payload = payload_for(Change(i + 1, site, conv.source_id, conv.exported, None))
                sparse = bm25.embed_document(str(payload["text"]))
                points.append(WarmPoint(point_id(site, conv.source_id), dense[k], sparse, payload))
            store.upsert(points)
        return elapsed()


def make_queries(n: int, seed: int) -> list[Any]:
    """Varied requests: keywords, error strings, ticket ids, identifiers and paths, questions; one
    in four with a filter (agent, tag, site or a since date), as ``memsync search`` offers."""
    from sync.search.request import SearchRequest
    from sync.search.stores import SearchFilter

    rng = random.Random(seed)
    makers: list[Callable[[], str]] = [
        lambda: rng.choice(SYMPTOMS),
        lambda: rng.choice(ERRORS).split(":")[0],
        lambda: f"{rng.choice(('OPS', 'BILL', 'AUTH', 'WEB', 'DATA'))}-{rng.randint(100, 9999)}",
        lambda: rng.choice(FUNCTIONS),
        lambda: rng.choice(FILES),
        lambda: f"how did we fix the {rng.choice(COMPONENTS)} that {rng.choice(SYMPTOMS)}?",
        lambda: f"{rng.choice(ACTIONS).lower()} {rng.choice(COMPONENTS)}",
        lambda: f"{rng.choice(COMPONENTS)} {rng.choice(ERRORS).split(':')[0]} {rng.choice(FUNCTIONS)}",
        lambda: rng.choice(FIXES),
    ]
    filters: list[Callable[[], SearchFilter]] = [
        lambda: SearchFilter(agent=rng.choice(AGENTS)),
        lambda: SearchFilter(tags=(rng.choice(TAGS),)),
        lambda: SearchFilter(site=rng.choice(SITES)),
        lambda: SearchFilter(since_ms=NOW_MS - rng.choice((7, 30, 90)) * DAY_MS),
    ]
    requests = []
    for i in range(n):
        flt = rng.choice(filters)() if i % 4 == 3 else SearchFilter()
        requests.append(SearchRequest(query=rng.choice(makers)(), limit=rng.choice((5, 10, 10, 20)), filter=flt))
    return requests


class TimedShard:
    """Stands in for an EdgeStore's qdrant-edge shard and adds up the time of its ``query`` and
    ``query_batch`` calls since the last ``reset``, so that the engine's share of a hybrid search
    (the prefetch batch, and the similarity of BM25-only hits) can be told from the Python around
    it (turning hits into dicts, fusion). Everything else goes to the shard untouched."""

    def __init__(self, shard: Any) -> None:
        self.shard = shard
        self.total_ms = 0.0

    def reset(self) -> None:
        self.total_ms = 0.0

    def query(self, request: Any) -> Any:
        with stopwatch() as elapsed:
            found = self.shard.query(request)
            self.total_ms += elapsed() * 1000
        return found

    def query_batch(self, request: Any) -> Any:
        with stopwatch() as elapsed:
            found = self.shard.query_batch(request)
            self.total_ms += elapsed() * 1000
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self.shard, name)


def measure_search(
    store: Any, shard: TimedShard, embedder: Any, queries: Sequence[Any], passes: int, size: int
) -> list[dict[str, Any]]:
    """``passes`` passes over the queries (each in its own shuffled order): each query through the
    whole search, then through the store's part alone (``sync.search.query.pipeline.hybrid``: prefetch,
    ranking, similarities) with the same parameters (and, inside it, the engine's calls, timed by
    ``shard``); the whole search again with the hand-weighted fusion (``relative``), the
    default before the learned ranking, beside it in the same run; and its ranking alone
    (``sync.search.query.pipeline.rank``: the whole search but the judgement, what the whole
    search was before it)."""
    from sync.search.embedders import bm25
    from sync.search.query.pipeline import candidates_for, hybrid, rank, search

    embed_ms = []
    prepared = []
    for request in queries:
        with stopwatch() as elapsed:
            dense = embedder.embed_query(request.query)
            embed_ms.append(elapsed() * 1000)
        prepared.append((request, dense, bm25.embed_query(request.query)))
    for request, _, _ in prepared[:10]:  # warm-up, not counted
        search(store, embedder, request, now_ms=NOW_MS)
    records = []
    for p in range(1, passes + 1):
        order = list(prepared)
        random.Random(p).shuffle(order)
        full_ms, store_ms, engine_ms, filtered_ms, relative_ms, ranked_ms = [], [], [], [], [], []
        for request, dense, sparse in order:
            with stopwatch() as elapsed:
                search(store, embedder, request, now_ms=NOW_MS)
                full_ms.append(elapsed() * 1000)
            with stopwatch() as elapsed:
                rank(store, embedder, request, now_ms=NOW_MS)
                ranked_ms.append(elapsed() * 1000)
            with stopwatch() as elapsed:
                search(store, embedder, request, now_ms=NOW_MS, fusion="relative")
                relative_ms.append(elapsed() * 1000)
            if not request.filter.is_empty():
                filtered_ms.append(full_ms[-1])
            shard.reset()
            with stopwatch() as elapsed:
                hybrid(store, dense, sparse, candidates_for(request), request.filter)
                store_ms.append(elapsed() * 1000)
            engine_ms.append(shard.total_ms)
        record = {
            "part": "search",
            "run": p,
            "points": size,
            "queries": len(order),
            "p50_ms": percentile(full_ms, 50),
            "p99_ms": percentile(full_ms, 99),
            "filtered_p50_ms": percentile(filtered_ms, 50),
            "relative_p50_ms": percentile(relative_ms, 50),
            "ranked_p50_ms": percentile(ranked_ms, 50),
            "hybrid_p50_ms": percentile(store_ms, 50),
            "hybrid_p99_ms": percentile(store_ms, 99),
            "engine_p50_ms": percentile(engine_ms, 50),
            "embed_query_p50_ms": percentile(embed_ms, 50),
            "load1": load1(),
        }
        progress(f"  {describe_run(record)}")
        records.append(record)
    return records


def search_runs(
    embedder: Any,
    sizes: Sequence[int],
    families: Sequence[Family],
    eps: Sequence[dict[str, Any]],
    bases: Vectors,
    n_queries: int,
    passes: int,
) -> list[dict[str, Any]]:
    """One collection grown to each size in turn (as the indexer grows it: upserts), searched at
    each as it was built, then optimized as the daemon does when idle and searched again."""
    from sync.search.stores import EdgeStore
    from sync.search.stores.locked import LockedStore

    queries = make_queries(n_queries, seed=11)
    records: list[dict[str, Any]] = []
    with workdir("warm-search") as root:
        edge = EdgeStore(root / "qdrant")
        store = LockedStore(edge)  # as the daemon wraps it
        try:
            store.open_or_create(COLLECTION, embedder.name, embedder.dims)
            shard = edge._shard = TimedShard(edge._shard)
            built = 0
            for size in sorted(sizes):
                progress(f"warm: building the synthetic collection up to {size:,} points")
                build_s = build_points(store, families, eps, bases, built, size)
                built = size
                if store.count() != size:
                    raise RuntimeError(f"the store holds {store.count()} points, expected {size}")
                for record in measure_search(store, shard, embedder, queries, passes, size):
                    records.append(record | {"build_s": build_s, "optimized": False})
                progress(f"warm: optimizing the collection at {size:,} points, as an idle daemon does")
                with stopwatch() as elapsed:
                    changed = edge.optimize()
                    optimize_s = elapsed()
                progress(f"  optimize: {optimize_s:.1f} s ({'built' if changed else 'nothing to build'})")
                for record in measure_search(store, shard, embedder, queries, passes, size):
                    records.append(record | {"build_s": build_s, "optimized": True, "optimize_s": optimize_s})
        finally:
            store.close()
    return records


# -- the benchmark --------------------------------------------------------------------------------
def describe_run(r: dict[str, Any]) -> str:
    return f"{_describe(r)} [load {r['load1']:.1f}]" if "load1" in r else _describe(r)


def _describe(r: dict[str, Any]) -> str:
    if r["part"] == "searchable":
        modes = ", ".join(
            f"{m} p50 {r[m]['p50_ms']:.0f} / p99 {r[m]['p99_ms']:.0f} ms (hub p50 {r[m]['hub_p50_ms']:.0f} ms)"
            for m in MODES
        )
        return f"searchable run {r['run']}: {modes}"
    if r["part"] == "throughput":
        return (
            f"throughput run {r['run']}: indexer {r['indexer_per_s']:.1f}/s vs bare embedder "
            f"{r['bare_per_s']:.1f}/s ({r['ratio']:.2f}x)"
        )
    if r["part"] == "long":
        return (
            f"long run {r['run']}: {r['episodes']} episodes, {r['passages']} passages (p50 {r['passages_p50']:g} an "
            f"episode, {r['tokens_p50']:g} tokens): indexer {r['indexer_per_s']:.2f} episodes/s = "
            f"{r['indexer_passages_per_s']:.1f} passages/s vs bare {r['bare_passages_per_s']:.1f}/s ({r['ratio']:.2f}x)"
        )
    state = ", optimized" if r.get("optimized") else ""
    return (
        f"search {r['points']:,}{state} pass {r['run']}: full p50 {r['p50_ms']:.1f} / p99 {r['p99_ms']:.1f} ms, "
        f"hybrid alone p50 {r['hybrid_p50_ms']:.1f} / p99 {r['hybrid_p99_ms']:.1f} ms "
        f"(engine p50 {r['engine_p50_ms']:.1f} ms); relative fusion's full p50 {r.get('relative_p50_ms', 0.0):.1f} ms; "
        f"ranking without the judgement p50 {r.get('ranked_p50_ms', 0.0):.1f} ms"
    )


def figures(records: list[dict[str, Any]]) -> list[Figure]:
    out: list[Figure] = []
    searchable = [r for r in records if r["part"] == "searchable"]
    for mode in MODES if searchable else ():
        label = f"({mode} polls)"
        p50 = median([r[mode]["p50_ms"] for r in searchable])
        out.append(at_most(f"write to searchable p50 {label}", p50, "ms", TARGET_SEARCHABLE_P50_MS))
        out.append(Figure(f"write to searchable p99 {label}", median([r[mode]["p99_ms"] for r in searchable]), "ms"))
    if searchable:
        hub = median([r[m]["hub_p50_ms"] for r in searchable for m in MODES])
        out.append(Figure("of which: save to hub p50", hub, "ms"))
    throughput = [r for r in records if r["part"] == "throughput"]
    if throughput:
        ratio = median([r["ratio"] for r in throughput])
        out.append(Figure("indexing rate, indexer", median([r["indexer_per_s"] for r in throughput]), "episodes/s"))
        out.append(Figure("indexing rate, bare embedder", median([r["bare_per_s"] for r in throughput]), "episodes/s"))
        out.append(Figure("indexer / bare embedder rate", ratio, "x", f">= {TARGET_RATIO:g} x", ratio >= TARGET_RATIO))
    long = [r for r in records if r["part"] == "long"]
    if long:
        per = median([r["passages_p50"] for r in long])
        out.append(
            Figure(
                f"long episodes ({per:g} passages p50): indexing rate",
                median([r["indexer_per_s"] for r in long]),
                "episodes/s",
            )
        )
        out.append(
            Figure("long episodes: passages indexed", median([r["indexer_passages_per_s"] for r in long]), "passages/s")
        )
        out.append(
            Figure(
                "long episodes: bare embedder over the passages",
                median([r["bare_passages_per_s"] for r in long]),
                "passages/s",
            )
        )
        out.append(Figure("long episodes: indexer / bare embedder rate", median([r["ratio"] for r in long]), "x"))
    kinds = sorted({(r["points"], bool(r.get("optimized"))) for r in records if r["part"] == "search"})
    for size, optimized in kinds:
        mine = [
            r
            for r in records
            if r["part"] == "search" and r["points"] == size and bool(r.get("optimized")) == optimized
        ]
        state = "optimized while idle" if optimized else "as indexed, before the idle optimization"
        label = f"({size // 1000}k points, {state})"
        p50 = median([r["p50_ms"] for r in mine])
        if optimized:
            out.append(Figure(f"idle optimization {label}", median([r["optimize_s"] for r in mine]), "s"))
        if size == TARGET_SEARCH_AT and optimized:
            out.append(at_most(f"search p50 {label}", p50, "ms", TARGET_SEARCH_P50_MS))
        else:
            out.append(Figure(f"search p50 {label}", p50, "ms"))
        out.append(Figure(f"search p99 {label}", median([r["p99_ms"] for r in mine]), "ms"))
        if all("relative_p50_ms" in r for r in mine):
            relative = median([r["relative_p50_ms"] for r in mine])
            out.append(Figure(f"search p50, relative fusion {label}", relative, "ms"))
        out.append(Figure(f"hybrid alone p50 {label}", median([r["hybrid_p50_ms"] for r in mine]), "ms"))
        out.append(Figure(f"hybrid alone p99 {label}", median([r["hybrid_p99_ms"] for r in mine]), "ms"))
        engine = median([r["engine_p50_ms"] for r in mine])
        out.append(Figure(f"of which: qdrant-edge query p50 {label}", engine, "ms"))
    search = [r for r in records if r["part"] == "search"]
    if search:
        out.append(Figure("query embedding p50", median([r["embed_query_p50_ms"] for r in search]), "ms"))
    return out


PARTS: Final = ("searchable", "throughput", "long", "search")


def run(
    runs: int = 3,
    probes: int = 40,
    preexisting: int = 400,
    episodes: int = 500,
    points: tuple[int, ...] = (10_000, 100_000),
    queries: int = 200,
    passes: int = 3,
    parts: tuple[str, ...] = PARTS,
    long: int = 100,
) -> dict[str, Any]:
    from sync.search.embedders.local import LocalEmbedder

    records: list[dict[str, Any]] = []
    with stopwatch() as total:
        if "searchable" in parts:
            for i in range(1, runs + 1):
                progress(f"warm: write to searchable, run {i}/{runs}")
                record = searchable_run(i, probes, preexisting)
                progress(f"  {describe_run(record)}")
                records.append(record)
        if {"throughput", "long", "search"} & set(parts):
            embedder = LocalEmbedder(batch_size=PAGE)
            if "long" in parts:
                progress(f"warm: indexing {long} long episodes vs the bare embedder over their passages, {runs} runs")
                records += long_runs(embedder, runs, long)
            if "throughput" in parts:
                progress(f"warm: indexing {episodes} episodes vs the bare embedder, {runs} runs each, alternating")
                done, families, eps, bases = throughput_runs(embedder, runs, episodes)
                records += done
            else:
                families, eps = corpus(episodes, seed=7)
                bases = np.asarray(bare_pass(embedder, texts_of(eps))[1], dtype=np.float32)
            if "search" in parts:
                records += search_runs(embedder, points, families, eps, bases, queries, passes)
        seconds = total()
    params = {
        "runs": runs,
        "probes_per_mode": probes,
        "preexisting": preexisting,
        "episodes": episodes,
        "long": long,
        "points": list(points),
        "queries": queries,
        "passes": passes,
        "parts": list(parts),
        "seconds": round(seconds),
    }
    return result("warm", params, records, figures(records))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="daemon runs (part 1) and index passes of each (part 2)")
    parser.add_argument("--probes", type=int, default=40, help="episodes per search mode per daemon run")
    parser.add_argument("--preexisting", type=int, default=400, help="episodes in the AgentDB file at start")
    parser.add_argument("--episodes", type=int, default=500, help="episodes indexed per pass (part 2)")
    parser.add_argument("--long", type=int, default=100, help="long episodes indexed per pass (part 2)")
    parser.add_argument("--points", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--passes", type=int, default=3, help="timed passes over the queries at each size")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    args = parser.parse_args()
    emit(
        run(
            args.runs,
            args.probes,
            args.preexisting,
            args.episodes,
            tuple(args.points),
            args.queries,
            args.passes,
            tuple(args.parts),
            args.long,
        )
    )


if __name__ == "__main__":
    main()
