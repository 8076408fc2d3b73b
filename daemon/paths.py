"""Can this process use the files and folders the configuration names? Checked before anything is
opened, so that a wrong path is one sentence (which path, which user, what to do) rather than a
traceback from deep inside SQLite, and ``run`` exits 78 instead of restarting forever.

The AgentDB file is only read, but a reader of a WAL database writes ``-shm`` beside it, so its
folder must be writable then. memsync's own folders (data dir, state, hub, search index, socket)
are created when missing.
"""

from __future__ import annotations

import errno
import os
import pwd
import stat
from pathlib import Path

from daemon.config import Settings
from sync.errors import PathProblem, current_user


def user() -> str:
    return current_user()


def _said(exc: OSError, key: str) -> str:
    return str(PathProblem.from_os_error(exc, key))


def _missing(path: Path) -> OSError:
    return FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))


def _read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _account() -> str:
    """This process's user as a command line names it: its name, or its uid when it has none."""
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def _stat(path: Path, key: str) -> tuple[os.stat_result | None, str | None]:
    """The path's stat, None when it does not exist (not even as a dangling link), or the sentence
    for why it cannot be looked at (a folder on its way is a file, a name too long, no access)."""
    try:
        return os.stat(path), None
    except FileNotFoundError:
        if os.path.islink(path) and not Path(os.path.realpath(path)).parent.is_dir():
            return None, _said(_missing(path), key)  # a link to where nothing can be created
        return None, None
    except OSError as exc:
        return None, _said(exc, key)


def exists(path: Path, key: str) -> bool:
    """Whether ``path`` is there. Unlike ``Path.exists()``, which answers a quiet False, a path that
    cannot be looked at (a file on its way, no access, a name too long) is a PathProblem naming
    ``key``, the setting that puts it there."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise PathProblem.from_os_error(exc, key) from None
    return True


def agentdb_problem(path: Path) -> str | None:  # noqa: PLR0911 - a sentence a case
    """Why the AgentDB file cannot be read by this process, or None (a missing file is no problem:
    the agent may not have written it yet, and the daemon waits for it)."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None  # not written yet (a link to where the agent will write it, too)
    except OSError as exc:
        return _said(exc, "agentdb.path")
    if stat.S_ISDIR(found.st_mode):
        return (
            f"agentdb.path {path} is a folder, not an AgentDB file (memsync runs as user {user()}): point "
            "agentdb.path at the database file itself (the agent's AGENTDB_PATH, e.g. ~/.agentdb/agentdb.db)"
        )
    try:
        with path.open("rb"):
            pass
    except PermissionError:
        return (
            f"memsync runs as user {user()}, which cannot read the AgentDB file {path}: give that user read "
            f"access (e.g. `setfacl -m u:{_account()}:r {path}`, or a shared group), or run memsync as the agent's user"
        )
    except OSError as exc:
        return f"cannot open the AgentDB file {path}: {exc.strerror}"
    wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
    folder = path.parent
    if wal.exists() and not os.access(folder, os.W_OK) and not (shm.exists() and os.access(shm, os.R_OK | os.W_OK)):
        return (
            f"the AgentDB file {path} is a WAL database, whose readers write {shm.name} beside it, and user "
            f"{user()} cannot write to {folder}: give that user write access to the folder"
        )
    return None


def agentdb_folder_missing(path: Path) -> str | None:
    """A typo in agentdb.path, or None: the file missing is an agent that has not written yet, but
    with its folder missing too it is likelier a path no agent will ever write."""
    if os.path.lexists(path) or path.parent.is_dir():
        return None
    return (
        f"the AgentDB file's folder {path.parent} does not exist: check agentdb.path (the agent's "
        "AGENTDB_PATH); memsync waits for the file meanwhile"
    )


def check_agentdb(path: Path) -> None:
    problem = agentdb_problem(path)
    if problem is not None:
        raise PathProblem(problem)


def _own_folders(settings: Settings) -> dict[Path, str]:
    """memsync's folders, each with the setting that puts it there."""
    folders = {settings.state_path.parent: "state.path"}
    if settings.backbone.kind == "local":
        folders.setdefault(settings.hub_path.parent, "backbone.path")
    if settings.warm.enabled:
        folders.setdefault(settings.warm_dir, "warm.path")
        folders.setdefault(settings.socket_path.parent, "warm.socket")
    return folders


def _hint(key: str) -> str:
    return f"set {key} (or data_dir) to a folder that user owns"


def _folder_problem(folder: Path, key: str, *, create: bool) -> str | None:
    found, problem = _stat(folder, key)
    if problem is not None:
        return problem
    if found is None:
        return _absent_folder_problem(folder, key, create=create)
    if not stat.S_ISDIR(found.st_mode):
        return (
            f"memsync runs as user {user()}, which cannot use {folder} ({key}): it is a file, not a folder; "
            f"{_hint(key)}"
        )
    return _access_problem(folder, key)


def _absent_folder_problem(folder: Path, key: str, *, create: bool) -> str | None:  # noqa: PLR0911 - a sentence a case
    """Why a folder that is not there cannot be made (``create``: make it now), or None."""
    if os.path.islink(folder):
        return _said(_missing(folder), key)  # a link to a folder yet to be made: mkdir will not follow it
    existing = next((p for p in folder.parents if p.exists()), folder)
    cannot_create = (
        f"memsync runs as user {user()}, which cannot create {folder} ({key}): it has no write access "
        f"to {existing}; create the folder for that user, or {_hint(key)}"
    )
    if not create:
        if not existing.is_dir():
            return _said(NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(folder)), key)
        if os.access(existing, os.W_OK | os.X_OK):
            return None  # the daemon will create it
        if _read_only(existing):
            return _said(OSError(errno.EROFS, os.strerror(errno.EROFS), str(folder)), key)
        return cannot_create
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except PermissionError:
        return cannot_create
    except OSError as exc:
        return _said(exc, key)
    return _access_problem(folder, key)


def _access_problem(folder: Path, key: str) -> str | None:
    if os.access(folder, os.R_OK | os.W_OK | os.X_OK):
        return None
    if _read_only(folder):
        return _said(OSError(errno.EROFS, os.strerror(errno.EROFS), str(folder)), key)
    return (
        f"memsync runs as user {user()}, which cannot write to {folder} ({key}): "
        f"give that user write access, or {_hint(key)}"
    )


def _file_problem(path: Path, key: str) -> str | None:
    found, problem = _stat(path, key)
    if problem is not None or found is None:
        return problem
    if stat.S_ISDIR(found.st_mode):
        return f"memsync runs as user {user()}, which cannot use {path} ({key}): it is a folder; point {key} at a file"
    if not os.access(path, os.R_OK | os.W_OK):
        if _read_only(path):
            return _said(OSError(errno.EROFS, os.strerror(errno.EROFS), str(path)), key)
        return (
            f"memsync runs as user {user()}, which cannot write to {path} ({key}): "
            "give that user read and write access to it"
        )
    return None


def writable_problem(settings: Settings, *, create: bool) -> str | None:
    """Why memsync's own folders or files cannot be written, or None. ``create``: make missing
    folders (a syncing process) rather than only check that they could be made (``status``)."""
    for folder, key in _own_folders(settings).items():
        problem = _folder_problem(folder, key, create=create)
        if problem is not None:
            return problem
    files = {settings.state_path: "state.path"}
    if settings.backbone.kind == "local":
        files[settings.hub_path] = "backbone.path"
    for path, key in files.items():
        problem = _file_problem(path, key)
        if problem is not None:
            return problem
    return None


def check_writable(settings: Settings) -> None:
    """memsync's own folders exist (created if missing) and its files can be written: or PathProblem."""
    problem = writable_problem(settings, create=True)
    if problem is not None:
        raise PathProblem(problem)


def check_site(settings: Settings) -> None:
    """Everything a process that syncs the site needs (``run``, ``sync``): or PathProblem."""
    check_agentdb(settings.agentdb.path)
    check_writable(settings)
