"""Loading a config for the service commands, which need its paths but never its secrets.

A config for the Convex backbone (or a cloud embedder) does not load without its secret, and the
place that secret belongs, the per-site env file, is what ``install`` creates: asking for the secret
first would send people to put it in their shell, where the service never sees it. So the env file
is read the way the service will read it, and a required secret that is still absent gets a
stand-in value for the length of the load: the paths come out right, and ``install`` says which
secret to put where and leaves the service stopped until then. The stand-in is never rendered:
services are rendered from paths only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from dotenv import dotenv_values

from daemon.config import Settings, env_file

SITE_SECRET = "MEMSYNC_BACKBONE__SITE_SECRET"  # noqa: S105 (a variable's name, not its value)
EMBEDDER_KEY = "MEMSYNC_WARM__API_KEY"
_STAND_IN = "memsync-service-stand-in"
# Read by the CLI, not by the service.
_NOT_FOR_THE_SERVICE = {"MEMSYNC_CONFIG", "MEMSYNC_DATA_DIR"}


@dataclass(frozen=True)
class Loaded:
    settings: Settings
    missing_secrets: tuple[str, ...]  # required by the config, not in the env file
    shell_only: tuple[str, ...]  # MEMSYNC_ variables set here that the service will not see


def read_env_file(path: Path) -> dict[str, str]:
    """The file's variables, or nothing when it is missing or not readable by this user."""
    try:
        if not path.is_file():
            return {}
        return {k: v for k, v in dotenv_values(path).items() if v is not None}
    except (OSError, UnicodeDecodeError):
        return {}


@contextmanager
def _environment(values: Mapping[str, str]) -> Iterator[None]:
    """os.environ with ``values`` over it and stand-ins for absent secrets; restored afterwards.
    (pydantic-settings reads os.environ itself: there is no environment to hand it.)"""
    saved = dict(os.environ)
    found = env_file()
    dotenv = dotenv_values(found) if found is not None and found.is_file() else {}
    try:
        os.environ.update(values)
        for name in (SITE_SECRET, EMBEDDER_KEY):
            if not os.environ.get(name) and not dotenv.get(name):
                os.environ[name] = _STAND_IN
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _required(settings: Settings) -> list[str]:
    names = []
    if settings.backbone.kind == "convex":
        names.append(SITE_SECRET)
    if settings.warm.enabled and settings.warm.embedder != "local":
        names.append(EMBEDDER_KEY)
    return names


def load_for_service(load: Callable[[], Settings], env_file_of: Callable[[str], Path]) -> Loaded:
    """``load()`` (the CLI's own loader) run with the site's env file, as the service will see it;
    ``env_file_of(site)`` says where that file is."""
    with _environment({}):
        first = load()
    values = read_env_file(env_file_of(first.site.name))
    with _environment(values):
        settings = load()
    missing = tuple(name for name in _required(settings) if not values.get(name))
    shell_only = tuple(
        sorted(
            name
            for name in os.environ
            if name.upper().startswith("MEMSYNC_") and name.upper() not in _NOT_FOR_THE_SERVICE and name not in values
        )
    )
    return Loaded(settings, missing, shell_only)


__all__ = ["EMBEDDER_KEY", "SITE_SECRET", "Loaded", "load_for_service", "read_env_file"]
