"""The fleet's use of its memories and their pins (``sync.backbone.base.Uses``), through the backbone
conformance suite's sites: the same calls give the same results on the embedded hub and on Convex
(the real cloud_functions in the local server)."""

from __future__ import annotations

import pytest
from test_backbone_conformance import OpenSite, item, open_site

from sync.backbone.base import UseEvent
from sync.errors import BackboneRejected

__all__ = ["open_site"]  # the suite's fixture, one site a backbone

AT = 1_800_000_000_000


def test_uses_add_up_per_memory_by_kind_and_an_event_counts_once(open_site: OpenSite) -> None:
    laptop, vm = open_site("laptop"), open_site("vm")
    laptop.backbone.push([item(1), item(2)], cursor=2)
    one, two = (laptop.site, "1"), (laptop.site, "2")
    handed = UseEvent("u-1", "context", AT, (one, two), agent="claude-code")
    opened = UseEvent("u-2", "get_episode", AT + 5_000, (one,), agent="codex")
    # Another site's agent uses the laptop's memories; the same event twice (a fold that died
    # after the backbone committed), and one memory twice in one event, count once.
    assert vm.backbone.record_uses([handed, opened]) == 3
    assert vm.backbone.record_uses([handed]) == 0
    assert vm.backbone.record_uses([UseEvent("u-3", "mcp_search", AT - 1_000, (two, two))]) == 1

    totals = laptop.backbone.use_totals([one, two, (laptop.site, "99")])
    assert set(totals) == {one, two}
    assert (totals[one].access_count, totals[one].last_accessed, dict(totals[one].by_kind)) == (
        2,
        AT + 5_000,
        {"context": 1, "get_episode": 1},
    )
    # The latest use wins whatever order uses arrive in.
    assert (totals[two].access_count, totals[two].last_accessed, dict(totals[two].by_kind)) == (
        2,
        AT,
        {"context": 1, "mcp_search": 1},
    )
    assert not totals[one].pinned
    everything = {k: t for k, t in vm.backbone.use_totals().items() if laptop.ours(k[0])}
    assert everything == totals


def test_a_memory_the_backbone_does_not_hold_is_not_counted(open_site: OpenSite) -> None:
    laptop = open_site("laptop")
    laptop.backbone.push([item(1)], cursor=1)
    laptop.backbone.forget("1")
    event = UseEvent("u-1", "cli_search", AT, ((laptop.site, "1"), (laptop.site, "404")))
    assert laptop.backbone.record_uses([event]) == 0
    assert laptop.backbone.use_totals([(laptop.site, "1"), (laptop.site, "404")]) == {}


def test_a_kind_neither_backbone_knows_is_refused_in_one_sentence(open_site: OpenSite) -> None:
    laptop = open_site("laptop")
    laptop.backbone.push([item(1)], cursor=1)
    with pytest.raises(BackboneRejected, match="context, mcp_search, cli_search, get_episode, related"):
        laptop.backbone.record_uses([UseEvent("u-1", "peeked", AT, ((laptop.site, "1"),))])
    assert laptop.backbone.use_totals([(laptop.site, "1")]) == {}


def test_pins_are_set_by_any_site_and_cleared(open_site: OpenSite) -> None:
    laptop, vm = open_site("laptop"), open_site("vm")
    laptop.backbone.push([item(1), item(2)], cursor=2)
    one, two = (laptop.site, "1"), (laptop.site, "2")
    assert vm.backbone.pin(*one, pinned=True, by="ann") is True
    assert vm.backbone.pin(laptop.site, "404", pinned=True, by="ann") is False
    pinned = laptop.backbone.use_totals([one])[one]
    assert (pinned.pinned, pinned.pinned_by, pinned.access_count, pinned.last_accessed) == (True, "ann", 0, None)
    assert pinned.pinned_at is not None
    assert pinned.pinned_at > 0
    # Use after a pin keeps the pin; clearing it keeps the use.
    laptop.backbone.record_uses([UseEvent("u-1", "related", AT, (one, two))])
    assert laptop.backbone.use_totals([one])[one].pinned
    assert laptop.backbone.pin(*one, pinned=False, by="bob") is True
    cleared = laptop.backbone.use_totals([one])[one]
    assert (cleared.pinned, cleared.pinned_by, cleared.access_count) == (False, None, 1)
    # A memory pinned and unpinned without a use has nothing left to say.
    assert laptop.backbone.pin(*two, pinned=True, by="ann")
    assert laptop.backbone.pin(*two, pinned=False, by="ann")
    assert laptop.backbone.use_totals([two])[two].access_count == 1


def test_forgetting_a_memory_removes_its_uses_and_its_pin(open_site: OpenSite) -> None:
    laptop, vm = open_site("laptop"), open_site("vm")
    laptop.backbone.push([item(1), item(2)], cursor=2)
    one, two = (laptop.site, "1"), (laptop.site, "2")
    vm.backbone.record_uses([UseEvent("u-1", "context", AT, (one, two))])
    vm.backbone.pin(*one, pinned=True, by="ann")
    laptop.backbone.forget("1")
    assert set(vm.backbone.use_totals([one, two])) == {two}
    assert one not in vm.backbone.use_totals()
    # The event delivered again after the forget does not bring it back.
    assert vm.backbone.record_uses([UseEvent("u-1", "context", AT, (one, two))]) == 0
    assert set(vm.backbone.use_totals([one, two])) == {two}


def test_many_uses_at_once_are_all_counted(open_site: OpenSite) -> None:
    """More events than one call takes (Convex cuts them into calls within its limits), and an
    event naming more memories than one call takes."""
    laptop = open_site("laptop")
    laptop.backbone.push([item(i) for i in range(1, 61)], cursor=60)
    every = tuple((laptop.site, str(i)) for i in range(1, 61))
    events = [UseEvent(f"u-{n}", "context", AT + n, every[n % 50 : n % 50 + 3]) for n in range(150)]
    events.append(UseEvent("wide", "related", AT, every))
    assert laptop.backbone.record_uses(events) == 150 * 3 + 60
    totals = laptop.backbone.use_totals(list(every))
    assert sum(t.access_count for t in totals.values()) == 150 * 3 + 60
    assert all(t.by_kind.get("related") == 1 for t in totals.values())
