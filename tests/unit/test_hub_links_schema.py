"""Version 12 of the hub added the links table and the session index: an older file gets them in the
migration's transaction (from 11, and from 10 until 10 -> 11 is chained), its episodes kept, and
links then work."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from sync.backbone.base import PushItem
from sync.backbone.hub import HubBackbone
from sync.backbone.hub.schema import SCHEMA_VERSION
from sync.episode import canonical_json
from sync.policy.links import EpisodeRef, StoredLink


def _item(source_id: str, ts: int) -> PushItem:
    fields = {"sessionId": "s", "task": "t", "ts": ts, "createdAt": ts, "metadata": {}}
    return PushItem(source_id, int(source_id), f"i{source_id}", f"c{source_id}", fields, canonical_json(fields))


@pytest.mark.parametrize("older", ["10", "11"])
def test_an_older_hub_gains_the_links_table_and_keeps_its_episodes(tmp_path: Path, older: str) -> None:
    path = tmp_path / "hub.db"
    hub = HubBackbone(path, "laptop")
    hub.push([_item("1", 10), _item("2", 20)], cursor=2)
    hub.close()
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.executescript(
            "DROP TABLE links; DROP INDEX episodes_by_session;"
            f" UPDATE schema_info SET value = '{older}' WHERE key = 'version';"
        )
    hub = HubBackbone(path, "laptop")
    try:
        with closing(sqlite3.connect(path)) as conn:
            assert conn.execute("SELECT value FROM schema_info WHERE key = 'version'").fetchone()[0] == SCHEMA_VERSION
            plan = conn.execute(
                "EXPLAIN QUERY PLAN SELECT 1 FROM episodes WHERE source_site = 'laptop'"
                " AND json_extract(body, '$.sessionId') = 's' ORDER BY ts"
            ).fetchall()
        assert "episodes_by_session" in str(plan)
        assert hub.add_links([StoredLink(EpisodeRef("laptop", "2"), EpisodeRef("laptop", "1"), "similar_to")]) == 1
        assert [(x.kind, x.other.source_id) for x in hub.related("laptop", "2")] == [
            ("similar_to", "1"),
            ("led_to", "1"),
            ("evolved_from", "1"),
        ]
    finally:
        hub.close()
