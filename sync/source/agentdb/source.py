"""The AgentDB file as one of the site's sources (``sync.source.base.Source``): its rows keep
their ids as keys ("12", "12~1")."""

from __future__ import annotations

from pathlib import Path

from sync.source.agentdb.reader import AgentDBReader
from sync.source.agentdb.rows import convert
from sync.source.base import Source, source_id_for


def agentdb_source(path: Path) -> Source:
    return Source("agentdb", AgentDBReader(path), convert, source_id_for)
