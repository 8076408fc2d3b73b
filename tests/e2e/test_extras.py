"""A provider configured without its package: one sentence naming the `cloud` extra, exit 78.

The package is taken away at the lowest seam there is, the import system of the child process
(a sitecustomize that marks the modules absent, as Python does for a module that failed to
import), so memsync's own code runs unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import SiteFiles, memsync
from fake_providers import KEY, gemini_respond, serve

HIDE = "import sys\nfor name in {names!r}:\n    sys.modules[name] = None\n"


def without(tmp_path: Path, *modules: str) -> dict[str, str]:
    """An environment whose Python cannot import ``modules``."""
    folder = tmp_path / "site-hide"
    folder.mkdir(exist_ok=True)
    (folder / "sitecustomize.py").write_text(HIDE.format(names=list(modules)), encoding="utf-8")
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "MEMSYNC_WARM__API_KEY": "k-0123456789"}


@pytest.mark.parametrize(
    ("embedder", "modules", "package"),
    [
        ("gemini", ("google.genai", "google.genai.types"), "google-genai"),
        ("voyage", ("voyageai", "voyageai.client"), "voyageai"),
    ],
)
def test_a_cloud_embedder_without_its_package_names_the_extra(
    site_files: Callable[..., SiteFiles],
    make_agentdb: Callable[..., Path],
    short_dir: Path,
    tmp_path: Path,
    embedder: str,
    modules: tuple[str, ...],
    package: str,
) -> None:
    warm = (
        f'path = "{tmp_path / "warm"}"\nsocket = "{short_dir / "w.sock"}"\n'
        f'embedder = "{embedder}"\nbase_url = "http://127.0.0.1:9"\n'
    )
    site = site_files("laptop", make_agentdb(3), warm=warm)
    for command in (["sync"], ["search", "deploy"]):
        done = memsync(*command, "--config", str(site.config), env=without(tmp_path, *modules))
        assert done.returncode == 78, (command, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
        lines = [line for line in done.stderr.splitlines() if package in line]
        assert len(lines) == 1, done.stderr
        assert "memsync[cloud]" in lines[0]
        assert "k-0123456789" not in done.stderr


def test_the_same_site_with_the_package_searches(
    site_files: Callable[..., SiteFiles], make_agentdb: Callable[..., Path], short_dir: Path, tmp_path: Path
) -> None:
    """The positive control: the same environment seam hiding nothing, the fake Gemini answering."""
    for gemini in serve(gemini_respond):
        warm = (
            f'path = "{tmp_path / "warm"}"\nsocket = "{short_dir / "w.sock"}"\n'
            f'embedder = "gemini"\nbase_url = "{gemini.url}"\n'
        )
        site = site_files("laptop", make_agentdb(3), warm=warm)
        env = {**without(tmp_path, "nothing.hidden"), "MEMSYNC_WARM__API_KEY": KEY}
        done = memsync("sync", "--config", str(site.config), env=env)
        assert done.returncode == 0, done.stderr
        assert "memsync[cloud]" not in done.stderr
        assert gemini.requests
