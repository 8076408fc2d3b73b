"""Where things are: the repository, the folders of the real agentdb package's scripts, and whether
their npm packages are installed."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GEN = ROOT / "tests" / "agentdb_gen"  # agentdb 1.6.1 (sql.js): generate.mjs, agent.mjs, load.mjs
V139 = ROOT / "tests" / "agentdb_variants" / "v139"  # agentdb 1.3.9 (better-sqlite3, WAL): writer.mjs
V3ALPHA = ROOT / "tests" / "agentdb_variants" / "v3alpha"  # agentdb 3.0 alpha (saves by rename)


def node_modules_missing(folder: Path) -> str | None:
    """The sentence to say when ``folder``'s npm packages are not installed; None when they are."""
    if (folder / "node_modules").is_dir():
        return None
    return f"{folder}/node_modules is missing: run `make node` (make test does it)"


def need_node_modules(folder: Path) -> None:
    """Raise with that sentence when ``folder``'s npm packages are not installed."""
    if (missing := node_modules_missing(folder)) is not None:
        raise RuntimeError(missing)
