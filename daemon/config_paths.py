"""Where memsync's files go by default: pure functions shared by the settings and by the light
path of ``memsync search`` (``daemon.cli.locate``), so that the two can never disagree."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def default_data_dir(environ: Mapping[str, str]) -> Path:
    base = environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "memsync"


def socket_path_for(socket: Path | None, data_dir: Path, site: str) -> Path:
    return socket or data_dir / f"{site}.sock"


def state_path_for(state: Path | None, data_dir: Path, site: str) -> Path:
    return state or data_dir / f"{site}.state.db"


def lock_path_for(state_path: Path) -> Path:
    return state_path.with_name(state_path.name + ".lock")


def heartbeat_spool_for(state_path: Path) -> Path:
    """Where ``memsync heartbeat`` leaves agents' beats for the daemon to forward."""
    return state_path.with_name(state_path.name + ".heartbeats")
