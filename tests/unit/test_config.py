"""Configuration: file + environment + .env, unknown keys refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT

from daemon.config import load_settings
from sync.errors import ConfigError, PathProblem


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "site.toml"
    path.write_text(text, encoding="utf-8")
    return path


MINIMAL = '[site]\nname = "laptop"\n[agentdb]\npath = "data/agentdb.db"\n'


def test_the_shipped_example_loads() -> None:
    settings = load_settings(ROOT / "config" / "memsync.example.toml")
    assert settings.site.name == "laptop"
    assert settings.site.defaults.attribution().agent_platform == "claude-code"
    assert settings.agentdb.path == Path("~/.agentdb/agentdb.db").expanduser()


def test_relative_paths_are_relative_to_the_file_and_defaults_follow_the_data_dir(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, 'data_dir = "state"\n' + MINIMAL))
    assert settings.agentdb.path == tmp_path / "data" / "agentdb.db"
    assert settings.hub_path == tmp_path / "state" / "hub.db"
    assert settings.state_path == tmp_path / "state" / "laptop.state.db"
    assert settings.lock_path == tmp_path / "state" / "laptop.state.db.lock"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            MINIMAL + '[backbone]\npathh = "x"\n',
            "unknown key 'backbone.pathh' (allowed here: busy_timeout_ms, kind, path, shared_group, site_secret, "
            "timeout, url)",
            id="typo",
        ),
        pytest.param(
            MINIMAL + "[sink]\nx = 1\n",
            "unknown key 'sink' (allowed here: agentdb, alerts, backbone",
            id="unknown section",
        ),
        pytest.param('[agentdb]\npath = "a.db"\n', "missing key 'site'", id="no site"),
        pytest.param(MINIMAL + "[agentdb\n", "is not valid TOML", id="bad toml"),
        pytest.param(MINIMAL.replace("laptop", "my laptop"), "site.name: Value error, use letters", id="bad name"),
        pytest.param(
            MINIMAL + '[backbone]\nkind = "cloud"\n', "backbone.kind: Input should be 'local'", id="unknown backbone"
        ),
        pytest.param(
            MINIMAL.replace('path = "data/agentdb.db"', 'path = "a.db"\npoll_interval = -1'),
            "agentdb.poll_interval: Input should be greater than or equal to 0.05",
            id="bad value",
        ),
        pytest.param(
            MINIMAL + '[warm]\nfusion = "dbsf"\n',
            "warm.fusion: Input should be 'learned', 'relative' or 'rrf'",
            id="bad fusion",
        ),
    ],
)
def test_bad_configuration_names_the_problem(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_settings(write(tmp_path, text))
    assert message in str(raised.value)
    assert str(tmp_path / "site.toml") in str(raised.value)


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "nope.toml")


def test_the_environment_overrides_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMSYNC_SITE__NAME", "vm")
    monkeypatch.setenv("MEMSYNC_SYNC__BATCH_SIZE", "50")
    settings = load_settings(write(tmp_path, MINIMAL))
    assert (settings.site.name, settings.sync.batch_size) == ("vm", 50)


def test_the_dotenv_file_beside_the_config_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".env").write_text("MEMSYNC_SITE__NAME=from-dotenv\nUNRELATED=1\n", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert load_settings(write(tmp_path, MINIMAL)).site.name == "from-dotenv"


def test_a_project_dotenv_in_the_working_directory_is_not_memsyncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".env").write_text("MEMSYNC_SINK__X=1\nMEMSYNC_SITE__NAME=project\n", encoding="utf-8")
    monkeypatch.chdir(project)
    conf = tmp_path / "conf"
    conf.mkdir()
    assert load_settings(write(conf, MINIMAL)).site.name == "laptop"
    # With no config file, the working directory is where memsync's settings are: its .env counts.
    (project / ".env").write_text("MEMSYNC_SITE__NAME=project\nMEMSYNC_AGENTDB__PATH=a.db\n", encoding="utf-8")
    assert load_settings(None).site.name == "project"


def test_an_env_file_named_but_missing_is_a_path_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMSYNC_ENV_FILE", str(tmp_path / "laptop.env"))
    with pytest.raises(PathProblem) as raised:
        load_settings(write(tmp_path, MINIMAL))
    assert f"{tmp_path / 'laptop.env'} (MEMSYNC_ENV_FILE): it does not exist" in str(raised.value)
    assert "(uid " in str(raised.value)


def test_an_unknown_memsync_section_in_the_environment_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMSYNC_SYNK__BATCH_SIZE", "5")
    with pytest.raises(ConfigError) as raised:
        load_settings(write(tmp_path, MINIMAL))
    message = str(raised.value)
    assert "unknown variable MEMSYNC_SYNK__BATCH_SIZE in the environment: no setting 'synk'" in message
    assert "site.toml" not in message, "a typo in a variable is not the config file's"


def test_a_bad_value_from_a_variable_is_blamed_on_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMSYNC_SYNC__BATCH_SIZE", "lots")
    with pytest.raises(ConfigError) as raised:
        load_settings(write(tmp_path, MINIMAL))
    assert "sync.batch_size" in str(raised.value)
    assert "(from MEMSYNC_SYNC__BATCH_SIZE in the environment)" in str(raised.value)


def test_a_typo_in_dotenv_names_the_dotenv_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".env").write_text("MEMSYNC_SINK__X=1\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as raised:
        load_settings(write(tmp_path, MINIMAL))
    assert f"unknown variable MEMSYNC_SINK__X in the .env file {tmp_path / '.env'}" in str(raised.value)


def test_memsync_env_file_names_the_secrets_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = tmp_path / "laptop.env"
    secrets.write_text("MEMSYNC_SITE__NAME=from-env-file\n", encoding="utf-8")
    monkeypatch.setenv("MEMSYNC_ENV_FILE", str(secrets))
    monkeypatch.chdir(tmp_path)
    assert load_settings(write(tmp_path, MINIMAL)).site.name == "from-env-file"


def test_an_unknown_memsync_variable_in_dotenv_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".env").write_text("MEMSYNC_SITE__NAMEE=typo\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"site\.namee"):
        load_settings(write(tmp_path, MINIMAL))


CONVEX = MINIMAL + '[backbone]\nkind = "convex"\nurl = "https://happy-otter-123.convex.cloud"\n'


def test_a_convex_site_takes_its_secret_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMSYNC_BACKBONE__SITE_SECRET", "s3cret-value-from-env")
    settings = load_settings(write(tmp_path, CONVEX))
    assert settings.backbone.site_secret is not None
    assert settings.backbone.site_secret.get_secret_value() == "s3cret-value-from-env"
    assert "s3cret-value-from-env" not in repr(settings)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(CONVEX, "set MEMSYNC_BACKBONE__SITE_SECRET in the environment or .env", id="no secret"),
        pytest.param(MINIMAL + '[backbone]\nkind = "convex"\n', "backbone.url is required", id="no url"),
        pytest.param(CONVEX + 'site_secret = "in-the-file"\n', "does not belong in a config file", id="secret in file"),
    ],
)
def test_a_convex_site_needs_a_url_and_a_secret_kept_out_of_the_file(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_settings(write(tmp_path, text))
    assert message in str(raised.value)
    assert "in-the-file" not in str(raised.value)
