"""Tier: unit. docs/ARCHITECTURE.md's map matches the tree, as tests/test_import_graph.py holds the
imports: every package folder under daemon/ and sync/ (sub-packages included) and every loose
module at their top is named in the map; every daemon/ or sync/ path the map names exists; and a
module a folder's row names (`runner.py` in the `daemon/loop/` row) is in that folder; and every
daemon/ or sync/ path named anywhere in ARCHITECTURE.md, the design essays or the guides exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("daemon", "sync")
SPAN = re.compile(r"`([^`\n]+)`")


def the_map(text: str) -> str:
    """The map section: from `## The map` to the next `## ` heading."""
    start = text.index("\n## The map\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def named_paths(section: str) -> set[str]:
    """Every daemon/ or sync/ path in a code span, as written (a folder ends in /)."""
    return {
        span.rstrip(",.;:")
        for span in SPAN.findall(section)
        if span.split("/")[0] in PACKAGES and "/" in span and " " not in span
    }


def folders(root: Path) -> set[str]:
    """Every package folder under daemon/ and sync/, as `daemon/alerts/`."""
    return {
        f"{init.parent.relative_to(root).as_posix()}/"
        for package in PACKAGES
        for init in (root / package).rglob("__init__.py")
        if init.parent != root / package
    }


def loose_modules(root: Path) -> set[str]:
    return {
        f"{package}/{path.name}"
        for package in PACKAGES
        for path in (root / package).glob("*.py")
        if path.name != "__init__.py"
    }


def problems(text: str, root: Path) -> list[str]:
    section = the_map(text)
    named = named_paths(section)
    found = []
    found += [f"the map does not name the folder {f}" for f in sorted(folders(root) - named)]
    found += [f"the map does not name the module {m}" for m in sorted(loose_modules(root) - named)]
    for path in sorted(named):
        target = root / path
        if path.endswith("/") and not target.is_dir():
            found.append(f"the map names {path}, which is not a folder")
        elif not path.endswith("/") and not target.exists():
            found.append(f"the map names {path}, which does not exist")
    for row in section.splitlines():
        cells = row.split("|")
        if len(cells) < 4:
            continue
        heads = named_paths(cells[1])
        if len(heads) != 1 or not next(iter(heads)).endswith("/"):
            continue
        folder = root / next(iter(heads))
        for span in SPAN.findall("|".join(cells[2:])):
            if re.fullmatch(r"[\w]+\.py", span) and not any(folder.rglob(span)):
                found.append(f"the map's row for {next(iter(heads))} names {span}, which is not in it")
    return found


def test_the_map_matches_the_tree() -> None:
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    found = problems(text, ROOT)
    assert not found, "docs/ARCHITECTURE.md's map and the tree disagree:\n" + "\n".join(found)


def tree(root: Path, *files: str) -> Path:
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("", encoding="utf-8")
    return root


MAP = """# x

## The map

| where | what |
| --- | --- |
| `daemon/alerts/` | alerts: `machine.py`, `store.py` |
| `daemon/config.py` | settings |
| `sync/backbone/` | `base.py` |
| `sync/backbone/hub/` | the hub |

## Invariants

`daemon/gone/` is outside the map and not checked.
"""


def test_a_tree_the_map_describes_has_no_problems(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        "daemon/__init__.py",
        "daemon/config.py",
        "daemon/alerts/__init__.py",
        "daemon/alerts/machine.py",
        "daemon/alerts/store.py",
        "sync/__init__.py",
        "sync/backbone/__init__.py",
        "sync/backbone/base.py",
        "sync/backbone/hub/__init__.py",
    )
    assert problems(MAP, root) == []


def test_each_kind_of_drift_is_named(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        "daemon/__init__.py",
        "daemon/config.py",
        "daemon/routing.py",  # a loose module the map leaves out
        "daemon/alerts/__init__.py",
        "daemon/alerts/machine.py",  # store.py moved away
        "daemon/telegram/__init__.py",  # a folder the map leaves out
        "sync/__init__.py",
        "sync/backbone/__init__.py",
        "sync/backbone/base.py",
        # sync/backbone/hub/ moved away
    )
    assert problems(MAP, root) == [
        "the map does not name the folder daemon/telegram/",
        "the map does not name the module daemon/routing.py",
        "the map names sync/backbone/hub/, which is not a folder",
        "the map's row for daemon/alerts/ names store.py, which is not in it",
    ]


def missing_paths(text: str, root: Path) -> list[str]:
    """The daemon/ and sync/ paths a doc names in code that the tree does not have."""
    return sorted(
        path
        for path in named_paths(text)
        if not ((root / path).is_dir() if path.endswith("/") else (root / path).exists())
    )


def test_every_code_path_the_docs_name_exists() -> None:
    docs = [ROOT / "docs" / "ARCHITECTURE.md", *sorted((ROOT / "docs" / "design").glob("*.md"))]
    docs += sorted((ROOT / "docs" / "guides").glob("*.md"))
    found = {
        str(doc.relative_to(ROOT)): missing
        for doc in docs
        if (missing := missing_paths(doc.read_text(encoding="utf-8"), ROOT))
    }
    assert not found, f"docs name daemon/ or sync/ paths that do not exist: {found}"
    assert missing_paths("`sync/search/indexing/indexer.py` and `daemon/nowhere/`", ROOT) == ["daemon/nowhere/"]
