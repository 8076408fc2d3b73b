"""Tier: unit. The import graph of ``daemon/`` and ``sync/``: no cycle among their modules, none
among their folders and loose top-level modules, and ``sync/`` never imports ``daemon/``.

Every import counts, wherever it stands: at module level, inside a function, under
``if TYPE_CHECKING:``. A deferred import is still a dependency of the node that writes it (it only
hides a cycle from the interpreter at load time), and a type in a signature is part of what the
node needs of the other. Relative imports are resolved against the importing module's package.

A node here is a direct subfolder of ``daemon/`` or ``sync/`` (``daemon/alerts``, ``sync/search``),
a folder inside it being one of its rooms (``sync/search/stores`` is part of ``sync/search``), or a
loose module at the top of either package (``daemon/config.py``, ``sync/errors.py``), each its own
node, as is the package's ``__init__``. A loose module is no shared base exempt from the rule: a
folder that takes ``daemon.config``'s ``Settings`` while ``daemon/config.py`` imports that folder
is a cycle.

One kind of room stands apart: a folder's ``policy/`` (``daemon/alerts/policy``) is a node of its
own. It holds the concept's pure rules that the settings read (quiet hours, the job table), so
that ``daemon/config.py`` can compose them while the concept's I/O takes the settings; it must not
import the rest of its folder (that would be a cycle), and the folder's ``__init__``, which
importing it runs first, imports nothing of ours.

Two levels, because each catches what the other cannot: two modules of one folder that import each
other are one node at the folder level (the module level finds them), and a folder's module that
imports a loose module which imports another of the folder's modules is no cycle of modules (the
folder level finds it).
"""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("daemon", "sync")
POLICY = "policy"  # a folder's room of pure rules: a node of its own


@dataclass(frozen=True, slots=True)
class ImportLine:
    """One import statement that makes an edge: where it stands and its first line of source."""

    path: str  # relative to the repository root
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.text}"


def modules_of(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Every module under the packages, by dotted name (a package by its ``__init__``'s name)."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imported_names(tree: ast.Module, module: str, is_package: bool) -> Iterable[tuple[ast.stmt, str]]:
    """Each import in the tree, at any depth, as the dotted names it may load: ``from a.b import c``
    yields ``a.b.c`` (a module, if there is one) and the resolver falls back to ``a.b``."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:
                yield node, f"{source}.{alias.name}"


def resolve(name: str, modules: Mapping[str, Path]) -> str | None:
    """The module of ours that ``name`` loads: itself, or its nearest enclosing module; None when
    it is not ours (the standard library, a dependency)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def node_of_path(path: Path, root: Path) -> str:
    """``daemon/alerts/store.py`` → ``daemon.alerts``; ``sync/search/stores/edge.py`` → ``sync.search``;
    an ``__init__.py`` belongs to the folder it opens; a loose module at a package's top is its own
    node (``daemon/config.py`` → ``daemon.config``), and so is the package's ``__init__.py``
    (``daemon``); a folder's ``policy/`` is a node of its own (``daemon/alerts/policy/quiet.py`` →
    ``daemon.alerts.policy``)."""
    parts = path.relative_to(root).parts
    if len(parts) >= 4 and parts[2] == POLICY:
        return ".".join(parts[:3])
    if len(parts) >= 3:
        return ".".join(parts[:2])
    return ".".join(Path(*parts).with_suffix("").parts).removesuffix(".__init__")


def import_edges(root: Path, packages: Iterable[str]) -> dict[tuple[str, str], list[ImportLine]]:
    """Module → module imports, each with the statements that make it."""
    modules = modules_of(root, packages)
    edges: dict[tuple[str, str], list[ImportLine]] = defaultdict(list)
    for module, path in modules.items():
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source, filename=str(path))
        for node, name in imported_names(tree, module, path.name == "__init__.py"):
            target = resolve(name, modules)
            if target is None or target == module:
                continue
            text = (ast.get_source_segment(source, node) or "").splitlines()[0]
            line = ImportLine(str(path.relative_to(root)), node.lineno, text)
            if line not in edges[module, target]:
                edges[module, target].append(line)
    return edges


@functools.cache
def repo_edges() -> dict[tuple[str, str], list[ImportLine]]:
    """This repository's module imports: parsed once for the tests that read them (seconds each)."""
    return import_edges(ROOT, PACKAGES)


def node_edges(
    edges: Mapping[tuple[str, str], list[ImportLine]], modules: Mapping[str, Path], root: Path
) -> dict[tuple[str, str], list[ImportLine]]:
    """The module edges that cross from one node (a folder, a loose module) to another, grouped by
    the two nodes."""
    nodes: dict[tuple[str, str], list[ImportLine]] = defaultdict(list)
    for (source, target), lines in edges.items():
        a, b = node_of_path(modules[source], root), node_of_path(modules[target], root)
        if a != b:
            nodes[a, b].extend(lines)
    return nodes


def strongly_connected(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, each sorted, the list sorted; iterative, so that a
    deep graph does not meet the recursion limit."""
    nodes = sorted({*graph, *(w for targets in graph.values() for w in targets)})
    successors = {v: sorted(graph.get(v, ())) for v in nodes}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in nodes:
        if start in index:
            continue
        work: list[tuple[str, int]] = [(start, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on_stack.add(v)
            if i < len(successors[v]):
                work.append((v, i + 1))
                w = successors[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                component: list[str] = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                components.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return sorted(components)


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The components of more than one node, and a node that imports itself: each is a cycle."""
    return [c for c in strongly_connected(graph) if len(c) > 1 or c[0] in graph.get(c[0], ())]


def describe(
    cycle: list[str], nodes: Mapping[tuple[str, str], list[ImportLine]], between: str = "folders and modules"
) -> str:
    """A cycle's nodes (folders and loose modules, or modules) and, for each edge inside it, the
    import lines that make it."""
    members = set(cycle)
    lines = [f"import cycle between {between}: {' ⇄ '.join(cycle)}"]
    for (a, b), made_by in sorted(nodes.items()):
        if a in members and b in members:
            lines.append(f"  {a} → {b}:")
            lines.extend(f"    {line}" for line in made_by)
    return "\n".join(lines)


def upward(edges: Mapping[tuple[str, str], list[ImportLine]], *, library: str, program: str) -> list[str]:
    """The import lines by which a module of ``library`` imports one of ``program``."""
    return [
        str(line)
        for (source, target), lines in sorted(edges.items())
        if source.split(".")[0] == library and target.split(".")[0] == program
        for line in lines
    ]


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        pytest.param({}, [], id="empty"),
        pytest.param({"a": ["b"], "b": ["c"]}, [], id="a chain"),
        pytest.param({"a": ["b", "c"], "b": ["d"], "c": ["d"]}, [], id="a diamond"),
        pytest.param({"a": ["b"], "b": ["a"]}, [["a", "b"]], id="two folders"),
        pytest.param({"a": ["a"]}, [["a"]], id="a folder importing itself"),
        pytest.param({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}, [["a", "b", "c"]], id="a triangle and a tail"),
        pytest.param(
            {"a": ["b"], "b": ["a", "c"], "c": ["d"], "d": ["c", "e"]},
            [["a", "b"], ["c", "d"]],
            id="two cycles joined one way",
        ),
        pytest.param(
            {"x": ["y"], "y": ["z"], "z": ["w"], "w": ["y"]}, [["w", "y", "z"]], id="a cycle entered from outside"
        ),
    ],
)
def test_the_cycle_finder_finds_exactly_the_cycles(graph: dict[str, list[str]], expected: list[list[str]]) -> None:
    assert cycles(graph) == expected


def test_a_long_chain_does_not_meet_the_recursion_limit() -> None:
    chain = {f"n{i:05}": [f"n{i + 1:05}"] for i in range(5000)}
    chain["n05000"] = ["n00000"]
    assert len(cycles(chain)) == 1


def write(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def node_graph(nodes: Mapping[tuple[str, str], list[ImportLine]]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in nodes:
        graph[a].add(b)
    return graph


def test_imports_at_any_depth_relative_or_deferred_make_edges(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/base.py": "import json\n",  # a loose module: a node of its own
            "pkg/one/__init__.py": "",
            "pkg/one/thing.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from pkg.two import other\n"
                "def later() -> None:\n"
                "    from ..three.deep import leaf\n"
            ),
            "pkg/two/__init__.py": "from pkg.one import thing\n",
            "pkg/two/other.py": "",
            "pkg/three/__init__.py": "",
            "pkg/three/deep/__init__.py": "",
            "pkg/three/deep/leaf.py": "import json\nfrom pkg import base\n",
        },
    )
    modules = modules_of(tmp_path, ["pkg"])
    nodes = node_edges(import_edges(tmp_path, ["pkg"]), modules, tmp_path)
    assert sorted(nodes) == [
        ("pkg.one", "pkg.three"),
        ("pkg.one", "pkg.two"),
        ("pkg.three", "pkg.base"),
        ("pkg.two", "pkg.one"),
    ]
    assert [str(line) for line in nodes["pkg.one", "pkg.three"]] == [
        "pkg/one/thing.py:5: from ..three.deep import leaf"
    ]
    (cycle,) = cycles(node_graph(nodes))
    message = describe(cycle, nodes)
    assert "pkg.one ⇄ pkg.two" in message
    assert "pkg/one/thing.py:3: from pkg.two import other" in message
    assert "pkg/two/__init__.py:1: from pkg.one import thing" in message


def test_a_cycle_through_a_loose_module_is_a_cycle(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/config.py": "def check() -> None:\n    from pkg.alerts.quiet import parse\n",
            "pkg/paths.py": "from pkg import config\n",  # uses the loose module, no cycle
            "pkg/alerts/__init__.py": "",
            "pkg/alerts/quiet.py": "",
            "pkg/alerts/watch.py": "from pkg.config import check\n",
        },
    )
    nodes = node_edges(import_edges(tmp_path, ["pkg"]), modules_of(tmp_path, ["pkg"]), tmp_path)
    (cycle,) = cycles(node_graph(nodes))
    assert cycle == ["pkg.alerts", "pkg.config"]
    message = describe(cycle, nodes)
    assert "pkg/config.py:2: from pkg.alerts.quiet import parse" in message
    assert "pkg/alerts/watch.py:1: from pkg.config import check" in message
    assert "pkg.paths" not in message


def test_a_policy_room_is_a_node_of_its_own_and_may_not_lean_on_its_folder(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/config.py": "from pkg.alerts.policy.quiet import parse\n",
        "pkg/alerts/__init__.py": "",
        "pkg/alerts/policy/__init__.py": "",
        "pkg/alerts/policy/quiet.py": "",
        "pkg/alerts/watch.py": "from pkg.config import check\nfrom pkg.alerts.policy import quiet\n",
    }
    write(tmp_path, files)
    nodes = node_edges(import_edges(tmp_path, ["pkg"]), modules_of(tmp_path, ["pkg"]), tmp_path)
    assert cycles(node_graph(nodes)) == []
    write(tmp_path, {"pkg/alerts/policy/quiet.py": "from pkg.alerts.store import Store\n", "pkg/alerts/store.py": ""})
    nodes = node_edges(import_edges(tmp_path, ["pkg"]), modules_of(tmp_path, ["pkg"]), tmp_path)
    assert cycles(node_graph(nodes)) == [["pkg.alerts", "pkg.alerts.policy", "pkg.config"]]


def policy_parents_that_import(root: Path, packages: Iterable[str]) -> list[str]:
    """The ``__init__`` of a folder holding a ``policy/`` room, where it imports a module of ours:
    importing the policy runs it first, so it would take the folder's imports along."""
    modules = modules_of(root, packages)
    edges = repo_edges() if (root, list(packages)) == (ROOT, list(PACKAGES)) else import_edges(root, packages)
    rooms = [path.relative_to(root).parts for path in modules.values()]
    parents = {root.joinpath(*parts[:2], "__init__.py") for parts in rooms if len(parts) >= 4 and parts[2] == POLICY}
    return [str(line) for (source, _), lines in sorted(edges.items()) if modules[source] in parents for line in lines]


def test_a_folder_holding_a_policy_room_imports_nothing_in_its_init(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/config.py": "",
            "pkg/alerts/__init__.py": "from pkg.alerts.watch import run\n",
            "pkg/alerts/watch.py": "",
            "pkg/alerts/policy/__init__.py": "",
            "pkg/alerts/policy/quiet.py": "",
            "pkg/telegram/__init__.py": "from pkg import config\n",  # no policy room here
        },
    )
    assert policy_parents_that_import(tmp_path, ["pkg"]) == [
        "pkg/alerts/__init__.py:1: from pkg.alerts.watch import run"
    ]
    assert policy_parents_that_import(ROOT, PACKAGES) == []


def test_no_import_cycles_between_the_folders_and_loose_modules_of_daemon_and_sync() -> None:
    nodes = node_edges(repo_edges(), modules_of(ROOT, PACKAGES), ROOT)
    found = cycles(node_graph(nodes))
    assert not found, "\n\n".join(describe(cycle, nodes) for cycle in found)


def test_a_cycle_inside_one_folder_is_a_cycle_of_modules(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/room/__init__.py": "",
            "pkg/room/a.py": "from pkg.room.b import thing\n",
            "pkg/room/b.py": "def thing() -> None:\n    from pkg.room import c\n",
            "pkg/room/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.room.a import x\n",
            "pkg/room/d.py": "from pkg.room import a\n",  # uses the circle, is not part of it
        },
    )
    modules = modules_of(tmp_path, ["pkg"])
    edges = import_edges(tmp_path, ["pkg"])
    assert cycles(node_graph(node_edges(edges, modules, tmp_path))) == []  # one folder: one node
    (cycle,) = cycles(node_graph(edges))
    assert cycle == ["pkg.room.a", "pkg.room.b", "pkg.room.c"]
    message = describe(cycle, edges, "modules")
    assert "import cycle between modules: pkg.room.a ⇄ pkg.room.b ⇄ pkg.room.c" in message
    assert "pkg/room/b.py:2: from pkg.room import c" in message
    assert "pkg/room/c.py:3: from pkg.room.a import x" in message
    assert "pkg.room.d" not in message


def test_no_import_cycles_between_the_modules_of_daemon_and_sync() -> None:
    edges = repo_edges()
    found = cycles(node_graph(edges))
    assert not found, "\n\n".join(describe(cycle, edges, "modules") for cycle in found)


def test_sync_never_imports_daemon() -> None:
    offending = upward(repo_edges(), library="sync", program="daemon")
    assert not offending, "sync/ imports daemon/ (a library never reaches up into its program):\n" + "\n".join(
        offending
    )


def test_an_import_of_the_program_by_the_library_is_found(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "lib/__init__.py": "",
            "lib/core.py": "def f() -> None:\n    import app.main\n",
            "app/__init__.py": "",
            "app/main.py": "from lib import core\n",
        },
    )
    found = upward(import_edges(tmp_path, ["lib", "app"]), library="lib", program="app")
    assert found == ["lib/core.py:2: import app.main"]
