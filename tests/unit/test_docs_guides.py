"""Tier: unit. The docs name only what exists: every `memsync COMMAND [SUBCOMMAND]` in code in
README.md and docs/ (guides, design, benchmarks, ARCHITECTURE) is a command of the CLI's parser,
every `section.key` a setting, every relative link a file; the Convex guide's table names every
setting contracts/settings.json says the deployment reads; `memsync docs` finds the guides in a
checkout and where a wheel installs them, and prints them."""

from __future__ import annotations

import argparse
import json
import re
import tomllib
from pathlib import Path

import pytest
from pydantic import BaseModel

from daemon.cli.app import parser
from daemon.cli.common import Exit
from daemon.cli.setup import docs as docs_command
from daemon.config import Settings
from daemon.docs import configuration, guides
from daemon.schedule.policy.job_table import JOB_NAMES

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
CODE = re.compile(r"```.*?```|`[^`\n]+`", re.DOTALL)
COMMAND = re.compile(r"(?<![\w/.-])memsync ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?")
KEY = re.compile(r"(?<![\w.\[/-])([a-z_]+)\.([a-z_]+)(?![\w/(.-])")
FILE_KINDS = {"py", "ts", "toml", "json", "md", "db", "sock", "mjs", "txt", "env", "log", "service", "plist", "gz"}
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def commands() -> dict[str, set[str]]:
    """Each command and the names of its subcommands (empty for a command without any)."""
    found: dict[str, set[str]] = {}
    for action in parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[name] = {
                    child
                    for inner in sub._actions
                    if isinstance(inner, argparse._SubParsersAction)
                    for child in inner.choices
                }
    return found


def named_commands(text: str) -> list[tuple[str, str | None]]:
    return [(match.group(1), match.group(2)) for code in CODE.findall(text) for match in COMMAND.finditer(code)]


def test_the_finder_sees_a_command_that_does_not_exist() -> None:
    text = "Run `memsync fleet -c F` or\n```sh\nmemsync archive lsit\n```\nand memsync fleet in prose."
    assert named_commands(text) == [("fleet", None), ("archive", "lsit")]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_command_named_exists(path: Path) -> None:
    known = commands()
    wrong = []
    for command, sub in named_commands(path.read_text(encoding="utf-8")):
        if command not in known:
            wrong.append(f"memsync {command}")
        elif known[command] and sub is not None and sub not in known[command]:
            wrong.append(f"memsync {command} {sub}")
    assert not wrong, f"{path.name} names commands that do not exist: {', '.join(sorted(set(wrong)))}"


def settings_keys() -> dict[str, set[str]]:
    sections: dict[str, set[str]] = {}
    for name, field in Settings.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            sections[name] = set(field.annotation.model_fields)
    sections["jobs"] |= set(JOB_NAMES)
    return sections


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_setting_named_exists(path: Path) -> None:
    sections = settings_keys()
    wrong = {
        f"{section}.{key}"
        for code in CODE.findall(path.read_text(encoding="utf-8"))
        for section, key in KEY.findall(code)
        if section in sections and key not in sections[section]
        if key not in FILE_KINDS and not (ROOT / section / key).exists() and not (ROOT / section / f"{key}.py").exists()
    }
    assert not wrong, f"{path.name} names settings that do not exist: {', '.join(sorted(wrong))}"


# A path in the repository as the docs write it: a top-level folder, then a file with its suffix.
TOP = "daemon|sync|tests|bench|cloud_functions|contracts|config|systemd|requirements"
REPO_PATH = re.compile(rf"^(?:{TOP})/[\w./-]+\.\w+$")


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_file_of_the_repository_named_exists(path: Path) -> None:
    if path.name == "history.md":
        return  # a dated record: the paths of its day
    named = {span.strip("`") for span in CODE.findall(path.read_text(encoding="utf-8")) if "\n" not in span}
    missing = sorted(
        n
        for n in named
        if REPO_PATH.match(n) and "*" not in n and not n.startswith("bench/results/") and not (ROOT / n).exists()
    )
    assert not missing, f"{path.relative_to(ROOT)} names files that do not exist: {', '.join(missing)}"


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_somewhere(path: Path) -> None:
    broken = [
        target
        for target in LINK.findall(path.read_text(encoding="utf-8"))
        if "://" not in target and not (path.parent / target).exists()
    ]
    assert not broken, f"{path.relative_to(ROOT)} links to nothing: {', '.join(broken)}"


def test_the_convex_guide_names_every_setting_the_deployment_reads() -> None:
    contract = json.loads((ROOT / "contracts" / "settings.json").read_text(encoding="utf-8"))["settings"]
    table = (ROOT / "docs" / "guides" / "convex.md").read_text(encoding="utf-8")
    for entry in contract:
        assert f"`{entry['key']}`" in table, entry["key"]
        if entry["env"]:
            assert f"`{entry['env']}`" in table, entry["env"]


def test_the_guides_are_found_in_a_checkout_and_in_an_install(tmp_path: Path) -> None:
    package = tmp_path / "src" / "daemon"
    data = tmp_path / "venv"
    assert guides.candidates(package, data) == [tmp_path / "src" / "docs" / "guides", data / guides.INSTALLED]
    assert guides.folder() == ROOT / "docs" / "guides"
    # What a wheel installs them as: pyproject.toml's data-files put docs/guides/*.md there.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["tool"]["setuptools"]["data-files"][str(guides.INSTALLED)] == ["docs/guides/*.md"]


def test_memsync_docs_lists_and_prints(capsys: pytest.CaptureFixture[str]) -> None:
    assert docs_command.main(argparse.Namespace(topic=None)) == 0
    listing = capsys.readouterr().out
    folder = guides.folder()
    assert folder is not None
    for topic, title in guides.topics(folder).items():
        assert f"{topic}  " in listing
        assert title in listing
    assert "configuration  Configuration reference" in listing
    assert docs_command.main(argparse.Namespace(topic="configuration")) == 0
    assert capsys.readouterr().out == configuration.render()
    assert docs_command.main(argparse.Namespace(topic="privacy")) == 0
    assert capsys.readouterr().out == (folder / "privacy.md").read_text(encoding="utf-8")


def test_memsync_docs_refuses_an_unknown_topic_naming_the_known(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(Exit) as stopped:
        docs_command.main(argparse.Namespace(topic="nope"))
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "no guide named 'nope'" in err
    assert "privacy" in err
    assert "configuration" in err
