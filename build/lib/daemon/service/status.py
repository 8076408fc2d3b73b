"""``memsync service status``: installed (the file), enabled and running (from the service manager),
and where the logs are, for people and (``--json``) for scripts.

Exit codes, as ``systemctl status`` has them: 0 running, 3 installed but not running, 4 not installed.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from daemon.service.commands import Managers, systemctl_args
from daemon.service.spec import ServiceSpec

RUNNING, NOT_RUNNING, NOT_INSTALLED = 0, 3, 4


def launchd_target(uid: int, label: str) -> str:
    return f"gui/{uid}/{label}"


def launchd_loaded(managers: Managers, uid: int, label: str) -> bool:
    """Whether launchd knows the label: `launchctl print` exits 0 only then (113 otherwise)."""
    return managers.run("launchctl", "print", launchd_target(uid, label)).ok


@dataclass(frozen=True)
class ServiceStatus:
    kind: str
    scope: str  # "system", "user" (systemd) or "agent" (launchd)
    name: str  # the unit name or the launchd label
    path: str
    installed: bool
    enabled: bool
    running: bool
    enabled_state: str  # the manager's word: "enabled", "disabled", "loaded", "not loaded", ...
    active_state: str  # "active", "inactive", "failed", "running", ...
    pid: int | None
    env_file: str
    logs: str

    @property
    def exit_code(self) -> int:
        if not self.installed:
            return NOT_INSTALLED
        return RUNNING if self.running else NOT_RUNNING

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        def yes(flag: bool, state: str) -> str:
            return f"{'yes' if flag else 'no'} ({state})"

        what = {"system": "systemd system unit", "user": "systemd user unit", "agent": "launchd agent"}[self.scope]
        running = yes(self.running, self.active_state) + (f", pid {self.pid}" if self.pid else "")
        return [
            f"{self.name}: {what}",
            f"  installed  {self.path if self.installed else f'no (no {self.path})'}",
            f"  enabled    {yes(self.enabled, self.enabled_state)}",
            f"  running    {running}",
            f"  secrets    {self.env_file}",
            f"  logs       {self.logs}",
        ]


def _systemd(spec: ServiceSpec, managers: Managers) -> tuple[bool, str, bool, str, int | None]:
    def state(*args: str) -> tuple[bool, str]:
        result = managers.run("systemctl", *systemctl_args(spec.system, *args, spec.unit_name))
        return result.ok, (result.stdout.strip().splitlines() or [result.reason()])[0]

    enabled, enabled_state = state("is-enabled")
    running, active_state = state("is-active")
    pid: int | None = None
    if running:
        shown = managers.run(
            "systemctl", *systemctl_args(spec.system, "show", "--value", "-p", "MainPID", spec.unit_name)
        )
        pid = int(shown.stdout.strip()) if shown.ok and shown.stdout.strip().isdigit() else None
    return enabled, enabled_state, running, active_state, pid or None


def _launchd(spec: ServiceSpec, managers: Managers, uid: int) -> tuple[bool, str, bool, str, int | None]:
    shown = managers.run("launchctl", "print", launchd_target(uid, spec.label))
    if not shown.ok:
        return False, "not loaded", False, "not running", None
    state = re.search(r"^\s*state = (\S+)", shown.stdout, re.MULTILINE)
    pid = re.search(r"^\s*pid = (\d+)", shown.stdout, re.MULTILINE)
    active = state.group(1) if state else "unknown"
    return True, "loaded", active == "running", active, int(pid.group(1)) if pid else None


def status(spec: ServiceSpec, managers: Managers, uid: int) -> ServiceStatus:
    installed = spec.service_file.exists()
    if spec.kind == "launchd":
        scope = "agent"
        name = spec.label
        found = _launchd(spec, managers, uid) if installed else (False, "not installed", False, "not running", None)
    else:
        scope = "system" if spec.system else "user"
        name = spec.unit_name
        found = _systemd(spec, managers) if installed else (False, "not installed", False, "inactive", None)
    enabled, enabled_state, running, active_state, pid = found
    return ServiceStatus(
        kind=spec.kind,
        scope=scope,
        name=name,
        path=str(spec.service_file),
        installed=installed,
        enabled=enabled,
        running=running,
        enabled_state=enabled_state,
        active_state=active_state,
        pid=pid,
        env_file=str(spec.env_file),
        logs=spec.logs_hint,
    )


__all__ = ["NOT_INSTALLED", "NOT_RUNNING", "RUNNING", "ServiceStatus", "launchd_loaded", "launchd_target", "status"]
