"""Tier: e2e. The planted secrets through the real package, a daemon and the search index: in neither
the hub file nor the index."""

from __future__ import annotations

import gzip
import json
import sqlite3
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

from conftest import AgentProcess, memsync, status_json, write_config
from test_redaction import CORPUS, as_stored


def test_secrets_are_in_neither_the_hub_file_nor_the_search_index(
    tmp_path: Path, agents: Callable[[Path], AgentProcess]
) -> None:
    agentdb = tmp_path / "agent.db"
    agent = agents(agentdb)
    for planted in CORPUS:
        agent.store(as_stored(planted))
    agent.close()
    # A retention of a second, so that the cleanup job archives them a moment later.
    site = write_config(
        tmp_path / "site",
        "laptop",
        agentdb,
        tmp_path / "hub.db",
        warm="enabled = true",
        extra="[jobs]\narchive_after_days = 0.00001\n",
    )
    done = memsync("sync", "--config", str(site.config))
    assert done.returncode == 0, done.stderr
    secrets = [s for e in CORPUS for s in e["secrets"]]
    survivors = [s for e in CORPUS for s in e["lookalikes"]]
    with closing(sqlite3.connect(site.hub)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("hub.db*"))
    assert [s for s in secrets if s.encode() in raw] == []
    assert [s for s in survivors if s.encode() not in raw] == []  # the file is readable as text
    index = b"".join(p.read_bytes() for p in (tmp_path / "site" / "data" / "warm").rglob("*") if p.is_file())
    assert [s for s in secrets if s.encode() in index] == []
    assert any(s.encode() in index for s in survivors), "the index's files hold payload text in the clear"
    code, report = status_json(site.config)
    assert report["redacted"] == len(CORPUS)
    assert code in (0, 1)

    # The cold archive, read around memsync: every file decompressed.
    time.sleep(1.2)  # on purpose: the retention (0.864 s) passes, so what was synced is old enough
    archived = memsync("jobs", "run", "cleanup-old-episodes", "--config", str(site.config))
    assert archived.returncode == 0, archived.stderr
    files = list((tmp_path / "hub.archive").rglob("*.jsonl.gz"))
    assert files
    cold = b"".join(gzip.decompress(p.read_bytes()) for p in files)
    assert [s for s in secrets if s.encode() in cold] == []
    assert [s for s in survivors if s.encode() not in cold] == []
    # Archived, and still searchable: the index keeps the points, marked.
    found = memsync("search", CORPUS[0]["task"], "--mode", "bm25", "--json", "--config", str(site.config))
    assert found.returncode == 0, found.stderr
    results = json.loads(found.stdout)["results"]
    assert results
    assert results[0]["task"] == CORPUS[0]["task"]
    assert all(r["archived"] is True for r in results)
    shown = memsync("search", CORPUS[0]["task"], "--mode", "bm25", "--config", str(site.config))
    assert "archived" in shown.stdout
