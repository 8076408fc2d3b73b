"""Where memsync's files go by default, and which ``.env`` file counts: pure functions shared by
the settings and by the light paths' cache (``daemon.cli.locate``), so that the two can never
disagree."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def default_data_dir(environ: Mapping[str, str]) -> Path:
    base = environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "memsync"


def socket_path_for(socket: Path | None, data_dir: Path, site: str) -> Path:
    return socket or data_dir / f"{site}.sock"


def state_path_for(state: Path | None, data_dir: Path, site: str) -> Path:
    return state or data_dir / f"{site}.state.db"


def journal_path_for(data_dir: Path, site: str) -> Path:
    """The journal of memories agents save (``sync.source.journal``), a SQLite file memsync owns."""
    return data_dir / f"{site}.journal.db"


def journal_state_path_for(state_path: Path) -> Path:
    """The journal's own sidecar (cursor, hashes, quarantine), beside the site's."""
    return state_path.with_name(state_path.name + ".journal")


def lock_path_for(state_path: Path) -> Path:
    return state_path.with_name(state_path.name + ".lock")


def heartbeat_spool_for(state_path: Path) -> Path:
    """Where ``memsync heartbeat`` leaves agents' beats for the daemon to forward."""
    return state_path.with_name(state_path.name + ".heartbeats")


def env_file_for(config: Path | None, environ: Mapping[str, str]) -> Path | None:
    """The one ``.env`` file memsync reads, or None: the file MEMSYNC_ENV_FILE names (a service's
    secrets file), else the ``.env`` beside the config file, else, with no config file, the
    working directory's. Never the working directory's beside a config file elsewhere: hooks run
    in whatever project the agent works in, and that project's ``.env`` is not memsync's."""
    named = environ.get("MEMSYNC_ENV_FILE")
    if named:
        return Path(named)
    candidate = (config.resolve().parent if config is not None else Path.cwd()) / ".env"
    return candidate if os.path.lexists(candidate) else None
