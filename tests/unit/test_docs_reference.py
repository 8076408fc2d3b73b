"""Tier: unit. The generated references are what the code says: docs/reference/commands.md is the
CLI's own parser rendered, docs/reference/configuration.md the settings models' fields rendered
(each regenerated here in memory and compared; `make docs` rewrites them), every setting carries
its description."""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel

from daemon.cli.app import parser
from daemon.config import Settings
from daemon.docs import commands, configuration

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference"


def drift(path: Path, expected: str) -> str:
    """'' when the file holds exactly ``expected``; else a short diff and what to run."""
    actual = path.read_text(encoding="utf-8") if path.exists() else ""
    if actual == expected:
        return ""
    diff = difflib.unified_diff(actual.splitlines(), expected.splitlines(), "committed", "from the code", lineterm="")
    return f"{path.name} is out of date: run `make docs`\n" + "\n".join(list(diff)[:40])


def test_the_command_reference_is_the_parser() -> None:
    problem = drift(REFERENCE / "commands.md", commands.render(parser()))
    assert not problem, problem


def test_the_configuration_reference_is_the_settings_models() -> None:
    problem = drift(REFERENCE / "configuration.md", configuration.render())
    assert not problem, problem


def test_the_drift_check_sees_a_change(tmp_path: Path) -> None:
    path = tmp_path / "commands.md"
    text = commands.render(parser())
    path.write_text(text, encoding="utf-8")
    assert drift(path, text) == ""
    path.write_text(text.replace("the daemon: sync every episode until stopped", "the daemon"), encoding="utf-8")
    assert "out of date" in drift(path, text)


def models(model: type[BaseModel]) -> Iterator[tuple[str, type[BaseModel]]]:
    """Every settings model reachable from ``model``: its sections, their tables, list items."""
    yield model.__name__, model
    for field in model.model_fields.values():
        for candidate in (field.annotation, *getattr(field.annotation, "__args__", ())):
            inner = (*getattr(candidate, "__args__", ()), candidate)
            for kind in inner:
                if isinstance(kind, type) and issubclass(kind, BaseModel):
                    yield from models(kind)


def test_every_setting_says_what_it_is() -> None:
    found = dict(models(Settings))
    assert {"SiteDefaults", "JobOverride", "Collaborator", "WarmSection"} <= set(found)
    bare = sorted(
        f"{name}.{key}"
        for name, model in found.items()
        for key, field in model.model_fields.items()
        if name != "Settings" or key not in {"site", "agentdb", "backbone", "state", "sync", "warm", "jobs"}
        if not (isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel))
        if not field.description
    )
    assert not bare, f"settings with no Field(description=...): {', '.join(bare)}"


def test_every_command_and_subcommand_is_in_the_reference() -> None:
    text = commands.render(parser())

    def walk(p: argparse.ArgumentParser) -> Iterator[str]:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield sub.prog
                    yield from walk(sub)

    progs = list(walk(parser()))
    assert {"memsync archive restore", "memsync hooks install", "memsync docs"} <= set(progs)
    missing = [prog for prog in progs if f"# {prog}\n" not in text]
    assert not missing


def test_the_configuration_reference_names_every_variable_and_secret() -> None:
    text = configuration.render()
    for variable in ("MEMSYNC_SITE__NAME", "MEMSYNC_SITE__DEFAULTS__AGENT_NAME", "MEMSYNC_DATA_DIR"):
        assert f"`{variable}`" in text
    assert "`MEMSYNC_BACKBONE__SITE_SECRET` (secret: the environment or `.env` only)" in text
    assert "| `archive_after_days` | number (> 0) | `90` |" in text
