"""Who may read memsync's files: its user only (folders 0700, files 0600), however it was started
(by hand, or as a service whose unit also says ``UMask=0077``). Memories are as private as the
user's mail; a process umask of 0o077, set before anything is created, gives every folder and
file memsync creates (SQLite's -wal and -shm, the archive, the search index, the warm host's files:
a child inherits it) its user's modes without one ``chmod`` a file.

A hub several local users share is an opt-in, ``backbone.shared_group``: the hub's folder is that
group's with the set-group-id bit (files created in it take the group) and the hub's files are
0660; the process umask is 0o007 then (the hub's files are made by whichever user's memsync comes
first, the archive and the alerts file too), so memsync's other files are 0660 and folders 0770,
in the user's own group. ``settle`` brings existing files to these modes at a
daemon's start (an install from before, or a file made while the opt-in was off).
"""

from __future__ import annotations

import contextlib
import grp
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from sync.errors import PathProblem

if TYPE_CHECKING:
    from daemon.config import Settings

PRIVATE_UMASK = 0o077
GROUP_UMASK = 0o007
PRIVATE_DIR, PRIVATE_FILE = 0o700, 0o600
SHARED_DIR, SHARED_FILE = 0o2770, 0o660


def private_by_default() -> None:
    """Before anything is created (the CLI's first line)."""
    os.umask(PRIVATE_UMASK)


def follow(settings: Settings) -> None:
    """Once the configuration is read: group-writable files where the hub is shared."""
    if settings.backbone.shared_group is not None:
        os.umask(GROUP_UMASK)


def _tree(root: Path) -> Iterator[Path]:
    if not root.is_dir() or root.is_symlink():
        return
    yield root
    for top, folders, files in os.walk(root):
        for name in (*folders, *files):
            yield Path(top, name)


def _with_journals(path: Path) -> list[Path]:
    return [path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")]


def _hub_files(settings: Settings) -> list[Path]:
    from sync.archive.files import ArchiveFolder

    hub = settings.hub_path
    return [*_with_journals(hub), *_with_journals(settings.alerts_path), *_tree(ArchiveFolder.beside(hub).root)]


def owned(settings: Settings) -> tuple[list[Path], list[Path]]:
    """memsync's own files and folders that exist: (private ones, the shared hub's ones). The
    hub's folder is memsync's only when it is the data dir or inside it, or when it is shared."""
    shared = []
    if settings.backbone.kind == "local" and settings.backbone.shared_group is not None:
        shared = [settings.hub_path.parent, *_hub_files(settings)]
    private = [
        *_tree(settings.resolved_data_dir),
        *_with_journals(settings.state_path),
        *_with_journals(settings.journal_state_path),
        *_with_journals(settings.journal_path),
        settings.lock_path,
        *_tree(settings.warm_dir),
    ]
    if settings.backbone.kind == "local" and not shared:
        private += _hub_files(settings)
    kept = set(shared)
    return [p for p in dict.fromkeys(private) if p not in kept and _exists(p)], [p for p in shared if _exists(p)]


def _exists(path: Path) -> bool:
    try:
        return not stat.S_ISLNK(path.lstat().st_mode)  # a link's target is not memsync's to change
    except OSError:
        return False


def settle(settings: Settings) -> list[Path]:
    """Existing files and folders brought to their modes (private ones only ever tightened);
    the ones changed. PathProblem if the shared hub's files cannot be given to the group."""
    sharing = settings.backbone.kind == "local" and settings.backbone.shared_group is not None
    if sharing:
        settings.hub_path.parent.mkdir(parents=True, exist_ok=True)  # set-group-id before any file is in it
    private, shared = owned(settings)
    group = str(settings.backbone.shared_group) if sharing else None
    return settle_paths(private, shared, GROUP_UMASK if sharing else PRIVATE_UMASK, group)


def settle_paths(private: list[Path], shared: list[Path], others: int, group: str | None) -> list[Path]:
    """``settle`` over paths found a moment ago: one gone since (SQLite deletes a ``-journal`` at
    the end of every transaction another site's daemon commits) is passed over, not an error."""
    changed = []
    for path in private:
        with contextlib.suppress(FileNotFoundError):
            mode = stat.S_IMODE(path.lstat().st_mode)
            if mode & others:
                os.chmod(path, mode & ~others)
                changed.append(path)
    if shared and group is not None:
        gid = grp.getgrnam(group).gr_gid
        for path in shared:
            try:
                info = path.lstat()
            except FileNotFoundError:
                continue
            want = SHARED_DIR if stat.S_ISDIR(info.st_mode) else SHARED_FILE
            if info.st_gid == gid and stat.S_IMODE(info.st_mode) == want:
                continue
            try:
                if info.st_gid != gid:
                    os.chown(path, -1, gid)
                os.chmod(path, want)
            except FileNotFoundError:
                continue
            except PermissionError:
                raise PathProblem(
                    f"cannot give {path} to the group {group!r} (backbone.shared_group) with mode {want:04o}: "
                    "the user who owns it must be in that group and run memsync once, or run "
                    f"`chgrp {group} {path} && chmod {want:o} {path}`"
                ) from None
            changed.append(path)
    return changed
