"""Tier: e2e. The embedded store's lock holds a second process out."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from test_warm_store import COLLECTION, DIMS, MODEL

from sync.search.stores import EdgeStore


def test_edge_store_second_process_is_locked_out(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from sync.errors import StoreLocked\n"
        "from sync.search.stores import EdgeStore\n"
        "try:\n"
        f"    EdgeStore(sys.argv[1]).open_or_create({COLLECTION!r}, {MODEL!r}, {DIMS})\n"
        "except StoreLocked as exc:\n"
        "    print(exc.path); sys.exit(3)\n"
    )
    with EdgeStore(tmp_path) as owner:
        owner.open_or_create(COLLECTION, MODEL, DIMS)
        done = subprocess.run(
            [sys.executable, "-c", script, str(tmp_path)],
            capture_output=True,
            text=True,
            check=False,
            cwd=Path(__file__).resolve().parents[2],
        )
    assert done.returncode == 3, done.stderr
    assert done.stdout.strip() == str(tmp_path / COLLECTION / "shard")
