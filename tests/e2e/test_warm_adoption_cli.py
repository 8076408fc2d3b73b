"""Tier: e2e. Adopting a search collection through the CLI in a child process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from conftest import SiteFiles, memsync, warm_section
from test_warm_adoption import SEED


def test_the_command_says_adoption_is_for_a_qdrant_server(
    site_files: Callable[..., SiteFiles], short_dir: Path, tmp_path: Path
) -> None:
    site = site_files(warm=warm_section(tmp_path, short_dir))
    done = memsync("adopt-collection", SEED, "--config", str(site.config))
    assert done.returncode == 78, done.stderr
    assert "adopting a collection is for a Qdrant server (warm.store = 'qdrant')" in done.stderr
    assert "Traceback" not in done.stderr
