"""Noting uses off the hot path and folding them into the backbone (``sync.usage``): a real spool
file and a real hub."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from sync.backbone.base import MemoryKey, PushItem, UseEvent, UseTotals
from sync.backbone.hub import HubBackbone
from sync.errors import BackboneUnavailable
from sync.usage.fold import Folded, fold, parse, read
from sync.usage.spool import MAX_KEYS, note, spool_path, take, taken_path

AT = 1_800_000_000_000


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[HubBackbone]:
    hub = HubBackbone(tmp_path / "hub.db", "laptop")
    hub.push([PushItem(str(i), i, f"id{i}", f"c{i}", {"task": f"t{i}"}, b"{}") for i in (1, 2, 3)], cursor=3)
    yield hub
    hub.close()


def test_the_spool_sits_beside_the_sites_state(tmp_path: Path) -> None:
    assert spool_path(tmp_path / "laptop.state.db") == tmp_path / "laptop.state.db.uses"


def test_noted_uses_come_back_whole_in_order_with_keys_once_and_capped(tmp_path: Path) -> None:
    spool = tmp_path / "s.uses"
    assert note(spool, "context", [("laptop", "1"), ("laptop", "1"), ("vm", "2")], at_ms=AT, agent="codex") is None
    many = [("laptop", str(i)) for i in range(MAX_KEYS + 10)]
    assert note(spool, "mcp_search", many, at_ms=AT + 1) is None
    assert note(spool, "context", [], at_ms=AT) is None  # nothing handed: nothing noted
    assert spool.stat().st_mode & 0o777 == 0o600
    first, second = list(read(spool))
    assert first is not None
    assert second is not None
    assert (first.kind, first.at_ms, first.keys, first.agent) == (
        "context",
        AT,
        (("laptop", "1"), ("vm", "2")),
        "codex",
    )
    assert (second.kind, len(second.keys), second.agent) == ("mcp_search", MAX_KEYS, None)
    assert first.use_id != second.use_id


@pytest.mark.parametrize("line", [b"{", b'{"id": "x"}', b'{"id":"x","kind":"context","at":"soon","keys":[]}', b"[]"])
def test_a_line_that_is_not_a_use_reads_as_none(line: bytes) -> None:
    assert parse(line) is None


def test_a_spool_that_cannot_be_written_or_is_full_drops_the_use_in_one_sentence(tmp_path: Path) -> None:
    assert note(tmp_path / "no-daemon-ran-here" / "s.uses", "context", [("a", "1")], at_ms=AT) is None
    (tmp_path / "a-folder.uses").mkdir()
    said = note(tmp_path / "a-folder.uses", "context", [("a", "1")], at_ms=AT)
    assert said is not None
    assert "cannot write the use spool" in said
    spool = tmp_path / "s.uses"
    assert note(spool, "context", [("a", "1")], at_ms=AT, max_bytes=120) is None
    full = note(spool, "context", [("a", "1")], at_ms=AT, max_bytes=120)
    assert full is not None
    assert "is full" in full
    assert len(list(read(spool))) == 1


def test_a_fold_sends_every_use_once_and_skips_what_is_not_one(tmp_path: Path, hub: HubBackbone) -> None:
    spool = tmp_path / "s.uses"
    note(spool, "context", [("laptop", "1"), ("laptop", "2")], at_ms=AT, agent="claude-code")
    with spool.open("ab") as f:
        f.write(b'{"torn": \n')
        f.write(b'{"id":"x","kind":"peeked","at":1,"keys":[["laptop","1"]]}\n')
    note(spool, "get_episode", [("laptop", "1"), ("laptop", "404")], at_ms=AT + 5)
    assert fold(spool, hub) == Folded(uses=2, counted=3, skipped=2)
    assert not spool.exists()
    assert not taken_path(spool).exists()
    totals = hub.use_totals()
    assert {k: t.access_count for k, t in totals.items()} == {("laptop", "1"): 2, ("laptop", "2"): 1}
    assert fold(spool, hub) == Folded()  # nothing left


class Flaky:
    """A backbone that is down for its first call."""

    def __init__(self, hub: HubBackbone) -> None:
        self.hub = hub
        self.calls = 0

    def record_uses(self, events: Sequence[UseEvent]) -> int:
        self.calls += 1
        if self.calls == 1:
            raise BackboneUnavailable("the hub is busy")
        return self.hub.record_uses(events)

    def use_totals(self, keys: Sequence[MemoryKey] | None = None) -> dict[MemoryKey, UseTotals]:
        raise NotImplementedError

    def pin(self, site: str, source_id: str, *, pinned: bool, by: str) -> bool:
        raise NotImplementedError


def test_a_fold_that_fails_keeps_its_uses_for_the_next_and_new_uses_wait_their_turn(
    tmp_path: Path, hub: HubBackbone
) -> None:
    spool = tmp_path / "s.uses"
    note(spool, "context", [("laptop", "1")], at_ms=AT)
    flaky = Flaky(hub)
    with pytest.raises(BackboneUnavailable):
        fold(spool, flaky)
    assert taken_path(spool).exists()
    note(spool, "context", [("laptop", "2")], at_ms=AT)  # written to a new spool, not the taken one
    assert spool.exists()
    assert fold(spool, flaky) == Folded(uses=1, counted=1, skipped=0)  # the taken file first
    assert fold(spool, hub) == Folded(uses=1, counted=1, skipped=0)
    assert set(hub.use_totals()) == {("laptop", "1"), ("laptop", "2")}


def test_a_fold_that_died_after_the_backbone_committed_counts_nothing_twice(tmp_path: Path, hub: HubBackbone) -> None:
    spool = tmp_path / "s.uses"
    note(spool, "context", [("laptop", "1")], at_ms=AT)
    taken = take(spool)
    assert taken is not None
    (noted,) = list(read(taken))
    assert noted is not None
    hub.record_uses([UseEvent(noted.use_id, noted.kind, noted.at_ms, noted.keys)])  # then the fold died
    assert fold(spool, hub) == Folded(uses=1, counted=0, skipped=0)
    assert hub.use_totals()[("laptop", "1")].access_count == 1


def test_the_salience_table_reads_the_fleets_use_and_keeps_what_it_had_when_the_backbone_cannot_say(
    hub: HubBackbone,
) -> None:
    from sync.policy.salience import DAY_MS as DAY
    from sync.usage.table import SalienceTable

    hub.record_uses([UseEvent("u-1", "get_episode", AT, (("laptop", "1"),))])
    hub.pin("laptop", "2", pinned=True, by="ann")
    now = [AT / 1000]
    table = SalienceTable(hub, clock=lambda: now[0])
    assert table.of("laptop", "1") == 0.5  # nothing read yet: every memory at the initial value
    assert table.refresh()
    used, pinned, unused = table.of("laptop", "1"), table.of("laptop", "2"), table.of("laptop", "3", AT - 400 * DAY)
    assert used > 0.5
    assert pinned == 1.0
    assert unused == 0.5  # its age is the recency decay's to weigh, not counted twice
    now[0] += 300 * DAY / 1000
    assert table.of("laptop", "1") < 0.5  # used once, long ago: faded below a memory never used
    flaky = SalienceTable(Flaky(hub))
    assert not flaky.refresh()
    assert flaky.of("laptop", "1") == 0.5
