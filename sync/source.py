"""One site name, one source: which AgentDB file on which machine feeds a site.

Two machines left with the same ``site.name`` would otherwise push into one site and silently
merge two memories (a second laptop's id 7 "reused" the first's). So the backbone records the
source that feeds each site (``EpisodeSink.source_of``/``set_source``, compare-and-set), and a source
that is not the recorded one is refused, naming both, unless the operator takes the site over
(``memsync run --take-over``: a replaced laptop, a restored backup).

A source is the instance id its sidecar keeps, plus the machine it runs on (a hash of host name and
machine id). The decision is pure (``decide``), so both backbones share it:
- nothing recorded yet: claim;
- the same instance and the same AgentDB file: ours already (refresh host and last seen);
- the same machine and the same AgentDB file, another instance: this machine's sidecar was reset
  (deleted for recovery, as docs/guides/operations.md allows): the same source, claim it again;
- the same instance with another AgentDB file is another source too: a second config that kept
  the site's name and changed only ``agentdb.path`` shares the first one's data dir, so its
  sidecar (and instance id) as well, and would file the other file's episodes under this site;
- take-over asked: claim;
- anything else is another source: refuse. A cloned VM is caught here too: its copied sidecar
  finds itself on another machine and gets a new instance id (``SourceIdentity.for_sidecar``).
"""

from __future__ import annotations

import hashlib
import socket
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from sync.backbone.base import EpisodeSink, SourceRecord
from sync.errors import SourceConflict
from sync.sidecar import Sidecar

MACHINE_ID_FILES = (Path("/etc/machine-id"), Path("/var/lib/dbus/machine-id"))


class Verdict(StrEnum):
    CLAIM = "claim"  # record us (first claim, a reset sidecar, a take-over)
    OURS = "ours"  # already recorded as us
    REFUSE = "refuse"


def decide(recorded: SourceRecord | None, ours: SourceRecord, *, take_over: bool) -> Verdict:
    """Whether ``ours`` may feed a site whose recorded source is ``recorded``. Pure."""
    if recorded is None:
        return Verdict.CLAIM
    same_file = recorded.agentdb_path == ours.agentdb_path
    if recorded.instance == ours.instance and same_file:
        return Verdict.OURS
    if recorded.machine == ours.machine and same_file:
        return Verdict.CLAIM
    return Verdict.CLAIM if take_over else Verdict.REFUSE


def machine_fingerprint(host: str, machine_id: str) -> str:
    return hashlib.sha256(f"{host}\0{machine_id}".encode()).hexdigest()[:16]


def read_machine_id() -> str:
    for path in MACHINE_ID_FILES:
        try:
            return path.read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            continue
    return ""  # macOS has none: the host name alone tells machines apart there


@dataclass(frozen=True, slots=True)
class SourceIdentity:
    """This process's source: read once from the machine and the sidecar."""

    instance: str
    machine: str
    host: str
    agentdb_path: str

    @classmethod
    def here(cls, instance: str, agentdb_path: Path) -> SourceIdentity:
        host = socket.gethostname()
        return cls(instance, machine_fingerprint(host, read_machine_id()), host, str(agentdb_path))

    def record(self) -> SourceRecord:
        return SourceRecord(self.instance, self.machine, self.host, self.agentdb_path)


def new_instance_id() -> str:
    return uuid.uuid4().hex


def describe(record: SourceRecord) -> str:
    seen = datetime.fromtimestamp(record.last_seen_at / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"host {record.host!r}, AgentDB file {record.agentdb_path} (instance {record.instance[:8]}, last seen {seen})"
    )


def claim(sink: EpisodeSink, ours: SourceIdentity, *, take_over: bool) -> Verdict:
    """Record ``ours`` as the source of the site ``sink`` was opened for, or raise SourceConflict
    naming both sources."""
    site, mine = sink.site, ours.record()
    for _ in range(3):  # a compare-and-set lost to a racing claim: decide again on what won
        recorded = sink.source_of()
        verdict = decide(recorded, mine, take_over=take_over)
        if verdict is Verdict.REFUSE:
            raise SourceConflict(refusal(recorded, ours, site) or "")
        if sink.set_source(mine, expected=None if recorded is None else recorded.instance):
            return verdict
    raise SourceConflict(f"site {site!r}: another source kept claiming it at the same moment; try again")


def renew_claim(sink: EpisodeSink, ours: SourceIdentity) -> SourceRecord | None:
    """None while the site is still ours, its "last seen" moved to now (so that `status` shows the
    source alive); the record that replaced us otherwise (a take-over elsewhere)."""
    if sink.set_source(ours.record(), expected=ours.instance):
        return None
    recorded = sink.source_of()
    if recorded is None or recorded.instance == ours.instance:
        return None
    return recorded


def refusal(recorded: SourceRecord | None, ours: SourceIdentity, site: str) -> str | None:
    """Why ``ours`` may not feed ``site`` (what `run` and `sync` refuse with, exit 78), or None."""
    if recorded is None or decide(recorded, ours.record(), take_over=False) is not Verdict.REFUSE:
        return None
    if recorded.machine == ours.machine:
        return (
            f"site {site!r} is already fed by another source: the AgentDB file {recorded.agentdb_path} "
            f"on this machine, not {ours.agentdb_path}, which this config names; two files under one "
            "site name would merge two memories. Give this config its own site.name, or, if the "
            "agent's file moved there, run once with --take-over"
        )
    return (
        f"site {site!r} is already fed by another source: {describe(recorded)}; this is host "
        f"{ours.host!r}, AgentDB file {ours.agentdb_path}. Two sources under one name would merge two "
        "memories. Give this site its own site.name, or, if this machine replaces that one (a new "
        "laptop, a restored backup), run once with --take-over"
    )


def instance_for(sidecar: Sidecar, machine: str) -> str:
    """This sidecar's instance id, made on first use. A sidecar that finds itself on another machine
    than the one it was made on was copied (a cloned VM, a restored disk on new hardware): it gets a
    new id, so that the copy is a new source and cannot feed the original's site unasked."""
    instance, made_on = sidecar.get("source_instance"), sidecar.get("source_machine")
    if instance is None or made_on != machine:
        instance = new_instance_id()
        sidecar.set_many({"source_instance": instance, "source_machine": machine})
    return instance
