"""Everything a service file says, in one frozen value: :class:`ServiceSpec`, and where each file goes.

Rendering (``systemd.py``, ``launchd.py``) is a pure function of a spec, and so is building one from
the settings (:func:`spec_for`): whatever needs the machine (which ``memsync`` program to run, the
service user's home and group) is resolved by the caller and passed in.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from daemon.config import SITE_NAME, Settings

Kind = Literal["systemd", "launchd"]
KINDS: tuple[Kind, ...] = ("systemd", "launchd")

SYSTEM_UNIT_DIR = Path("/etc/systemd/system")
# Root-only secrets for system units: systemd reads EnvironmentFile= as root, before it drops to User=.
SYSTEM_ENV_DIR = Path("/etc/memsync")
# launchd starts agents with PATH=/usr/bin:/bin:/usr/sbin:/sbin; memsync's own folder and Homebrew's
# come first so that whatever memsync runs is found where the person installed it.
MAC_PATH = ("/opt/homebrew/bin", "/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin")


def unit_name(site: str) -> str:
    return f"memsync-{site}.service"


def launchd_label(site: str) -> str:
    return f"com.memsync.{site}"


def user_env_file(home: Path, site: str) -> Path:
    """Secrets of a user unit or a LaunchAgent: private to the user, outside any config folder that
    may be shared or committed."""
    return home / ".config" / "memsync" / f"{site}.env"


def env_file_for(*, system: bool, home: Path, site: str) -> Path:
    return SYSTEM_ENV_DIR / f"{site}.env" if system else user_env_file(home, site)


def _covered(path: Path, by: Path) -> bool:
    return path == by or by in path.parents


@dataclass(frozen=True)
class ServiceSpec:
    """One site's service. Paths are absolute; ``home`` is the home of the user the service runs as."""

    kind: Kind
    site: str
    executable: Path
    config: Path
    home: Path
    data_dir: Path
    agentdb_dir: Path
    # Folders memsync writes outside its data dir (a hub, state file or warm store placed elsewhere).
    extra_writable: tuple[Path, ...] = ()
    system: bool = False  # systemd only: a system unit running as ``user``/``group``
    user: str | None = None  # rendering a system unit needs both; uninstall and status do not
    group: str | None = None
    watchdog_sec: int = 60

    def __post_init__(self) -> None:
        if not SITE_NAME.fullmatch(self.site):
            raise ValueError(f"site name {self.site!r} cannot name a service")
        paths = {
            "executable": self.executable,
            "config": self.config,
            "home": self.home,
            "data dir": self.data_dir,
            "AgentDB folder": self.agentdb_dir,
            **{f"writable path {p}": p for p in self.extra_writable},
        }
        for what, path in paths.items():
            if not path.is_absolute():
                raise ValueError(f"the {what} must be an absolute path, not {path}")
            # A line break would end the setting early, and a unit file has no way to escape one.
            if any(ch in str(path) for ch in "\n\r\0"):
                raise ValueError(f"the {what} {str(path)!r} contains a line break or NUL")
        if self.system and self.kind != "systemd":
            raise ValueError("memsync installs launchd services as LaunchAgents only (no --system)")
        if self.watchdog_sec < 2:
            raise ValueError("watchdog_sec must be at least 2 seconds")

    # -- names and places -------------------------------------------------------------------------
    @property
    def unit_name(self) -> str:
        return unit_name(self.site)

    @property
    def label(self) -> str:
        return launchd_label(self.site)

    @property
    def service_file(self) -> Path:
        """Where the rendered file is installed."""
        if self.kind == "launchd":
            return self.home / "Library" / "LaunchAgents" / f"{self.label}.plist"
        if self.system:
            return SYSTEM_UNIT_DIR / self.unit_name
        return self.home / ".config" / "systemd" / "user" / self.unit_name

    @property
    def env_file(self) -> Path:
        return env_file_for(system=self.system, home=self.home, site=self.site)

    @property
    def log_dir(self) -> Path:
        """launchd only: systemd services log to the journal."""
        return self.home / "Library" / "Logs" / "memsync"

    @property
    def log_file(self) -> Path:
        return self.log_dir / f"{self.site}.log"

    @property
    def logs_hint(self) -> str:
        """Where to read the service's logs, as a person would type it."""
        if self.kind == "launchd":
            return str(self.log_file)
        return f"journalctl{'' if self.system else ' --user'} -u memsync-{self.site}"

    @property
    def writable(self) -> tuple[Path, ...]:
        """Every folder the sandbox must leave writable, none inside another: the data dir, the
        AgentDB file's folder (a reader of a WAL database writes its ``-shm`` file there), then the rest."""
        kept: list[Path] = []
        for path in (self.data_dir, self.agentdb_dir, *self.extra_writable):
            if any(_covered(path, other) for other in kept):
                continue
            kept = [other for other in kept if not _covered(other, path)]
            kept.append(path)
        return tuple(kept)

    @property
    def search_path(self) -> str:
        """PATH for a LaunchAgent."""
        folders = [str(self.executable.parent), *MAC_PATH]
        return ":".join(dict.fromkeys(folders))


def spec_for(
    settings: Settings,
    *,
    kind: Kind,
    executable: Path,
    home: Path,
    system: bool = False,
    user: str | None = None,
    group: str | None = None,
) -> ServiceSpec:
    """The spec for these settings. ``home`` is the service user's home.

    The data dir is the config's, else the default the service itself would pick: for a system unit
    that is under the service user's home (systemd sets HOME from User=), not under the home of
    whoever runs the installer. Every unit pins it (MEMSYNC_DATA_DIR), so that the daemon writes to
    exactly the folder its sandbox opened, whatever XDG_DATA_HOME the service sees."""
    if settings.config_file is None:
        raise ValueError("a service runs memsync with a config file: pass -c FILE")
    if settings.data_dir is not None:
        data_dir = settings.data_dir
    elif system:
        data_dir = home / ".local" / "share" / "memsync"
    else:
        data_dir = settings.resolved_data_dir
    effective = settings.model_copy(update={"data_dir": data_dir})
    extra: list[Path] = [effective.state_path.parent]  # the state file and its lock file
    if settings.backbone.kind == "local":
        extra.append(effective.hub_path.parent)
    if settings.warm.enabled:
        extra.append(effective.socket_path.parent)
        if settings.warm.store == "edge":
            extra.append(effective.warm_dir)
    outside = tuple(dict.fromkeys(p for p in extra if not _covered(p, data_dir)))
    return ServiceSpec(
        kind=kind,
        site=settings.site.name,
        executable=executable,
        config=Path(settings.config_file),
        home=home,
        data_dir=data_dir,
        agentdb_dir=settings.agentdb.path.parent,
        extra_writable=outside,
        system=system,
        user=user,
        group=group,
    )


__all__ = [
    "KINDS",
    "Kind",
    "ServiceSpec",
    "env_file_for",
    "launchd_label",
    "spec_for",
    "unit_name",
    "user_env_file",
]
