"""``memsync service``: rendering against golden files, the rendered units checked by the real
``systemd-analyze verify``, and install/uninstall/status through the real CLI in child processes.

The service managers are stand-in shell scripts first on PATH (the one seam): each appends its
argv to a calls file and answers from state files (enabled, active, loaded) that it updates the way
the real one would. HOME is a temporary folder, so every user-level file lands there.

UPDATE_GOLDEN=1 rewrites tests/golden/ from the current renderer (review the diff before committing).
"""

from __future__ import annotations

import dataclasses
import grp
import json
import os
import plistlib
import pwd
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import ROOT, flat, write_config
from harness import short_dir

from daemon.config import load_settings
from daemon.service.launchd import render_plist
from daemon.service.spec import ServiceSpec, spec_for
from daemon.service.systemd import render_unit

GOLDEN = ROOT / "tests" / "golden"
VENV_MEMSYNC = Path(sys.executable).parent / "memsync"
ME = pwd.getpwuid(os.getuid()).pw_name


# -- golden files ---------------------------------------------------------------------------------
SYSTEM = ServiceSpec(
    kind="systemd",
    site="laptop",
    executable=Path("/opt/memsync/bin/memsync"),
    config=Path("/etc/memsync/laptop.toml"),
    home=Path("/home/agent"),
    data_dir=Path("/home/agent/.local/share/memsync"),
    agentdb_dir=Path("/home/agent/.agentdb"),
    extra_writable=(Path("/srv/memsync/hub"),),
    system=True,
    user="agent",
    group="agent",
)
USER = ServiceSpec(
    kind="systemd",
    site="laptop",
    executable=Path("/home/alice/.local/bin/memsync"),
    config=Path("/home/alice/.config/memsync/laptop.toml"),
    home=Path("/home/alice"),
    data_dir=Path("/home/alice/.local/share/memsync"),
    agentdb_dir=Path("/home/alice/projects/agent"),
)
AGENT = ServiceSpec(
    kind="launchd",
    site="laptop",
    executable=Path("/Users/alice/.local/bin/memsync"),
    config=Path("/Users/alice/.config/memsync/laptop.toml"),
    home=Path("/Users/alice"),
    data_dir=Path("/Users/alice/.local/share/memsync"),
    agentdb_dir=Path("/Users/alice/projects/agent"),
)

# The example the README points to (systemd/memsync-example.service) is rendered too, so it cannot go stale.
EXAMPLE = dataclasses.replace(SYSTEM, site="example", config=Path("/etc/memsync/example.toml"), extra_writable=())


@pytest.mark.parametrize(
    ("spec", "golden"),
    [
        pytest.param(SYSTEM, GOLDEN / "memsync-laptop.system.service", id="system unit"),
        pytest.param(USER, GOLDEN / "memsync-laptop.user.service", id="user unit"),
        pytest.param(AGENT, GOLDEN / "com.memsync.laptop.plist", id="launchd agent"),
        pytest.param(EXAMPLE, ROOT / "systemd" / "memsync-example.service", id="README example"),
    ],
)
def test_rendering_matches_the_golden_file(spec: ServiceSpec, golden: Path) -> None:
    text = render_plist(spec) if spec.kind == "launchd" else render_unit(spec)
    if os.environ.get("UPDATE_GOLDEN") == "1":
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8"), f"{golden.name} differs: UPDATE_GOLDEN=1 rewrites it"


def _settings(unit: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in unit.splitlines():
        if line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            found.setdefault(key, []).append(value)
    return found


def test_the_units_say_what_the_issue_asks_for() -> None:
    system, user = _settings(render_unit(SYSTEM)), _settings(render_unit(USER))
    for unit in (system, user):
        assert unit["Type"] == ["notify"]
        assert unit["NotifyAccess"] == ["main"]
        assert unit["WatchdogSec"] == ["60s"]
        assert unit["RestartPreventExitStatus"] == ["78"]
        assert unit["Restart"] == ["on-failure"]
        assert unit["UMask"] == ["0077"]
        assert "PYTHONUNBUFFERED=1" in unit["Environment"]
        assert unit["ProtectSystem"] == ["strict"]
    assert system["ExecStart"] == ["/opt/memsync/bin/memsync run --config /etc/memsync/laptop.toml"]
    assert system["User"] == ["agent"]
    assert system["EnvironmentFile"] == ["-/etc/memsync/laptop.env"]
    # The AgentDB folder (the -shm file) and the hub outside the data dir are writable; nothing else.
    assert system["ReadWritePaths"] == ["/home/agent/.local/share/memsync /home/agent/.agentdb /srv/memsync/hub"]
    assert system["WantedBy"] == ["multi-user.target"]
    assert system["Wants"] == ["network-online.target"]
    assert "User" not in user
    assert user["EnvironmentFile"] == ["-/home/alice/.config/memsync/laptop.env"]
    assert user["WantedBy"] == ["default.target"]


def test_the_plist_holds_no_secret_and_names_the_env_file() -> None:
    agent = plistlib.loads(render_plist(AGENT).encode())
    assert agent["Label"] == "com.memsync.laptop"
    assert agent["ProgramArguments"] == [
        "/Users/alice/.local/bin/memsync",
        "run",
        "--config",
        "/Users/alice/.config/memsync/laptop.toml",
    ]
    assert agent["KeepAlive"] == {"SuccessfulExit": False}
    assert agent["RunAtLoad"] is True
    env = agent["EnvironmentVariables"]
    assert env["MEMSYNC_ENV_FILE"] == "/Users/alice/.config/memsync/laptop.env"
    assert env["PYTHONUNBUFFERED"] == "1"
    assert env["PATH"].startswith("/Users/alice/.local/bin:")
    assert not [name for name in env if "SECRET" in name or "KEY" in name]
    assert agent["StandardErrorPath"] == "/Users/alice/Library/Logs/memsync/laptop.log"


def test_spec_for_settings_opens_the_folders_memsync_writes(tmp_path: Path) -> None:
    # No data_dir in the config: a system unit's default is under its user's home, not ours.
    config = tmp_path / "conf" / "laptop.toml"
    config.parent.mkdir()
    config.write_text(
        '[site]\nname = "laptop"\n[agentdb]\npath = "../agent/agentdb.db"\n'
        f'[backbone]\npath = "{tmp_path / "shared" / "hub.db"}"\n[warm]\nenabled = false\n',
        encoding="utf-8",
    )
    settings = load_settings(config)
    spec = spec_for(
        settings,
        kind="systemd",
        executable=VENV_MEMSYNC,
        home=Path("/home/agent"),
        system=True,
        user="agent",
        group="agent",
    )
    assert spec.config == config.resolve()
    assert spec.data_dir == Path("/home/agent/.local/share/memsync")
    assert spec.writable == (spec.data_dir, tmp_path / "agent", tmp_path / "shared")


# -- systemd-analyze verify -----------------------------------------------------------------------
def _systemd_analyze() -> str:
    found = shutil.which("systemd-analyze")
    if found is None:
        if not sys.platform.startswith("linux"):
            pytest.skip("systemd-analyze is Linux-only")
        pytest.fail("systemd-analyze is missing: `make tools` installs it (Debian's systemd package)")
    return found


def _verify(unit_text: str, folder: Path, *, user: bool) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    unit = folder / "memsync-laptop.service"  # verify wants a unit file name
    unit.write_text(unit_text, encoding="utf-8")
    argv = [_systemd_analyze()]
    env = dict(os.environ)
    with short_dir("ms-run-") as runtime:
        if user:
            # A user manager needs XDG_RUNTIME_DIR, which a test run (or CI) may not have; verify only
            # needs the folder to exist and be private. A short one: the socket units it reads put
            # their sockets in it (gnupg's), and pytest-xdist's tmp paths are past a socket's 108 bytes.
            env["XDG_RUNTIME_DIR"] = str(runtime)
            argv.append("--user")
        done = subprocess.run(
            [*argv, "verify", "--man=no", str(unit)], capture_output=True, text=True, env=env, timeout=60, check=False
        )
    # verify exits 0 on unknown keys and bad values, warning on stderr: no warning is allowed.
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "", done.stderr


def test_rendered_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    # The real program, so that verify finds ExecStart's executable. The system unit runs as whoever
    # runs this test (verify warns about `nobody`); the folders need not exist for verify.
    user = ServiceSpec(
        kind="systemd",
        site="laptop",
        executable=VENV_MEMSYNC,
        config=tmp_path / "laptop.toml",
        home=tmp_path,
        data_dir=tmp_path / "data",
        agentdb_dir=tmp_path / "agent",
        extra_writable=(tmp_path / "hub",),
    )
    _verify(render_unit(user), tmp_path / "user", user=True)
    group = grp.getgrgid(pwd.getpwuid(os.getuid()).pw_gid).gr_name
    system = dataclasses.replace(user, system=True, user=ME, group=group)
    _verify(render_unit(system), tmp_path / "system", user=False)


def test_awkward_paths_are_quoted_so_systemd_reads_them_back(tmp_path: Path) -> None:
    # A space, a specifier character and a variable sign in every path: systemd would otherwise
    # split the path, expand %h, or substitute $HOME, and verify would not find the program.
    odd = tmp_path / "my 100%$HOME dir"
    program = odd / "bin" / "memsync"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    program.chmod(0o755)
    spec = ServiceSpec(
        kind="systemd",
        site="laptop",
        executable=program,
        config=odd / "laptop.toml",
        home=tmp_path,
        data_dir=odd / "data",
        agentdb_dir=odd / "agent",
    )
    text = render_unit(spec)
    assert f'ExecStart="{tmp_path}/my 100%%$HOME dir/bin/memsync" run --config "{tmp_path}/my 100%%$$HOME dir/' in text
    _verify(text, tmp_path / "unit", user=True)


# -- install, status, uninstall through the CLI -----------------------------------------------------
SYSTEMCTL = """#!/bin/sh
echo "systemctl $*" >> "$CALLS"
[ "$1" = --user ] && shift
case "$1" in
  is-enabled) s=$(cat "$STATE/enabled" 2>/dev/null || echo disabled); echo "$s"; [ "$s" = enabled ];;
  is-active)
    s=$(cat "$STATE/active" 2>/dev/null || echo inactive)
    [ "$2" = --quiet ] || echo "$s"
    [ "$s" = active ];;
  enable)
    if [ -f "$STATE/fail-enable" ]; then cat "$STATE/fail-enable" >&2; exit 1; fi
    echo enabled > "$STATE/enabled"
    if [ "$2" = --now ]; then echo active > "$STATE/active"; fi;;
  disable)
    if [ -f "$STATE/fail-disable" ]; then cat "$STATE/fail-disable" >&2; exit 1; fi
    echo disabled > "$STATE/enabled"; if [ "$2" = --now ]; then echo inactive > "$STATE/active"; fi;;
  start|restart) echo active > "$STATE/active";;
  show) echo 4242;;
esac
"""
LOGINCTL = """#!/bin/sh
echo "loginctl $*" >> "$CALLS"
if [ -f "$STATE/fail-linger" ]; then echo "Could not enable linger: Access denied" >&2; exit 1; fi
"""
LAUNCHCTL = """#!/bin/sh
echo "launchctl $*" >> "$CALLS"
case "$1" in
  print)
    if [ ! -f "$STATE/loaded" ]; then echo "Could not find service in domain" >&2; exit 113; fi
    printf '%s = {\\n\\tstate = running\\n\\tpid = 4343\\n}\\n' "$2";;
  bootstrap) touch "$STATE/loaded";;
  bootout) rm -f "$STATE/loaded";;
esac
"""


@dataclass
class Machine:
    """A HOME, stand-in managers first on PATH, and the calls they received."""

    root: Path
    home: Path
    bin: Path
    state: Path
    calls_file: Path
    config: Path

    def env(self, path: str | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSYNC_", "XDG_"))}
        env |= {
            "HOME": str(self.home),
            "PATH": path if path is not None else f"{self.bin}{os.pathsep}{os.environ['PATH']}",
            "CALLS": str(self.calls_file),
            "STATE": str(self.state),
        }
        return env

    def memsync(self, *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "daemon", "service", *args],
            capture_output=True,
            text=True,
            env=self.env(path),
            cwd=self.root,
            timeout=120,
            check=False,
        )
        assert "Traceback" not in done.stderr, done.stderr
        return done

    def calls(self) -> list[str]:
        """The calls since the last look."""
        if not self.calls_file.exists():
            return []
        lines = self.calls_file.read_text(encoding="utf-8").splitlines()
        self.calls_file.unlink()
        return lines


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    home, bin_dir, state = tmp_path / "home", tmp_path / "bin", tmp_path / "state"
    for folder in (home, bin_dir, state):
        folder.mkdir()
    for name, script in (("systemctl", SYSTEMCTL), ("loginctl", LOGINCTL), ("launchctl", LAUNCHCTL)):
        (bin_dir / name).write_text(script, encoding="utf-8")
        (bin_dir / name).chmod(0o755)
    (tmp_path / "agent").mkdir()
    site = write_config(tmp_path / "sites", "laptop", tmp_path / "agent" / "agentdb.db", tmp_path / "hub.db")
    return Machine(tmp_path, home, bin_dir, state, tmp_path / "calls.log", site.config)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_user_unit_install_status_uninstall(machine: Machine) -> None:
    config = str(machine.config)
    rendered = machine.memsync("render", "-c", config, "--kind", "systemd")
    assert rendered.returncode == 0, rendered.stderr
    assert machine.calls() == []  # rendering runs nothing

    done = machine.memsync("install", "-c", config, "--kind", "systemd")
    assert done.returncode == 0, done.stderr
    unit = machine.home / ".config/systemd/user/memsync-laptop.service"
    env_file = machine.home / ".config/memsync/laptop.env"
    assert unit.read_text(encoding="utf-8") == rendered.stdout
    assert _mode(unit) == 0o644
    assert env_file.read_text(encoding="utf-8") == ""
    assert _mode(env_file) == 0o600
    assert (machine.root / "sites" / "data").is_dir()  # the data dir the sandbox opens exists
    assert machine.calls() == [
        "systemctl --user is-active --quiet memsync-laptop.service",
        f"loginctl enable-linger {ME}",
        "systemctl --user daemon-reload",
        "systemctl --user enable --now memsync-laptop.service",
    ]
    out = flat(done.stdout)
    assert f"wrote {unit}" in out
    assert f"created {env_file} (empty, mode 0600)" in out
    assert "journalctl --user -u memsync-laptop" in out

    status = machine.memsync("status", "-c", config, "--kind", "systemd")
    assert status.returncode == 0, status.stderr
    assert f"installed  {unit}" in status.stdout
    assert "enabled    yes (enabled)" in status.stdout
    assert "running    yes (active), pid 4242" in status.stdout
    assert "logs       journalctl --user -u memsync-laptop" in status.stdout
    report = json.loads(machine.memsync("status", "-c", config, "--kind", "systemd", "--json").stdout)
    assert report | {"pid": None} == {
        "kind": "systemd",
        "scope": "user",
        "name": "memsync-laptop.service",
        "path": str(unit),
        "installed": True,
        "enabled": True,
        "running": True,
        "enabled_state": "enabled",
        "active_state": "active",
        "pid": None,
        "env_file": str(env_file),
        "logs": "journalctl --user -u memsync-laptop",
    }
    machine.calls()

    # Installed again, unchanged: nothing restarted. With a changed config: restarted.
    assert machine.memsync("install", "-c", config, "--kind", "systemd").returncode == 0
    assert "systemctl --user restart memsync-laptop.service" not in machine.calls()
    env_file.write_text("MEMSYNC_LOG__LEVEL=info\n", encoding="utf-8")  # kept as it is by install
    other = machine.root / "other" / "memsync"  # as after moving memsync to another environment
    other.parent.mkdir()
    other.write_text("#!/bin/sh\n", encoding="utf-8")
    other.chmod(0o755)
    done = machine.memsync("install", "-c", config, "--kind", "systemd", "--executable", str(other))
    assert done.returncode == 0, done.stderr
    assert machine.calls()[-1] == "systemctl --user restart memsync-laptop.service", done.stdout
    assert f"ExecStart={other} run" in unit.read_text(encoding="utf-8")
    assert env_file.read_text(encoding="utf-8") == "MEMSYNC_LOG__LEVEL=info\n"

    done = machine.memsync("uninstall", "-c", config, "--kind", "systemd")
    assert done.returncode == 0, done.stderr
    assert machine.calls() == [
        "systemctl --user disable --now memsync-laptop.service",
        "systemctl --user daemon-reload",
    ]
    assert not unit.exists()
    assert env_file.exists()
    assert f"kept {env_file}" in done.stdout

    status = machine.memsync("status", "-c", config, "--kind", "systemd")
    assert status.returncode == 4
    assert f"installed  no (no {unit})" in status.stdout
    assert machine.calls() == []  # nothing to ask a manager about
    again = machine.memsync("uninstall", "-c", config, "--kind", "systemd")
    assert again.returncode == 0
    assert "not installed" in again.stdout


def test_launchd_agent_install_status_uninstall(machine: Machine) -> None:
    config, uid = str(machine.config), os.getuid()
    target = f"gui/{uid}/com.memsync.laptop"
    plist = machine.home / "Library/LaunchAgents/com.memsync.laptop.plist"
    rendered = machine.memsync("render", "-c", config, "--kind", "launchd")
    assert rendered.returncode == 0, rendered.stderr

    done = machine.memsync("install", "-c", config, "--kind", "launchd")
    assert done.returncode == 0, done.stderr
    assert plist.read_text(encoding="utf-8") == rendered.stdout
    assert _mode(plist) == 0o644
    assert _mode(machine.home / ".config/memsync/laptop.env") == 0o600
    assert (machine.home / "Library/Logs/memsync").is_dir()
    assert machine.calls() == [
        f"launchctl print {target}",
        f"launchctl enable {target}",
        f"launchctl bootstrap gui/{uid} {plist}",
    ]
    assert str(machine.home / "Library/Logs/memsync/laptop.log") in done.stdout

    status = machine.memsync("status", "-c", config, "--kind", "launchd")
    assert status.returncode == 0, status.stderr
    assert "running    yes (running), pid 4343" in status.stdout

    # Loaded already: booted out first, then bootstrapped again.
    assert machine.memsync("install", "-c", config, "--kind", "launchd").returncode == 0
    calls = machine.calls()
    assert calls[calls.index(f"launchctl bootout {target}") :][-2:] == [
        f"launchctl enable {target}",
        f"launchctl bootstrap gui/{uid} {plist}",
    ]

    done = machine.memsync("uninstall", "-c", config, "--kind", "launchd")
    assert done.returncode == 0, done.stderr
    assert machine.calls() == [f"launchctl print {target}", f"launchctl bootout {target}"]
    assert not plist.exists()
    status = machine.memsync("status", "-c", config, "--kind", "launchd", "--json")
    assert status.returncode == 4
    assert json.loads(status.stdout)["installed"] is False


def test_a_missing_secret_is_named_and_the_service_left_stopped_until_it_is_there(machine: Machine) -> None:
    text = machine.config.read_text(encoding="utf-8").replace(
        'kind = "local"', 'kind = "convex"\nurl = "https://happy-otter-123.convex.cloud"'
    )
    machine.config.write_text(text, encoding="utf-8")
    env_file = machine.home / ".config/memsync/laptop.env"
    done = machine.memsync("install", "-c", str(machine.config), "--kind", "systemd")
    assert done.returncode == 0, done.stderr
    assert f"the config needs MEMSYNC_BACKBONE__SITE_SECRET: put it in {env_file}" in flat(done.stdout)
    calls = machine.calls()
    assert "systemctl --user enable memsync-laptop.service" in calls
    assert not [call for call in calls if "--now" in call]
    unit = (machine.home / ".config/systemd/user/memsync-laptop.service").read_text(encoding="utf-8")
    assert "SITE_SECRET=" not in unit
    assert "stand-in" not in unit

    env_file.write_text("MEMSYNC_BACKBONE__SITE_SECRET=s3cret\n", encoding="utf-8")
    done = machine.memsync("install", "-c", str(machine.config), "--kind", "systemd")
    assert done.returncode == 0, done.stderr
    assert "needs" not in done.stdout
    assert machine.calls()[-1] == "systemctl --user enable --now memsync-laptop.service"
    assert "s3cret" not in (machine.home / ".config/systemd/user/memsync-laptop.service").read_text(encoding="utf-8")


def _error(done: subprocess.CompletedProcess[str], code: int) -> str:
    assert done.returncode == code, f"exit {done.returncode}: {done.stdout} {done.stderr}"
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr  # one sentence
    assert lines[0].startswith("memsync: ")
    return lines[0]


def test_uninstall_removes_the_unit_when_systemctl_fails_and_says_what_to_do(machine: Machine, tmp_path: Path) -> None:
    config = str(machine.config)
    unit = machine.home / ".config/systemd/user/memsync-laptop.service"
    assert machine.memsync("install", "-c", config, "--kind", "systemd").returncode == 0
    (machine.state / "fail-disable").write_text("Failed to connect to bus: No medium found\n", encoding="utf-8")
    machine.calls()
    message = _error(machine.memsync("uninstall", "-c", config, "--kind", "systemd"), 1)
    assert not unit.exists()
    assert f"removed {unit}, but `systemctl --user disable --now memsync-laptop.service` failed" in message
    assert "Failed to connect to bus: No medium found" in message
    assert "`systemctl --user stop memsync-laptop.service`" in message
    # It still tried the reload after removing the file.
    assert machine.calls()[-1] == "systemctl --user daemon-reload"

    # No systemctl at all: the file goes too, and that is said.
    (machine.state / "fail-disable").unlink()
    assert machine.memsync("install", "-c", config, "--kind", "systemd").returncode == 0
    only = tmp_path / "only"
    only.mkdir()
    shutil.copy(machine.bin / "loginctl", only / "loginctl")
    message = _error(machine.memsync("uninstall", "-c", config, "--kind", "systemd", path=str(only)), 1)
    assert not unit.exists()
    assert f"removed {unit}, but systemctl is not on PATH" in message


def test_a_system_unit_for_a_user_without_a_home_needs_a_data_dir(machine: Machine, tmp_path: Path) -> None:
    homeless = next((p for p in pwd.getpwall() if p.pw_dir == "/nonexistent"), None)
    if homeless is None:
        pytest.skip("no account on this machine has /nonexistent for a home")
    # The fixture's config names a data_dir: this one leaves it to the default.
    text = machine.config.read_text(encoding="utf-8")
    assert text.startswith("data_dir = ")
    bare = tmp_path / "bare.toml"
    bare.write_text(text.split("\n", 1)[1], encoding="utf-8")
    message = _error(machine.memsync("render", "-c", str(bare), "--system", "--user", homeless.pw_name), 78)
    assert "the service user's home /nonexistent does not exist" in message
    assert f"set data_dir in {bare}" in message
    # A user with a home: the default under it, as before.
    mine = machine.memsync("render", "-c", str(bare), "--system", "--user", ME)
    assert mine.returncode == 0, mine.stderr
    assert f"MEMSYNC_DATA_DIR={Path(pwd.getpwnam(ME).pw_dir) / '.local/share/memsync'}" in mine.stdout
    # With a data_dir there is nothing to guess.
    with_dir = tmp_path / "with-dir.toml"
    with_dir.write_text(f'data_dir = "{tmp_path / "srv"}"\n' + bare.read_text(encoding="utf-8"), encoding="utf-8")
    done = machine.memsync("render", "-c", str(with_dir), "--system", "--user", homeless.pw_name)
    assert done.returncode == 0, done.stderr
    assert f"MEMSYNC_DATA_DIR={tmp_path / 'srv'}" in done.stdout
    assert "/nonexistent" not in done.stdout


def test_errors_are_one_sentence_with_the_documented_exit_code(machine: Machine, tmp_path: Path) -> None:
    config = str(machine.config)
    # No systemctl on PATH (only loginctl and launchctl): nothing is written.
    only = tmp_path / "only"
    only.mkdir()
    shutil.copy(machine.bin / "loginctl", only / "loginctl")
    message = _error(machine.memsync("install", "-c", config, "--kind", "systemd", path=str(only)), 78)
    assert "systemctl is not on PATH" in message
    assert not (machine.home / ".config").exists()
    message = _error(machine.memsync("uninstall", "-c", config, "--kind", "launchd", path=str(only)), 78)
    assert "launchctl is not on PATH: launchd services need macOS" in message

    # systemctl failing: exit 1, its reason and where to look.
    (machine.state / "fail-enable").write_text("Job for memsync-laptop.service failed.\n", encoding="utf-8")
    message = _error(machine.memsync("install", "-c", config, "--kind", "systemd"), 1)
    assert "`systemctl --user enable --now memsync-laptop.service` failed" in message
    assert "Job for memsync-laptop.service failed." in message
    assert "journalctl --user -u memsync-laptop" in message
    (machine.state / "fail-enable").unlink()

    # Lingering refused: install goes on, and says exactly how.
    (machine.state / "fail-linger").touch()
    done = machine.memsync("install", "-c", config, "--kind", "systemd")
    assert done.returncode == 0, done.stderr
    assert f"sudo loginctl enable-linger {ME}" in done.stdout

    # Usage a person must fix.
    assert "--system needs --user" in _error(machine.memsync("render", "-c", config, "--system"), 78)
    assert "add --system" in _error(machine.memsync("render", "-c", config, "--user", ME), 78)
    assert "no user named" in _error(
        machine.memsync("render", "-c", config, "--system", "--user", "no-such-user-x"), 78
    )
    assert "LaunchAgents" in _error(machine.memsync("install", "-c", config, "--kind", "launchd", "--system"), 78)
    assert "not an executable" in _error(machine.memsync("render", "-c", config, "--executable", "/nonexistent"), 78)
    if os.geteuid() != 0:
        assert "needs root" in _error(machine.memsync("install", "-c", config, "--system", "--user", ME), 78)

    # A config that does not load.
    broken = tmp_path / "broken.toml"
    broken.write_text("[site\n", encoding="utf-8")
    assert "configuration error" in _error(machine.memsync("status", "-c", str(broken)), 78)


def test_system_unit_install_as_root_in_a_private_etc(machine: Machine, tmp_path: Path) -> None:
    """The real /etc must not be touched: the CLI runs in a mount namespace where /etc is a copy."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) to give the installer a private /etc")
    etc = tmp_path / "etc"
    shutil.copytree("/etc", etc, symlinks=True, ignore_dangling_symlinks=True)
    probe = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "true"], capture_output=True, timeout=30, check=False
    )
    if probe.returncode != 0:
        pytest.skip(f"no mount namespaces here: {probe.stderr.decode(errors='replace').strip()}")
    data = machine.root / "sites" / "data"
    argv = [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        'mount --bind "$0" /etc && exec "$@"',
        str(etc),
        sys.executable,
        "-m",
        "daemon",
        "service",
        "install",
        "-c",
        str(machine.config),
        "--kind",
        "systemd",
        "--system",
        "--user",
        "nobody",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, env=machine.env(), timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    unit = etc / "systemd/system/memsync-laptop.service"
    env_file = etc / "memsync/laptop.env"
    assert "User=nobody" in unit.read_text(encoding="utf-8")
    assert _mode(unit) == 0o644
    assert _mode(env_file) == 0o600
    assert env_file.stat().st_uid == 0  # systemd reads it as root; the service user cannot
    assert _mode(env_file.parent) == 0o755  # /etc/memsync may hold the config the service user reads
    # The service user may not write to the AgentDB folder (tmp_path is root's): said, not refused.
    assert f"warning: nobody cannot write to {machine.root / 'agent'}" in done.stdout
    assert data.stat().st_uid == pwd.getpwnam("nobody").pw_uid  # created for the service's user
    assert machine.calls() == [
        "systemctl is-active --quiet memsync-laptop.service",
        "systemctl daemon-reload",
        "systemctl enable --now memsync-laptop.service",
    ]
    assert "journalctl -u memsync-laptop" in done.stdout
    assert not Path("/etc/systemd/system/memsync-laptop.service").exists()
