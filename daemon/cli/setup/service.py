"""``memsync service render|install|uninstall|status``: run memsync as a systemd or launchd service.

``render`` prints the unit or plist (nothing is written); ``install`` writes it, creates the per-site
env file for secrets (empty, mode 0600) and starts the service; ``uninstall`` stops it and removes
the file, keeping the env file; ``status`` says whether it is installed, enabled and running.

Exit codes: 0 ok (status: running); 1 a service manager command failed (its message is shown);
3 status: installed but not running; 4 status: not installed; 78 something only a person can fix
(no systemctl/launchctl, not root for --system, an unknown user, a config that does not load).
"""

from __future__ import annotations

import argparse
import grp
import json
import os
import pwd
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from daemon.cli.common import Commands, add_config, add_json, fail, handled, load
from daemon.service.commands import Managers
from daemon.service.files import Owner
from sync.errors import EX_CONFIG, ServiceError

if TYPE_CHECKING:  # these import the settings (pydantic): loaded only when a service command runs
    from daemon.service.loading import Loaded
    from daemon.service.spec import Kind, ServiceSpec


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "service",
        help="run memsync as a systemd or launchd service: render, install, uninstall, status",
        description="Run one site's daemon as a service: a systemd unit (Linux; a user unit, or with --system a "
        "system unit running as the agent's user) or a launchd LaunchAgent (macOS). Secrets go in the "
        "per-site env file install creates (mode 0600), never in the service file.",
    )
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    for name, main, placing, summary, description in (
        (
            "render",
            render_main,
            True,
            "print the unit or plist; nothing is written",
            "Print the systemd unit or launchd plist for this config's site. Nothing is written or run.",
        ),
        (
            "install",
            install_main,
            True,
            "write it, create the env file for secrets, enable and start it",
            "Write the service file (mode 0644), create the site's env file for secrets (empty, mode 0600) "
            "if there is none, create the data dir, then enable and start the service (systemctl, with "
            "lingering for a user unit; launchctl bootstrap on macOS). Run it again after changing any path "
            "in the config.",
        ),
        (
            "uninstall",
            uninstall_main,
            False,
            "stop and disable it and remove its file (the env file stays)",
            "Stop and disable the service and remove its file. The env file (secrets) and logs stay.",
        ),
        (
            "status",
            status_main,
            False,
            "installed? enabled? running? where are its logs? (exit 0/3/4)",
            "Whether the service is installed, enabled and running, and where its logs are. "
            "Exit 0 running, 3 installed but not running, 4 not installed.",
        ),
    ):
        action = actions.add_parser(name, help=summary, description=description)
        add_config(action)
        action.add_argument(
            "--kind",
            choices=("systemd", "launchd"),
            help="the service manager (default: launchd on macOS, systemd elsewhere)",
        )
        action.add_argument(
            "--system",
            action="store_true",
            help="a system unit (/etc/systemd/system; needs root) instead of a user unit",
        )
        if placing:
            action.add_argument("--user", metavar="NAME", help="--system: the user it runs as (the agent's user)")
            action.add_argument("--group", metavar="NAME", help="--system: its group (default: the user's own)")
            action.add_argument(
                "--executable",
                metavar="PATH",
                type=Path,
                help="the memsync program the service runs (default: this one)",
            )
        if name == "status":
            add_json(action)
        action.set_defaults(run=main, placing=placing)


@dataclass(frozen=True)
class _Target:
    """Whom the service is for, resolved on this machine."""

    kind: Kind
    system: bool
    home: Path
    user: str | None
    group: str | None
    owner: Owner | None


def _target(args: argparse.Namespace) -> _Target:
    kind: Kind = args.kind or ("launchd" if sys.platform == "darwin" else "systemd")
    user, group = getattr(args, "user", None), getattr(args, "group", None)
    if args.system and kind == "launchd":
        fail("memsync installs launchd services as LaunchAgents (they run as you): leave out --system", EX_CONFIG)
    if not args.system:
        if user or group:
            fail("--user and --group name a system unit's user: add --system, or leave them out", EX_CONFIG)
        return _Target(kind, False, Path.home(), None, None, None)
    if not args.placing:  # uninstall, status: a system unit's files do not depend on its user
        return _Target(kind, True, Path.home(), None, None, None)
    if not user:
        fail("--system needs --user NAME: the user the agent runs as (memsync must not run as root)", EX_CONFIG)
    try:
        account = pwd.getpwnam(user)
    except KeyError:
        fail(f"no user named {user!r} on this machine: create it, or name another with --user", EX_CONFIG)
    try:
        gid = grp.getgrnam(group).gr_gid if group else account.pw_gid
        group = group or grp.getgrgid(gid).gr_name
    except KeyError:
        fail(f"no group {group or account.pw_gid!r} on this machine: name another with --group", EX_CONFIG)
    return _Target(kind, True, Path(account.pw_dir), user, group, Owner(account.pw_uid, gid))


def _executable(given: Path | None) -> Path:
    """The memsync program the service runs: absolute, but symlinks kept (pipx's and uv's
    ~/.local/bin/memsync links keep working when an upgrade moves what they point to)."""
    if given is not None:
        path = Path(os.path.abspath(given.expanduser()))
        if not (path.is_file() and os.access(path, os.X_OK)):
            fail(f"--executable {given} is not an executable file: name the installed memsync program", EX_CONFIG)
        return path
    argv0 = sys.argv[0]
    candidates: list[str | None] = []
    if Path(argv0).name == "memsync":  # run as the installed program
        candidates.append(argv0 if os.sep in argv0 else shutil.which(argv0))
    # `python -m daemon` from an environment that has memsync installed: its program sits beside python.
    candidates += [str(Path(sys.executable).parent / "memsync"), shutil.which("memsync")]
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return Path(os.path.abspath(candidate))
    fail("cannot find the installed memsync program: pass --executable /path/to/memsync", EX_CONFIG)


def _load(args: argparse.Namespace, target: _Target) -> tuple[ServiceSpec, Loaded]:
    from daemon.service.loading import load_for_service
    from daemon.service.spec import env_file_for, spec_for

    executable = _executable(args.executable) if args.placing else Path(sys.executable)
    with handled():
        loaded = load_for_service(
            lambda: load(args, log_level="error"),
            lambda site: env_file_for(system=target.system, home=target.home, site=site),
        )
    settings = loaded.settings
    # A system account's home is often /nonexistent (nobody, most daemons' users): the default data
    # dir under it would fail at the service's first start, far from the cause.
    if target.system and settings.data_dir is None and not target.home.is_dir():
        fail(
            f"the service user's home {target.home} does not exist, so there is no default data dir under it: "
            f"set data_dir in {settings.config_file} to a folder for memsync's files (e.g. "
            f"/var/lib/memsync/{settings.site.name}); install creates it for that user",
            EX_CONFIG,
        )
    try:
        spec = spec_for(
            loaded.settings,
            kind=target.kind,
            executable=executable,
            home=target.home,
            system=target.system,
            user=target.user,
            group=target.group,
        )
    except ValueError as exc:
        fail(str(exc), EX_CONFIG)
    return spec, loaded


def _managers() -> Managers:
    return Managers(os.environ.get("PATH", os.defpath), dict(os.environ))


def _need_root(target: _Target, doing: str) -> None:
    if target.system and os.geteuid() != 0:
        fail(f"{doing} a system unit needs root: run `sudo memsync {shlex.join(sys.argv[1:])}`", EX_CONFIG)


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def render_main(args: argparse.Namespace) -> int:
    from daemon.service.render import render

    spec, _ = _load(args, _target(args))
    try:
        sys.stdout.write(render(spec))
    except ValueError as exc:
        fail(str(exc), EX_CONFIG)
    return 0


def _warnings(spec: ServiceSpec, target: _Target, loaded: Loaded) -> list[str]:
    from daemon.service.files import reachable_by

    notes = []
    if target.owner is not None:
        gids = {target.owner.gid, *os.getgrouplist(target.user or "", target.owner.gid)}
        user = target.user
        needs = [
            (spec.config, os.R_OK, f"read {spec.config}: move it, or fix the modes of it and its folders"),
            (spec.executable, os.X_OK, f"run {spec.executable}: install memsync where {user} can run it"),
        ]
        if spec.agentdb_dir.is_dir():
            needs.append(
                (
                    spec.agentdb_dir,
                    os.W_OK,
                    f"write to {spec.agentdb_dir}, where a reader of a WAL database writes its -shm file: "
                    f"run the service as the agent's user, or give {user} write access",
                )
            )
        for path, want, problem in needs:
            if not reachable_by(path, target.owner.uid, gids, want):
                notes.append(f"warning: {user} cannot {problem}")
    shell_only = [name for name in loaded.shell_only if name not in loaded.missing_secrets]
    if shell_only:
        notes.append(
            f"note: the service will not see {', '.join(shell_only)} from this shell: "
            f"put settings in the config and secrets in {spec.env_file}"
        )
    return notes


def _status_command(args: argparse.Namespace, spec: ServiceSpec) -> str:
    words = ["memsync", "service", "status", "-c", str(spec.config)]
    if args.kind:
        words += ["--kind", args.kind]
    if spec.system:
        words.append("--system")
    return shlex.join(words)


def install_main(args: argparse.Namespace) -> int:
    from daemon.service.install import Install, install
    from daemon.service.render import render

    target = _target(args)
    _need_root(target, "installing")
    spec, loaded = _load(args, target)
    for note in _warnings(spec, target, loaded):
        _say(note)
    job = Install(
        spec=spec,
        text=render(spec),
        managers=_managers(),
        echo=_say,
        uid=os.getuid(),
        user_name=pwd.getpwuid(os.getuid()).pw_name,
        owner=target.owner,
        missing_secrets=loaded.missing_secrets,
        again=f"memsync {shlex.join(sys.argv[1:])}",
        status_command=_status_command(args, spec),
    )
    try:
        return install(job)
    except ServiceError as exc:
        fail(str(exc), exc.code)


def uninstall_main(args: argparse.Namespace) -> int:
    from daemon.service.install import uninstall

    target = _target(args)
    _need_root(target, "removing")
    spec, _ = _load(args, target)
    try:
        return uninstall(spec, _managers(), _say, os.getuid())
    except ServiceError as exc:
        fail(str(exc), exc.code)


def status_main(args: argparse.Namespace) -> int:
    from daemon.service.status import status

    spec, _ = _load(args, _target(args))
    try:
        report = status(spec, _managers(), os.getuid())
    except ServiceError as exc:
        fail(str(exc), exc.code)
    if args.as_json:
        _say(json.dumps(report.to_dict(), indent=2))
    else:
        for line in report.lines():
            _say(line)
    return report.exit_code


__all__ = ["register"]
