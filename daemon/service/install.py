"""``memsync service install|uninstall``: write the rendered file, run the service manager, say what
was done and where the logs are.

A thin layer: the file's text comes from ``systemd.py``/``launchd.py``, the managers are whatever
``systemctl``/``loginctl``/``launchctl`` is first on PATH (``commands.py``), and ``status.py`` asks
them how the service is doing. Every step is printed as it happens, so a failure halfway says what
is already in place.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from daemon.service import files
from daemon.service.commands import Managers, systemctl_args
from daemon.service.spec import ServiceSpec
from daemon.service.status import launchd_loaded, launchd_target
from sync.errors import ServiceError

Echo = Callable[[str], None]
EX_OK = 0


@dataclass(frozen=True)
class Install:
    """One install: the spec, its rendered text, and what the caller found out about the machine."""

    spec: ServiceSpec
    text: str
    managers: Managers
    echo: Echo
    uid: int  # the installing user's uid (launchd's gui/<uid> domain)
    user_name: str  # the installing user's name (lingering for a user unit)
    owner: files.Owner | None = None  # a system unit's user: folders created for it are given to it
    missing_secrets: Sequence[str] = ()  # required by the config, absent from the env file
    again: str = "memsync service install"  # how the person ran it, for "run it again"
    status_command: str = "memsync service status"


def _prepare(job: Install) -> bool:
    """The folders, the service file and the env file; returns whether the service file changed."""
    spec, echo = job.spec, job.echo
    folders = [spec.data_dir, *spec.extra_writable] + ([spec.log_dir] if spec.kind == "launchd" else [])
    for folder in folders:
        for created in files.make_dirs(folder, job.owner):
            echo(f"created {created}")
    if not spec.agentdb_dir.is_dir():
        echo(
            f"note: {spec.agentdb_dir} (the AgentDB file's folder) does not exist yet; "
            + (
                "the service fails to start, retrying every 5 seconds, until it does"
                if spec.kind == "systemd"
                else "memsync waits for the file to appear"
            )
        )
    changed = files.write_file(spec.service_file, job.text, 0o644)
    echo(f"{'wrote' if changed else 'unchanged:'} {spec.service_file}")
    # /etc/memsync may hold the config too, which a system unit's user must read: only the env file is private.
    if files.ensure_env_file(spec.env_file, folder_mode=0o755 if spec.system else 0o700):
        echo(f"created {spec.env_file} (empty, mode 0600): secrets go there, never in the service file")
    else:
        loose = files.loose_mode(spec.env_file)
        if loose is not None:
            echo(f"warning: {spec.env_file} has mode {loose:04o}; it holds secrets: chmod 600 {spec.env_file}")
    if job.missing_secrets:
        names = ", ".join(job.missing_secrets)
        echo(f"the config needs {names}: put {'it' if len(job.missing_secrets) == 1 else 'them'} in {spec.env_file}")
    return changed


def _linger(job: Install) -> None:
    """Lingering starts the user's manager at boot and keeps it after logout: without it a user unit
    runs only while its user is logged in. Done first, so that a manager is there to talk to."""
    how = f"run `sudo loginctl enable-linger {job.user_name}`"
    if job.managers.which("loginctl") is None:
        job.echo(f"warning: loginctl is not on PATH, so memsync starts only when you log in: {how}")
        return
    result = job.managers.run("loginctl", "enable-linger", job.user_name)
    if result.ok:
        job.echo(f"lingering on for {job.user_name}: memsync starts at boot and keeps running after logout")
    else:
        job.echo(f"warning: `{result.command}` failed ({result.reason()}): {how} so memsync starts at boot")


def _install_systemd(job: Install) -> int:
    spec, managers, echo = job.spec, job.managers, job.echo

    def ctl(*args: str) -> Sequence[str]:
        return systemctl_args(spec.system, *args)

    scope = "" if spec.system else " --user"
    hint = (
        ""
        if spec.system
        else ": run it as the user in a login session (not through sudo or su), or install a --system unit"
    )
    managers.require("systemctl")  # before anything is written
    was_active = managers.run("systemctl", *ctl("is-active", "--quiet", spec.unit_name)).ok
    changed = _prepare(job)
    if not spec.system:
        _linger(job)
    managers.must("systemctl", *ctl("daemon-reload"), hint=hint)
    echo(f"ran systemctl{scope} daemon-reload")
    if job.missing_secrets:
        managers.must("systemctl", *ctl("enable", spec.unit_name), hint=hint)
        echo(f"ran systemctl{scope} enable {spec.unit_name} (not started: it would stop at once without its secrets)")
        echo(f"next: fill in {spec.env_file}, then `systemctl{scope} start {spec.unit_name}`")
        return EX_OK
    logs = f"; see `{spec.logs_hint}`"
    managers.must("systemctl", *ctl("enable", "--now", spec.unit_name), hint=logs)
    echo(f"ran systemctl{scope} enable --now {spec.unit_name}")
    if was_active and changed:
        # enable --now leaves a running service as it is; the new unit applies from the next start.
        managers.must("systemctl", *ctl("restart", spec.unit_name), hint=logs)
        echo(f"ran systemctl{scope} restart {spec.unit_name} (the unit changed)")
    echo(f"memsync for site {spec.site} is running. Logs: {spec.logs_hint} -f. Status: {job.status_command}")
    return EX_OK


def _wait_unloaded(job: Install, timeout: float = 10.0) -> None:
    """launchd refuses a bootstrap (error 5) while the label it booted out is still draining."""
    deadline = time.monotonic() + timeout
    while launchd_loaded(job.managers, job.uid, job.spec.label) and time.monotonic() < deadline:
        time.sleep(0.2)


def _install_launchd(job: Install) -> int:
    spec, managers, echo = job.spec, job.managers, job.echo
    domain, target = f"gui/{job.uid}", launchd_target(job.uid, spec.label)
    managers.require("launchctl")  # before anything is written
    _prepare(job)
    if launchd_loaded(managers, job.uid, spec.label):
        managers.must("launchctl", "bootout", target)
        echo(f"ran launchctl bootout {target} (it was loaded)")
        _wait_unloaded(job)
    if job.missing_secrets:
        echo(
            f"not started: it would stop at once without its secrets. Next: fill in {spec.env_file}, "
            f"then run `{job.again}` again"
        )
        return EX_OK
    # A label disabled earlier (`launchctl disable`) stays disabled across reboots and refuses bootstrap.
    managers.must("launchctl", "enable", target)
    echo(f"ran launchctl enable {target}")
    for attempt in range(3):
        result = managers.run("launchctl", "bootstrap", domain, str(spec.service_file))
        if result.ok:
            break
        if attempt == 2:
            raise ServiceError(
                f"`{result.command}` failed ({result.reason()}): see {spec.log_file}, then run `{job.again}` again",
                1,
            )
        time.sleep(1.0)  # error 5 right after a bootout: launchd is still letting the old one go
    echo(f"ran launchctl bootstrap {domain} {spec.service_file}")
    echo(f"memsync for site {spec.site} is running. Logs: {spec.log_file}. Status: {job.status_command}")
    return EX_OK


def install(job: Install) -> int:
    return _install_launchd(job) if job.spec.kind == "launchd" else _install_systemd(job)


def uninstall(spec: ServiceSpec, managers: Managers, echo: Echo, uid: int) -> int:
    """Stop and disable the service and remove its file; the env file (secrets) and logs stay."""
    path = spec.service_file
    if spec.kind == "launchd":
        managers.require("launchctl")
        target = launchd_target(uid, spec.label)
        if launchd_loaded(managers, uid, spec.label):
            managers.must("launchctl", "bootout", target)
            echo(f"ran launchctl bootout {target}")
        if files.remove_file(path):
            echo(f"removed {path}")
        else:
            echo(f"not installed: no {path}")
        echo(f"kept {spec.env_file} (secrets) and {spec.log_dir}: delete them yourself if no longer needed")
        return EX_OK
    if not path.exists():
        echo(f"not installed: no {path}")
        echo(f"kept {spec.env_file} (secrets), if any: delete it yourself if no longer needed")
        return EX_OK
    scope = "" if spec.system else " --user"
    # The unit file goes whatever systemctl says: a manager that cannot be reached (no session bus
    # under sudo, systemd not running) must not leave memsync installed. What failed is said at the end.
    failed: list[str] = []

    def ctl(*args: str) -> None:
        if managers.which("systemctl") is None:
            failed[:] = ["systemctl is not on PATH"]
            return
        try:
            result = managers.run("systemctl", *systemctl_args(spec.system, *args))
        except ServiceError as exc:  # it did not finish
            failed.append(str(exc))
            return
        if result.ok:
            echo(f"ran systemctl{scope} {' '.join(args)}")
        else:
            failed.append(f"`{result.command}` failed ({result.reason()})")

    ctl("disable", "--now", spec.unit_name)
    files.remove_file(path)
    echo(f"removed {path}")
    ctl("daemon-reload")
    echo(f"kept {spec.env_file} (secrets): delete it yourself if no longer needed")
    if not spec.system:
        echo("lingering stays on (other user services may need it): `loginctl disable-linger` turns it off")
    if failed:
        raise ServiceError(
            f"removed {path}, but {'; '.join(failed)}: if memsync still runs, stop it with "
            f"`systemctl{scope} stop {spec.unit_name}` (or end its process), then run "
            f"`systemctl{scope} daemon-reload`",
            1,
        )
    return EX_OK


__all__ = ["Echo", "Install", "install", "uninstall"]
