"""Where the guides are: the Markdown files of ``docs/guides/`` in a checkout, or where an install
put them (the wheel's data files, ``<prefix>/share/memsync/docs/guides``), so that a tool install
with no clone has them too (``memsync docs``)."""

from __future__ import annotations

import sysconfig
from collections.abc import Mapping
from pathlib import Path

INSTALLED = Path("share") / "memsync" / "docs" / "guides"  # pyproject.toml's data-files


def candidates(package: Path, data: Path) -> list[Path]:
    """Where to look, in order: the checkout the package runs from, then the install's data files."""
    return [package.parent / "docs" / "guides", data / INSTALLED]


def folder() -> Path | None:
    """The guides' folder for this memsync, or None when it has none (an install without them)."""
    package = Path(__file__).resolve().parents[1]
    for path in candidates(package, Path(sysconfig.get_paths()["data"])):
        if path.is_dir() and any(path.glob("*.md")):
            return path
    return None


def topics(where: Path) -> Mapping[str, str]:
    """Each guide's topic (its file's name) and title (its first heading), in name order."""
    found = {}
    for path in sorted(where.glob("*.md")):
        lines = path.read_text(encoding="utf-8").splitlines()
        title = next((line.lstrip("# ").strip() for line in lines if line.startswith("# ")), path.stem)
        found[path.stem] = title
    return found
