"""contracts/settings.json: the settings the hub and the Convex deployment share, with the daemons'
names and defaults (cloud_functions/settings.test.ts holds the deployment to the same file); what
Convex cannot honour, `memsync` refuses on a Convex site with one sentence, exit 78."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from contract import contract

from daemon.config import ENV_PREFIX, Settings, load_settings
from sync.errors import ConfigError

CONTRACT = contract("settings.json")["settings"]
HONOURED = [s for s in CONTRACT if s["convex"] == "honoured"]
REFUSED = [s for s in CONTRACT if s["convex"] == "refused"]
MINIMAL = '[site]\nname = "laptop"\n[agentdb]\npath = "agentdb.db"\n'


def value(settings: Settings, key: str) -> Any:
    section, name = key.split(".")
    return getattr(getattr(settings, section), name)


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for entry in HONOURED:
        monkeypatch.delenv(entry["env"], raising=False)
    path = tmp_path / "site.toml"
    path.write_text(MINIMAL, encoding="utf-8")
    return path


def test_the_file_names_each_setting_once() -> None:
    keys = [s["key"] for s in CONTRACT]
    assert len(keys) == len(set(keys))
    assert HONOURED
    assert REFUSED


@pytest.mark.parametrize("entry", CONTRACT, ids=lambda s: s["key"])
def test_the_hubs_default_is_the_files(entry: dict[str, Any], config: Path) -> None:
    assert value(load_settings(config), entry["key"]) == entry["default"]


@pytest.mark.parametrize("entry", HONOURED, ids=lambda s: s["key"])
def test_the_hub_reads_the_same_variable_the_same_way(
    entry: dict[str, Any], config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert entry["env"] == ENV_PREFIX + entry["key"].upper().replace(".", "__")
    monkeypatch.setenv(entry["env"], entry["example"]["env"])
    read = value(load_settings(config), entry["key"])
    assert read == entry["example"]["value"]
    assert read != entry["default"]


@pytest.mark.parametrize(
    ("variable", "raw"),
    [
        ("MEMSYNC_JOBS__APPROVAL_TIMEOUTS", '{"send_message": -5}'),
        ("MEMSYNC_JOBS__STALE_AFTER", "inf"),
        ("MEMSYNC_ALERTS__REMINDERS", "[1, -4]"),
        ("MEMSYNC_ALERTS__GRACE", '{"offline": -1}'),
        ("MEMSYNC_ALERTS__APPROVAL_LEAD", "nan"),
    ],
)
def test_the_hub_refuses_what_the_deployment_refuses(
    variable: str, raw: str, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, raw)
    with pytest.raises(ConfigError, match=variable):
        load_settings(config)
