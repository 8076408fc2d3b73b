"""A generated store of memories across two sites with planted duplicate clusters, updates and
look-alikes, and the truth the dream cycle is judged against: what bench/dream.py measures and the
dream tests use. Deterministic for a seed; no clock is read (every ts is from ``T0``).

- **clusters**: one fix written 2-4 times in other words, by other agents, on both sites: the dream
  must fold each into one memory;
- **updates**: a setting given a value, and later another value for the same service (in the same or
  other words): the later must supersede the earlier;
- **look-alikes**: the same words about two things whose identifiers differ by a character or two
  (``ZQX_7781_A``/``ZQX_7781_B``, ``JIRA-4521``/``JIRA-4512``, ``E11000``/``E11001``): never put
  together, never one superseding the other;
- **background**: every other memory, each its own fact (a fix of other identifiers, a setting of
  another service, a plain note).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sync.backbone.base import PushItem
from sync.episode import Attribution, Episode
from sync.source.agentdb.rows import convert

T0 = 1_735_689_600  # seconds: 2025-01-01T00:00:00Z, the first memory's time
DAY = 86_400
SITES = ("laptop", "vm")
AGENTS = ("claude-code", "codex", "gemini-cli", "ops-bot", "reviewer")

SERVICES = (
    "api",
    "worker",
    "gateway",
    "billing",
    "auth",
    "search",
    "scheduler",
    "ingest",
    "notifier",
    "reports",
    "checkout",
    "inventory",
    "payments",
    "profile",
    "feed",
    "uploads",
    "analytics",
    "mailer",
    "ledger",
    "catalog",
)
MODULES = ("db", "client", "handlers", "models", "queue", "cache", "routes", "jobs", "config", "retry", "session")
VERBS = ("load", "save", "fetch", "sync", "parse", "flush", "resolve", "render", "publish", "refresh", "import")
NOUNS = ("user", "order", "invoice", "token", "batch", "event", "report", "record", "account", "message", "price")
ERRORS = (
    "E11000",
    "ECONNRESET",
    "ETIMEDOUT",
    "EADDRINUSE",
    "ENOSPC",
    "EPIPE",
    "40P01",
    "23505",
    "OOMKilled",
    "ECONNREFUSED",
    "EMFILE",
    "SQLITE_BUSY",
    "ERR_STREAM_DESTROYED",
    "ENOTFOUND",
)
ACTIONS = (
    ("adding a retry with exponential backoff", "retrying with exponential backoff"),
    ("closing the cursor in a finally block", "always closing the cursor in finally"),
    ("moving the write into one transaction", "wrapping the write in a single transaction"),
    ("checking for an existing row before the insert", "looking the row up before inserting it"),
    ("raising the file descriptor limit in the unit file", "bumping the unit file's descriptor limit"),
    ("pinning the driver to the previous minor release", "pinning the driver back one minor version"),
    ("freeing the port before the restart", "releasing the port before restarting"),
    ("streaming the upload instead of buffering it", "streaming uploads rather than buffering them"),
    ("dropping the stale lock file at startup", "removing the stale lock file on start"),
    ("adding an index on the lookup column", "indexing the column the lookup filters on"),
)
# One fix in other words: each member of a cluster takes another phrasing and another agent.
PHRASINGS = (
    "Fixed {err} in {func} ({file}) by {a0}.",
    "{err} kept breaking {func} in {file}; {a1} solved it.",
    "When {func} fails with {err}, the fix is {a0} (see {file}).",
    "Resolved the {err} error from {file} in {func}: {a1}.",
)
KEYS = ("pool_size", "max_workers", "timeout_ms", "batch_size", "cache_ttl", "retry_limit", "queue_depth")
SETTING_FIRST = "set {key} to {v} for the {svc} service"
SETTING_LATER = ("set {key} to {v} for the {svc} service", "raised {key} from {old} to {v} for the {svc} service")
LOOKALIKES = (
    ("ZQX_{n}_A", "ZQX_{n}_B", "{a} must stay disabled in production until the migration lands"),
    ("JIRA-{n}", "JIRA-{m}", "{a} was closed after the rollback of the {svc} deploy"),
    ("exp-{n}", "exp-{m}", "experiment {a} showed no effect on {svc} latency and was stopped"),
    ("FEAT_{w}_V2", "FEAT_{w}_V3", "the {a} flag is on for internal users of {svc} only"),
)
NOTES = (
    "The team prefers {adj} {thing} for {purpose}.",
    "Remember that {thing} reviews happen on {day}s before the {purpose} sync.",
    "{Thing} for {purpose} is owned by the {svc} group and changes need their review.",
)
ADJ = ("small", "typed", "readable", "boring", "explicit", "fast", "documented", "tested", "pure", "flat")
THINGS = ("pull requests", "commits", "dashboards", "migrations", "fixtures", "schemas", "runbooks", "alerts")
PURPOSES = ("releases", "on-call", "planning", "audits", "onboarding", "incidents", "billing", "security")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")

Key = tuple[str, str]


@dataclass
class Planted:
    memories: list[dict[str, Any]] = field(default_factory=list)  # site, id, text, ts_s, agent, success, reward
    clusters: list[list[Key]] = field(default_factory=list)
    updates: list[tuple[Key, Key]] = field(default_factory=list)  # (newer, older)
    lookalikes: list[tuple[Key, Key]] = field(default_factory=list)

    def by_site(self, site: str) -> list[dict[str, Any]]:
        return [m for m in self.memories if m["site"] == site]


class _Store:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.planted = Planted()
        self.next_id = dict.fromkeys(SITES, 0)
        self.used_facts: set[tuple[str, str, str]] = set()
        self.texts: set[str] = set()

    def add(self, text: str, day: float, *, site: str | None = None, agent: str | None = None) -> Key:
        self.texts.add(text)
        site = site or self.rng.choice(SITES)
        self.next_id[site] += 1
        key = (site, str(self.next_id[site]))
        self.planted.memories.append(
            {
                "site": site,
                "id": key[1],
                "text": text,
                "ts_s": int(T0 + day * DAY),
                "agent": agent or self.rng.choice(AGENTS),
                "success": self.rng.random() < 0.8,
                "reward": round(self.rng.random(), 2),
            }
        )
        return key

    def fact(self) -> dict[str, str]:
        while True:
            svc, mod = self.rng.choice(SERVICES), self.rng.choice(MODULES)
            func = f"{self.rng.choice(VERBS)}_{self.rng.choice(NOUNS)}"
            err = self.rng.choice(ERRORS)
            if (err, svc + mod, func) not in self.used_facts:
                self.used_facts.add((err, svc + mod, func))
                a0, a1 = self.rng.choice(ACTIONS)
                return {"err": err, "file": f"src/{svc}/{mod}.py", "func": func, "a0": a0, "a1": a1}

    def day(self) -> float:
        return self.rng.uniform(0, 300)


def generate(
    n: int = 10_000, *, seed: int = 31, clusters: int = 400, updates: int = 200, lookalikes: int = 200
) -> Planted:
    """``n`` memories (at least what is planted), deterministic for ``seed``."""
    store = _Store(seed)
    rng = store.rng
    for _ in range(clusters):
        fact, size = store.fact(), rng.choice((2, 2, 3, 3, 4))
        phrasings = rng.sample(PHRASINGS, size)
        agents = rng.sample(AGENTS, size)
        start = store.day()
        keys = [
            store.add(p.format(**fact), start + i * rng.uniform(0.1, 5), site=SITES[i % 2], agent=agents[i])
            for i, p in enumerate(phrasings)
        ]
        store.planted.clusters.append(keys)
    settings_used: set[tuple[str, str]] = set()
    for _ in range(updates):
        while (pick := (rng.choice(KEYS), rng.choice(SERVICES) + str(rng.randrange(1, 99)))) in settings_used:
            pass
        settings_used.add(pick)
        key, svc = pick
        old, new = rng.sample((8, 10, 16, 20, 25, 30, 32, 40, 50, 64, 100, 128), 2)
        start = store.day()
        older = store.add(SETTING_FIRST.format(key=key, v=old, svc=svc), start)
        newer = store.add(
            rng.choice(SETTING_LATER).format(key=key, v=new, old=old, svc=svc), start + rng.uniform(1, 30)
        )
        store.planted.updates.append((newer, older))
    for i in range(lookalikes):
        a_tpl, b_tpl, text = LOOKALIKES[i % len(LOOKALIKES)]
        n1 = rng.randrange(1000, 9999)
        m1 = int(str(n1)[:2] + str(n1)[3] + str(n1)[2]) if str(n1)[2] != str(n1)[3] else n1 + 1
        w = rng.choice(("CHECKOUT", "SEARCH", "BILLING", "EXPORT", "INVITES", "UPLOADS")) + str(i)
        a, b = a_tpl.format(n=n1, m=m1, w=w), b_tpl.format(n=n1, m=m1, w=w)
        svc = rng.choice(SERVICES)
        start = store.day()
        ka = store.add(text.format(a=a, svc=svc), start)
        kb = store.add(text.format(a=b, svc=svc), start + rng.uniform(0.1, 10))
        store.planted.lookalikes.append((ka, kb))
    while len(store.planted.memories) < n:
        kind = rng.random()
        if kind < 0.6:
            fact = store.fact()
            store.add(rng.choice(PHRASINGS).format(**fact), store.day())
        elif kind < 0.8:
            while (pick := (rng.choice(KEYS), rng.choice(SERVICES) + str(rng.randrange(100, 9999)))) in settings_used:
                pass
            settings_used.add(pick)
            store.add(SETTING_FIRST.format(key=pick[0], v=rng.choice((8, 16, 32, 64)), svc=pick[1]), store.day())
        else:
            thing = rng.choice(THINGS)
            note = rng.choice(NOTES).format(
                adj=rng.choice(ADJ),
                thing=thing,
                Thing=thing.capitalize(),
                purpose=rng.choice(PURPOSES),
                day=rng.choice(DAYS),
                svc=rng.choice(SERVICES),
            )
            text = f"{note} ({rng.choice(SERVICES)} {rng.choice(MODULES)} team)"
            if text not in store.texts:  # a repeat by chance would be a duplicate nobody planted
                store.add(text, store.day())
    return store.planted


def push_items(memories: list[dict[str, Any]]) -> Iterator[PushItem]:
    """The memories as a site pushes them (the real row conversion)."""
    for m in memories:
        local_id = int(m["id"])
        row = {
            "id": local_id,
            "ts": m["ts_s"],
            "created_at": m["ts_s"],
            "session_id": f"s-{m['agent']}".encode(),
            "task": m["text"].encode(),
            "input": None,
            "output": None,
            "critique": None,
            "reward": m["reward"],
            "success": int(m["success"]),
            "latency_ms": 10,
            "tokens_used": 20,
            "tags": b"[]",
            "metadata": json.dumps({"agent_name": m["agent"]}).encode(),
        }
        ep = convert(row, Attribution())
        assert isinstance(ep, Episode), ep
        yield PushItem(m["id"], local_id, ep.identity_hash, ep.content_hash, ep.fields, ep.body)


def push_texts(hub: Path, site: str, texts: Sequence[str], ts_s: int) -> None:
    """``texts`` pushed to the hub as site ``site``'s memories ``1``, ``2``... (by agent ``coder``,
    each a second after ``ts_s``), as a third site would: what a dream test folds."""
    from sync.backbone.hub import HubBackbone

    backbone = HubBackbone(hub, site)
    try:
        push_texts_to(backbone, site, texts, ts_s)
    finally:
        backbone.close()


def push_texts_to(backbone: Any, site: str, texts: Sequence[str], ts_s: int) -> None:
    """``push_texts`` through a backbone client opened for ``site`` (the hub's or Convex's)."""
    memories = [
        {"site": site, "id": str(i), "text": t, "ts_s": ts_s + i, "agent": "coder", "success": True, "reward": 0.5}
        for i, t in enumerate(texts, 1)
    ]
    backbone.push(list(push_items(memories)), cursor=len(memories))
