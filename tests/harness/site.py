"""A site's files and its config, in the two layouts the tests and the benchmarks use: one TOML
renderer under both, so that a config key is spelled in one place."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH_SITE = "bench"  # the site make_site lays out unless told another


@dataclass(frozen=True, slots=True)
class SiteFiles:
    """A site's files: its config, the AgentDB file it syncs, its hub (the embedded backbone), its
    state database, and where the harness's daemon for it logs."""

    root: Path
    agentdb: Path
    hub: Path
    state: Path
    config: Path
    name: str
    log: Path

    @property
    def lock(self) -> Path:
        """The site lock a running daemon holds (``daemon.config_paths.lock_path_for``)."""
        return self.state.with_name(self.state.name + ".lock")

    def settings(self) -> Any:
        """The settings as the product loads them from the config (and the environment)."""
        from daemon.config import load_settings

        return load_settings(self.config)


def config_text(
    *,
    data_dir: Path,
    name: str,
    agentdb: Path,
    state: Path,
    backbone: str,
    log: str,
    agentdb_keys: str = "",
    sync: str | None = None,
    warm: str | None = None,
    extra: str = "",
) -> str:
    """A site's TOML. ``backbone``, ``log``, ``sync`` and ``warm`` are those tables' keys, one a line
    (a table given as None is left out: every key at the product's default); ``extra``: whole tables."""
    tables: list[tuple[str, str | None]] = [
        ("site", f'name = "{name}"\n'),
        ("agentdb", f'path = "{agentdb}"\n{agentdb_keys}'),
        ("backbone", backbone),
        ("state", f'path = "{state}"\n'),
        ("sync", sync),
        ("log", log),
        ("warm", warm),
    ]
    text = f'data_dir = "{data_dir}"\n'
    for table, keys in tables:
        if keys is not None:
            text += f"\n[{table}]\n{keys}"
    return f"{text}\n{extra}" if extra else text


def write_config(
    root: Path,
    name: str,
    agentdb: Path,
    hub: Path,
    *,
    log_format: str | None = "json",
    kind: str = "local",
    backbone: str = "",
    sync: str = "",
    extra: str = "",
    warm: str | None = None,
) -> SiteFiles:
    """The tests' layout: ``<root>/<name>.toml`` and ``<name>.state.db``, the AgentDB file and hub
    where the test says; a quick poll and debug logs. ``backbone``/``sync``/``warm`` add keys to
    those tables, ``extra`` whole tables. The warm layer (embedding every episode) is off unless
    ``warm`` is given: the sync tests measure syncing, and the warm tests turn it on. The nightly
    dream job is off unless ``extra`` has a ``[jobs.dream]`` table: a daemon started between 02:00
    and 20:00 UTC would run the night's slot at once and hide a test's near-duplicates, so a test's
    results would depend on the hour."""
    root.mkdir(parents=True, exist_ok=True)
    site = SiteFiles(root, agentdb, hub, root / f"{name}.state.db", root / f"{name}.toml", name, root / f"{name}.log")
    site.config.write_text(
        config_text(
            data_dir=root / "data",
            name=name,
            agentdb=agentdb,
            agentdb_keys="poll_interval = 0.2\n",
            backbone=f'kind = "{kind}"\npath = "{hub}"\n{backbone}',
            state=site.state,
            sync=sync,
            log='level = "debug"\n' + (f'format = "{log_format}"\n' if log_format else ""),
            warm="enabled = false\n" if warm is None else f"{warm}\n",
            extra=extra if "[jobs.dream]" in extra else f"{extra}\n[jobs.dream]\nenabled = false\n",
        ),
        encoding="utf-8",
    )
    return site


def make_site(
    root: Path,
    agentdb: Path | None = None,
    *,
    name: str = BENCH_SITE,
    convex_url: str | None = None,
    warm: bool = True,
    warm_keys: str = "",
    redact: bool = True,
    hub: Path | None = None,
    dream: bool = False,
) -> SiteFiles:
    """The benchmarks' layout, a site as in production: the agent's folder holds only the AgentDB
    file, ``agent/agentdb.db`` under ``root`` unless ``agentdb`` names another; memsync's files are
    in ``memsync/`` (its data directory), the config is ``memsync.toml``. Every setting is at the
    product default (the warm layer on) but for JSON logs at info.

    With ``convex_url`` the backbone is that Convex deployment instead of the embedded hub (the
    product reads the site's secret from the environment, MEMSYNC_BACKBONE__SITE_SECRET, never from
    the file). With ``warm=False`` the config adds ``[warm] enabled = false``: syncing alone, no
    search index; ``warm_keys`` are more keys for ``[warm]``. With ``redact=False``, ``[privacy]
    redact = false``: episodes leave unredacted. The nightly dream job is off unless ``dream``: a
    daemon started between 02:00 and 20:00 UTC would run the night's slot at once, folding what a
    benchmark measures while it measures it (``bench.dream_effect`` runs it by hand). The
    embedded hub is ``memsync/hub.db`` under ``root`` unless ``hub`` names another."""
    agentdb, state_dir = agentdb or root / "agent" / "agentdb.db", root / "memsync"
    agentdb.parent.mkdir(parents=True, exist_ok=True)
    state_dir.mkdir(parents=True, exist_ok=True)
    hub = hub or state_dir / "hub.db"
    site = SiteFiles(
        root, agentdb, hub, state_dir / f"{name}.state.db", root / "memsync.toml", name, root / "daemon.log"
    )
    warm_table = ("" if warm else "enabled = false\n") + warm_keys
    site.config.write_text(
        config_text(
            data_dir=state_dir,
            name=name,
            agentdb=agentdb,
            backbone=f'kind = "convex"\nurl = "{convex_url}"\n' if convex_url else f'kind = "local"\npath = "{hub}"\n',
            state=site.state,
            log='format = "json"\nlevel = "info"\n',
            warm=warm_table or None,
            extra=("" if redact else "[privacy]\nredact = false\n")
            + ("" if dream else "[jobs.dream]\nenabled = false\n"),
        ),
        encoding="utf-8",
    )
    return site


def warm_section(tmp_path: Path, short_dir: Path, name: str = "laptop") -> str:
    """A site's [warm] settings for tests that search through a daemon: the index under tmp_path,
    the control socket under short_dir (socket paths are short), a quick catch-up."""
    return f'path = "{tmp_path / "warm"}"\nsocket = "{short_dir / f"{name}.sock"}"\ncatch_up_interval = 0.5\n'


@contextmanager
def short_dir(prefix: str = "ms-") -> Iterator[Path]:
    """A folder of its own under /tmp, for control sockets: Unix socket paths are limited to ~100
    bytes, and pytest's and a benchmark's temporary paths can be longer."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
