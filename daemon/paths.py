"""Can this process use the files and folders the configuration names? Checked before anything is
opened, so that a wrong path is one sentence (which path, which user, what to do) rather than a
traceback from deep inside SQLite, and ``run`` exits 78 instead of restarting forever.

The AgentDB file is only read, but a reader of a WAL database writes ``-shm`` beside it, so its
folder must be writable then. memsync's own folders (data dir, state, hub, search index, socket)
are created when missing.
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path

from daemon.config import Settings
from sync.errors import PathProblem


def user() -> str:
    uid = os.geteuid()
    try:
        return f"{pwd.getpwuid(uid).pw_name!r} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _account() -> str:
    """This process's user as a command line names it: its name, or its uid when it has none."""
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def agentdb_problem(path: Path) -> str | None:
    """Why the AgentDB file cannot be read by this process, or None (a missing file is no problem:
    the agent may not have written it yet, and the daemon waits for it)."""
    if path.is_dir():
        return (
            f"agentdb.path {path} is a folder, not an AgentDB file: point agentdb.path at the database file "
            "itself (the agent's AGENTDB_PATH, e.g. ~/.agentdb/agentdb.db)"
        )
    if not path.exists():
        return None
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


def _folder_problem(folder: Path, key: str, *, create: bool) -> str | None:  # noqa: PLR0911 - one sentence a case
    hint = f"or set {key} (or data_dir) to a folder that user owns"
    if not create and not folder.exists():
        existing = next((p for p in folder.parents if p.exists()), folder)
        if os.access(existing, os.W_OK | os.X_OK):
            return None  # the daemon will create it
        return (
            f"memsync runs as user {user()}, which cannot create {folder} ({key}): it has no write access "
            f"to {existing}; create the folder for that user, {hint}"
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except PermissionError:
        existing = next((p for p in folder.parents if p.exists()), folder)
        return (
            f"memsync runs as user {user()}, which cannot create {folder} ({key}): it has no write access "
            f"to {existing}; create the folder for that user, {hint}"
        )
    except FileExistsError:
        return f"{folder} ({key}) is a file, not a folder: {hint.removeprefix('or ')}"
    except OSError as exc:
        return f"cannot create {folder} ({key}): {exc.strerror}"
    if not os.access(folder, os.W_OK | os.X_OK):
        return (
            f"memsync runs as user {user()}, which cannot write to {folder} ({key}): "
            f"give that user write access, {hint}"
        )
    return None


def _file_problem(path: Path, key: str) -> str | None:
    if path.is_dir():
        return f"{key} {path} is a folder: point {key} at a file (memsync creates it)"
    if path.exists() and not os.access(path, os.R_OK | os.W_OK):
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
