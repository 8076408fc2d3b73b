"""The hub-only tables of the alerts file, kept by their users: the Telegram poller's lease and
position (``daemon.telegram.poller``) and the approvals whose message may need an edit
(``daemon.hubserver.tracked``). Real SQLite files; the store's clock is the seam."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

from daemon.alerts.store import AlertStore
from daemon.hubserver.tracked import TrackedApprovals
from daemon.telegram.poller import PollerLease


def test_one_daemon_polls_until_its_lease_lapses_or_it_lets_go(tmp_path: Path) -> None:
    now = [1_000.0]
    path = tmp_path / "alerts.db"
    with closing(AlertStore(path, clock=lambda: now[0])) as one, closing(AlertStore(path, clock=lambda: now[0])) as two:
        first, second = PollerLease(one), PollerLease(two)
        assert first.hold("laptop", 30_000)
        assert not second.hold("vm", 30_000)  # a bot token allows one poller
        assert first.hold("laptop", 30_000)  # renewed by its holder
        now[0] += 31
        assert second.hold("vm", 30_000)  # lapsed: taken over
        assert not first.hold("laptop", 30_000)
        first.release("laptop")  # not its lease to let go
        assert not first.hold("laptop", 30_000)
        second.release("vm")
        assert first.hold("laptop", 30_000)

        assert first.update_offset() is None
        first.set_update_offset(42)
        assert second.update_offset() == 42  # where the next poll starts, whoever polls


def test_followed_approvals_are_kept_in_the_alerts_file(tmp_path: Path) -> None:
    path = tmp_path / "alerts.db"
    with closing(AlertStore(path)) as store:
        followed = TrackedApprovals(store)
        followed.track("a1", "pending", 0)
        followed.track("a2", "pending", 0)
        followed.track("a1", "pending", 1)
        followed.untrack("a2")
    with closing(AlertStore(path)) as store:
        assert TrackedApprovals(store).tracked() == {"a1": ("pending", 1)}
