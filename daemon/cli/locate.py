"""Where a site's control socket is, from the config file and the environment alone: the light
path of ``memsync search`` (``daemon.cli.search``) needs only this, not the full settings
(pydantic), whose import costs more than the search itself.

It must agree with ``Settings.socket_path``; ``tests/test_cli_light.py`` checks that it does. Whatever
it is not sure of (a ``.env`` file, a value it does not expect) makes it answer None, and the
caller loads the full settings instead, which is slower but never wrong.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from daemon.config_paths import default_data_dir, socket_path_for

PREFIX = "MEMSYNC_"


def _anchored(value: Any, base: Path) -> Path | None:
    if not isinstance(value, str):
        return None
    path = Path(value).expanduser()
    return Path(os.path.normpath(path if path.is_absolute() else base / path))


def quick_socket_path(config: Path | None, environ: Mapping[str, str]) -> Path | None:
    """The control socket ``Settings`` would name, or None when only the full settings can tell."""
    if Path(".env").is_file():
        return None  # python-dotenv's parsing rules are not worth copying here
    values: dict[str, Any] = {}
    if config is not None:
        try:
            values = tomllib.loads(config.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            return None  # the full path says what is wrong
    base = config.resolve().parent if config is not None else Path.cwd()
    site = values.get("site") if isinstance(values.get("site"), dict) else {}
    warm = values.get("warm") if isinstance(values.get("warm"), dict) else {}
    name = environ.get(f"{PREFIX}SITE__NAME", site.get("name") if isinstance(site, dict) else None)
    enabled = environ.get(f"{PREFIX}WARM__ENABLED", warm.get("enabled", True) if isinstance(warm, dict) else True)
    if not isinstance(name, str) or enabled not in (True, "true", "True", "1"):
        return None
    socket = environ.get(f"{PREFIX}WARM__SOCKET")
    if socket is not None:
        return Path(socket)
    data_dir_env = environ.get(f"{PREFIX}DATA_DIR")
    data_dir = Path(data_dir_env) if data_dir_env else _anchored(values.get("data_dir"), base)
    file_socket = _anchored(warm.get("socket"), base) if isinstance(warm, dict) else None
    return socket_path_for(file_socket, data_dir or default_data_dir(environ), name)
