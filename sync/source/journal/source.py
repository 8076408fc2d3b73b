"""The journal as one of the site's sources (``sync.source.base.Source``): read by the AgentDB
reader, its rows converted as an AgentDB file's, pushed under keys of its own id space, ``m<n>``
(``m<n>~<g>`` should a reset journal reuse an id the backbone holds for another memory), so that
they never meet the AgentDB file's numeric ids on the backbone."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from sync.source.agentdb.reader import AgentDBReader
from sync.source.agentdb.rows import convert
from sync.source.base import Source

PREFIX: Final = "m"
_KEY = re.compile(r"^m([1-9][0-9]*)(?:~[1-9][0-9]*)?$")


def journal_id(local_id: int, generation: int) -> str:
    """The backbone key of the journal's row ``local_id`` (its n-th distinct memory)."""
    return f"{PREFIX}{local_id}" if generation == 0 else f"{PREFIX}{local_id}~{generation}"


def local_id_of(source_id: str) -> int | None:
    """The journal row a key names (``m17`` → 17), or None for a key of another source."""
    found = _KEY.match(source_id)
    return int(found.group(1)) if found else None


def journal_source(path: Path) -> Source:
    return Source("journal", AgentDBReader(path), convert, journal_id, moves_cursor=False)
