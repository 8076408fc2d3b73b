"""The files ``memsync service install`` writes: the service file (mode 0644, replaced atomically),
the env file for secrets (created empty with mode 0600, never overwritten), and the folders the
service needs (owned by the service's user, so that a system unit can write where it must)."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sync.errors import ServiceError


@dataclass(frozen=True)
class Owner:
    """Who the service runs as; folders created for it are given to it."""

    uid: int
    gid: int


def _fail(what: str, path: Path, exc: OSError) -> ServiceError:
    why = exc.strerror or str(exc)
    if isinstance(exc, PermissionError):
        return ServiceError(f"cannot {what} {path} ({why}): run as a user who may, or with sudo for --system")
    return ServiceError(f"cannot {what} {path} ({why})")


def make_dirs(path: Path, owner: Owner | None = None, mode: int = 0o700) -> list[Path]:
    """Create ``path`` and any missing parents, each given to ``owner``; returns the folders created."""
    missing: list[Path] = []
    for folder in (path, *path.parents):
        if folder.exists():
            break
        missing.append(folder)
    created: list[Path] = []
    try:
        for folder in reversed(missing):
            folder.mkdir(mode=mode)
            os.chmod(folder, mode)  # the mode asked for, whatever the umask (memsync's own is 0o077)
            created.append(folder)
            if owner is not None:
                os.chown(folder, owner.uid, owner.gid)
    except OSError as exc:
        raise _fail("create the folder", path, exc) from None
    return created


def write_file(path: Path, text: str, mode: int = 0o644) -> bool:
    """Write ``text`` to ``path`` atomically with ``mode``; returns whether the content changed."""
    try:
        if path.read_text(encoding="utf-8") == text and stat.S_IMODE(path.stat().st_mode) == mode:
            return False
    except (OSError, UnicodeDecodeError):
        pass
    make_dirs(path.parent, mode=0o755)
    try:
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.chmod(temporary, mode)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError as exc:
        raise _fail("write", path, exc) from None
    return True


def ensure_env_file(path: Path, folder_mode: int = 0o700) -> bool:
    """Create ``path`` empty with mode 0600 unless it exists; returns whether it was created."""
    make_dirs(path.parent, mode=folder_mode)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    except OSError as exc:
        raise _fail("create", path, exc) from None
    os.fchmod(fd, 0o600)  # whatever the umask
    os.close(fd)
    return True


def loose_mode(path: Path) -> int | None:
    """The file's mode when group or others may read it (a secrets file should not), else None."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return None
    return mode if mode & 0o077 else None


def remove_file(path: Path) -> bool:
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise _fail("remove", path, exc) from None
    return True


def reachable_by(path: Path, uid: int, gids: set[int], want: int) -> bool:
    """Whether ``uid`` (in ``gids``) may ``want`` (os.R_OK / os.X_OK) ``path``, by its mode bits and
    those of every folder above it: enough to catch a config or program left under /root."""
    if uid == 0:
        return True

    def allows(target: Path, bits: int) -> bool:
        info = target.stat()
        mode = info.st_mode
        if info.st_uid == uid:
            return bool(mode & (bits << 6))
        if info.st_gid in gids:
            return bool(mode & (bits << 3))
        return bool(mode & bits)

    try:
        return all(allows(folder, os.X_OK) for folder in path.parents) and allows(path, want)
    except OSError:
        return False


__all__ = ["Owner", "ensure_env_file", "loose_mode", "make_dirs", "reachable_by", "remove_file", "write_file"]
