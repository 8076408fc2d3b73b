"""Where a site's control socket, state file and lock are, for the light paths of ``memsync
search``, ``sync`` and ``heartbeat`` with a daemon running: they need only these, not the full
settings (pydantic), whose import costs more than the work.

But a light path must not accept a config the full one refuses (a typo would pass every hook and
stop the daemon at its next restart). So the paths come from a cache of the full settings' own
answer, written by every command that loaded and validated them (``common.load``) and keyed on
what they were made from: the config file's and the ``.env`` file's stamps (path, inode, size,
mtime and ctime in ns), the MEMSYNC_ variables, HOME and XDG_DATA_HOME, and memsync's own config
code. Anything else (no entry, a changed file, a cache that cannot be read) answers None, and the
caller loads the full settings, which validates, says what is wrong, and writes the entry for
the next hook.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from daemon.config_paths import env_file_for

if TYPE_CHECKING:
    from daemon.config import Settings

CACHE_FORMAT = 1
_ENVIRONMENT = ("HOME", "XDG_DATA_HOME")  # besides MEMSYNC_*: what the default paths depend on
_CONFIG_CODE = Path(__file__).resolve().parent.parent / "config.py"  # a new memsync may read a config otherwise


@dataclass(frozen=True, slots=True)
class QuickPaths:
    site: str
    socket: Path | None  # None when the search index is off
    state: Path
    lock: Path


def cache_dir(environ: Mapping[str, str]) -> Path:
    base = environ.get("XDG_CACHE_HOME") or str(Path(environ.get("HOME") or Path.home()) / ".cache")
    return Path(base) / "memsync"


def _stamp(path: Path) -> list[int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return [found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns]


def _entry_file(config: Path | None, environ: Mapping[str, str]) -> Path:
    named = str(Path(config).absolute()) if config is not None else ""
    return cache_dir(environ) / f"settings-{hashlib.sha256(named.encode()).hexdigest()[:24]}.json"


def stamps(config: Path | None, environ: Mapping[str, str]) -> dict[str, Any]:
    """What the settings were made from, as of now: take it before reading them, so that a file
    changed while they load makes the entry stale rather than wrong."""
    dotenv = env_file_for(config, environ)
    variables = sorted((k, v) for k, v in environ.items() if k.startswith("MEMSYNC_") or k in _ENVIRONMENT)
    return {
        "format": CACHE_FORMAT,
        "config": None if config is None else [str(Path(config).absolute()), _stamp(config)],
        "dotenv": None if dotenv is None else [str(dotenv.absolute()), _stamp(dotenv)],
        # A digest, not the values: secrets (MEMSYNC_*_SECRET, _KEY, _TOKEN) never reach the file.
        "environment": hashlib.sha256(json.dumps(variables).encode()).hexdigest(),
        "code": _stamp(_CONFIG_CODE),
        "cwd": None if config is not None else os.getcwd(),  # relative paths and ./.env are the cwd's
    }


def quick_paths(config: Path | None, environ: Mapping[str, str]) -> QuickPaths | None:
    """The paths of settings that validated with the same files and variables, or None."""
    try:
        key = stamps(config, environ)
        entry = json.loads(_entry_file(config, environ).read_text(encoding="utf-8"))
        if entry["key"] != key or (entry["cwd"] is not None and entry["cwd"] != os.getcwd()):
            return None
        paths = entry["paths"]
        socket = paths["socket"]
        return QuickPaths(
            site=str(paths["site"]),
            socket=None if socket is None else Path(socket),
            state=Path(paths["state"]),
            lock=Path(paths["lock"]),
        )
    except (OSError, ValueError, KeyError, TypeError, RuntimeError):
        return None


def remember(settings: Settings, config: Path | None, key: dict[str, Any], environ: Mapping[str, str]) -> None:
    """Keep these validated settings' paths for the light paths (``key`` from ``stamps``, taken
    before they were read). A cache that cannot be written only costs the next hook the full path."""
    import tempfile  # only here: the light paths that read the cache do not pay for it

    socket = settings.socket_path if settings.warm.enabled else None
    paths = [settings.state_path, settings.lock_path, *([socket] if socket is not None else [])]
    entry = {
        "key": key,
        # A relative path (from a variable) means the working directory's; otherwise any will do.
        "cwd": None if all(p.is_absolute() for p in paths) else os.getcwd(),
        "paths": {
            "site": settings.site.name,
            "socket": None if socket is None else str(socket),
            "state": str(settings.state_path),
            "lock": str(settings.lock_path),
        },
    }
    try:
        target = _entry_file(config, environ)  # RuntimeError: no HOME to keep it in
        try:
            if json.loads(target.read_text(encoding="utf-8")) == entry:
                return  # every command comes here: an unchanged entry is not written again
        except (OSError, ValueError):
            pass
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=".settings-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(entry, out)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except (OSError, RuntimeError):
        pass
