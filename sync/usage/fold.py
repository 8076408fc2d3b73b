"""Folding the site's use spool (``sync.usage.spool``) into the backbone's uses store: what the daemon's
loop does between passes, so that every site sees the fleet's use.

At least once: the taken file is deleted only once the backbone has every use in it; a fold that
dies before that sends them again, and the backbone counts each (use, memory) once by the use's
id. A line that is not a use (torn, or a kind no backbone takes) is skipped and counted, never
blocking the rest.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from sync.backbone.base import UseEvent, Uses
from sync.errors import BackboneRejected
from sync.policy.salience import USE_KINDS
from sync.usage import spool as spooled

BATCH: Final = 100  # uses a call


@dataclass(frozen=True, slots=True)
class Noted:
    """One use as the spool holds it (``sync.usage.spool.line`` wrote it)."""

    use_id: str
    kind: str
    at_ms: int
    keys: tuple[tuple[str, str], ...]
    agent: str | None = None


def parse(line: bytes) -> Noted | None:
    """A spooled line back as a use; None for a line that is not one (torn, or written by hand)."""
    try:
        record = json.loads(line)
        keys = tuple((str(site), str(source_id)) for site, source_id in record["keys"])
        agent = record.get("agent")
        return Noted(
            str(record["id"]), str(record["kind"]), int(record["at"]), keys, None if agent is None else str(agent)
        )
    except (ValueError, TypeError, KeyError):
        return None


def read(taken: Path) -> Iterator[Noted | None]:
    """The uses of a taken file, in order; None for each line that is not one."""
    with taken.open("rb") as lines:
        for line in lines:
            if line.strip():
                yield parse(line)


@dataclass(frozen=True, slots=True)
class Folded:
    """What one fold did: uses sent, (use, memory) pairs the backbone counted for the first time,
    lines skipped (not a use, or refused)."""

    uses: int = 0
    counted: int = 0
    skipped: int = 0


def fold(spool: Path, uses: Uses, *, batch: int = BATCH) -> Folded:
    """Send what ``spool`` holds to ``uses``; the backbone's errors but a refusal propagate (the
    taken file stays for the next fold)."""
    taken = spooled.take(spool)
    if taken is None:
        return Folded()
    events: list[UseEvent] = []
    skipped = 0
    for noted in read(taken):
        if noted is None or noted.kind not in USE_KINDS or not noted.keys:
            skipped += 1
            continue
        events.append(UseEvent(noted.use_id, noted.kind, noted.at_ms, noted.keys, noted.agent))
    counted = 0
    for start in range(0, len(events), batch):
        part = events[start : start + batch]
        try:
            counted += uses.record_uses(part)
        except BackboneRejected:
            skipped += len(part)  # never accepted however often it is sent: not worth blocking on
    spooled.done(taken)
    return Folded(len(events), counted, skipped)


__all__ = ["Folded", "Noted", "fold", "parse", "read"]
