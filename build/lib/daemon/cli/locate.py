"""Where a site's control socket, state file and lock are, from the config file and the
environment alone: the light paths of ``memsync search`` and ``memsync sync`` with a daemon
running need only these, not the full settings (pydantic), whose import costs more than the work.

They must agree with ``Settings``; ``tests/test_cli_light.py`` checks that they do. Whatever this
is not sure of (a ``.env`` file, a value it does not expect) makes it answer None, and the caller
loads the full settings instead, which is slower but never wrong.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from daemon.config_paths import default_data_dir, lock_path_for, socket_path_for, state_path_for

PREFIX = "MEMSYNC_"
TRUE = (True, "true", "True", "1")


@dataclass(frozen=True, slots=True)
class QuickPaths:
    site: str
    socket: Path | None  # None when the search index is off
    state: Path
    lock: Path


def _anchored(value: Any, base: Path) -> Path | None:
    if not isinstance(value, str):
        return None
    path = Path(value).expanduser()
    return Path(os.path.normpath(path if path.is_absolute() else base / path))


def _table(values: dict[str, Any], name: str) -> dict[str, Any]:
    table = values.get(name)
    return table if isinstance(table, dict) else {}


def quick_paths(config: Path | None, environ: Mapping[str, str]) -> QuickPaths | None:
    """The paths ``Settings`` would name, or None when only the full settings can tell."""
    if Path(environ.get("MEMSYNC_ENV_FILE") or ".env").is_file():
        return None  # python-dotenv's parsing rules are not worth copying here
    values: dict[str, Any] = {}
    if config is not None:
        try:
            values = tomllib.loads(config.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            return None  # the full path says what is wrong
    base = config.resolve().parent if config is not None else Path.cwd()
    site, warm, state = _table(values, "site"), _table(values, "warm"), _table(values, "state")
    name = environ.get(f"{PREFIX}SITE__NAME", site.get("name"))
    enabled = environ.get(f"{PREFIX}WARM__ENABLED", warm.get("enabled", True))
    if not isinstance(name, str):
        return None
    data_dir_env = environ.get(f"{PREFIX}DATA_DIR")
    data_dir = (Path(data_dir_env) if data_dir_env else _anchored(values.get("data_dir"), base)) or default_data_dir(
        environ
    )
    socket_env, state_env = environ.get(f"{PREFIX}WARM__SOCKET"), environ.get(f"{PREFIX}STATE__PATH")
    socket = Path(socket_env) if socket_env else _anchored(warm.get("socket"), base)
    state_path = state_path_for(Path(state_env) if state_env else _anchored(state.get("path"), base), data_dir, name)
    return QuickPaths(
        site=name,
        socket=socket_path_for(socket, data_dir, name) if enabled in TRUE else None,
        state=state_path,
        lock=lock_path_for(state_path),
    )
