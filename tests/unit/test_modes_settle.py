"""Tier: unit. Bringing memsync's files to their modes over paths listed a moment ago: a file gone
since (a SQLite ``-journal`` another daemon's commit deleted) is passed over, never an error."""

from __future__ import annotations

import grp
import os
import stat
from pathlib import Path

from daemon.modes import PRIVATE_UMASK, settle_paths


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_a_private_file_is_tightened_and_one_gone_since_listed_is_passed_over(tmp_path: Path) -> None:
    hub = tmp_path / "hub.db"
    hub.write_bytes(b"")
    os.chmod(hub, 0o644)
    gone = tmp_path / "hub.db-journal"  # listed, then deleted by another daemon's commit
    changed = settle_paths([hub, gone, tmp_path / "state.json"], [], PRIVATE_UMASK, None)
    assert changed == [hub]
    assert mode(hub) == 0o600


def test_a_shared_file_gone_since_listed_is_passed_over(tmp_path: Path) -> None:
    group = grp.getgrgid(os.getgid()).gr_name  # a group this user is in: chown to it is allowed
    hub = tmp_path / "hub.db"
    hub.write_bytes(b"")
    os.chmod(hub, 0o600)
    changed = settle_paths([], [hub, tmp_path / "hub.db-journal"], 0o007, group)
    assert changed == [hub]
    assert mode(hub) == 0o660
