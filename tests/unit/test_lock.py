"""The lock installs the same environment on any machine: complete, in step with pyproject.toml,
with the constraints file made from it, and what this venv holds."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from lockfile import constraints, normalise, pins
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements" / "dev.txt"


def lock_pins() -> dict[str, str]:
    return pins(LOCK.read_text(encoding="utf-8"))


def declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    return [Requirement(text) for text in [*project["dependencies"], *extras["cloud"], *extras["dev"]]]


def test_the_constraints_file_is_the_lock_without_hashes() -> None:
    written = (ROOT / "requirements" / "constraints.txt").read_text(encoding="utf-8")
    assert written == constraints(LOCK.read_text(encoding="utf-8")), "run `make constraints`"


def test_pins_are_read_whatever_the_line_carries() -> None:
    text = "Foo_Bar==1.2.3 \\\n    --hash=sha256:ab\n    # via x\nbaz==0.1 ; python_version < '4'\n# c==9\n"
    assert pins(text) == {"foo-bar": "1.2.3", "baz": "0.1"}


@pytest.mark.parametrize("requirement", declared(), ids=str)
def test_every_declared_dependency_is_locked_within_its_range(requirement: Requirement) -> None:
    locked = lock_pins().get(normalise(requirement.name))
    assert locked is not None, f"{requirement.name} is not in requirements/dev.txt"
    assert requirement.specifier.contains(locked, prereleases=True), f"{requirement} but the lock has {locked}"


def test_the_venv_holds_exactly_the_lock() -> None:
    """`make bootstrap` installs the lock without resolving; every locked version is what is here,
    and every requirement of what is here is met (what `pip check` says, asked of the metadata)."""
    locked = lock_pins()
    installed = {normalise(d.metadata["Name"]): d for d in metadata.distributions()}
    for name, version in locked.items():
        assert name in installed, f"{name} is locked but not installed"
        assert installed[name].version == version, f"{name}: {installed[name].version} installed, {version} locked"
    for name, dist in installed.items():
        if name not in locked:
            continue
        for text in dist.requires or []:
            need = Requirement(text)
            if need.marker is not None and not need.marker.evaluate({"extra": ""}):
                continue
            have = installed.get(normalise(need.name))
            assert have is not None, f"{name} needs {need}, which the lock lacks"
            assert need.specifier.contains(have.version, prereleases=True), f"{name} needs {need}, has {have.version}"


def test_the_run_loads_only_the_plugins_it_names(pytestconfig: pytest.Config) -> None:
    """pyproject.toml names the suite's pytest plugins; no installed package's pytest11 entry point
    joins the run on its own (langsmith, which voyageai brings in, registers one)."""
    manager = pytestconfig.pluginmanager
    assert [dist.project_name for _, dist in manager.list_plugin_distinfo()] == []
    loaded = {getattr(plugin, "__name__", "").partition(".")[0] for plugin in manager.get_plugins()}
    assert {"pytest_timeout", "xdist"} <= loaded
    assert not loaded & {"langsmith", "anyio"}
