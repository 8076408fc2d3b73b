"""Every exception memsync raises on purpose, grouped by what the caller should do about them.

- ``TransientError``: try again later, with backoff (the backbone or the vector store is busy or
  unreachable, the AgentDB file was caught mid-rewrite). ``RetryPolicy.call`` retries these and
  nothing else.
- ``PermanentError``: retrying the same thing will not help. A row is quarantined with the reason;
  a source problem (missing file, not SQLite) is reported and the daemon waits for the file to change.
- ``ConfigError``: only a person can fix it: the configuration is wrong, a path cannot be used
  (``PathProblem``), another source already feeds this site (``SourceConflict``), the backbone
  refused the site's secret, the local model's files are wrong, or the search index was built with
  another model (``CollectionMismatch``, fixed by ``memsync reindex``). The process exits with
  ``EX_CONFIG`` (78) so that systemd's ``RestartPreventExitStatus=78`` (and launchd's KeepAlive on
  failure only after a person restarts it) stops restarting it until someone acts.
- ``QuotaExhausted``: a provider's quota is used up until a known time (the next hour at the
  soonest). Not transient: no backoff should sleep through that, so nothing retries it; whoever
  meets it pauses that work until ``retry_after`` and says so (the warm layer shows it in
  ``status``), and a command exits 75.
- The rest each have one handler that knows what to do: ``AlreadyRunning`` (another process holds
  the site's lock: exit 75), ``DaemonNotListening`` (do it in this process instead),
  ``ControlError`` (the daemon answered with an error; its ``kind`` says which of the above) and
  ``ServiceError`` (a service command failed; it carries its exit code).

``Interrupted`` is not a ``MemsyncError``: it is a stop (SIGTERM during a backoff), not a failure,
and must pass through the handlers that report failures.

Not here, because they never reach a caller as errors: the CLI's ``Exit`` (an exit code on its way
out), ``sync.source.agentdb.rows``' private ``_Reject`` and ``daemon.loop.inotify``'s ``InotifyUnavailable``
(an ``OSError`` on which the file watcher falls back to polling).
"""

from __future__ import annotations

import errno
import os
import pwd
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

EX_CONFIG = 78
EX_TEMPFAIL = 75


class MemsyncError(Exception):
    """Base of every error memsync raises on purpose."""


# --- transient: retry with backoff ------------------------------------------------------------------


class TransientError(MemsyncError):
    """Worth retrying with backoff; ``retry_after`` is how long the other side asked us to wait."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class SnapshotNotReady(TransientError):
    """The AgentDB file was caught mid-write (torn); read it again shortly."""


class BackboneUnavailable(TransientError):
    """The backbone could not be reached or was busy."""


class StoreUnavailable(TransientError):
    """The vector store could not be reached or was busy."""


class StoreLocked(StoreUnavailable):
    """An embedded store is owned by another process (or another open handle); ``path`` names it."""

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message)
        self.path = path


# --- permanent: retrying the same input will not help ------------------------------------------------


class PermanentError(MemsyncError):
    """Retrying the same input will not help."""


class SourceUnavailable(PermanentError):
    """The AgentDB file is missing, is not SQLite, or has no episodes table."""


class SourceMissing(SourceUnavailable):
    """The AgentDB file does not exist yet: not a problem (the agent has not written), nothing to sync."""


class BackboneRejected(PermanentError):
    """The backbone refused a request for a reason retrying will not fix."""


class BackboneConflict(PermanentError):
    """The request contradicts the backbone's state (an approval already resolved or expired)."""


class BackboneNotFound(PermanentError):
    """No such record for this site (an approval or task id that is unknown or another site's)."""


class BackboneBroken(PermanentError):
    """The backbone's store is damaged (the embedded hub's file is corrupt or not SQLite): no retry
    will read it; the message names the file and what to do."""


class StoreRejected(PermanentError):
    """The vector store refused the request (wrong vector size, bad id, closed store, engine error)."""


class NotOurs(StoreRejected):
    """A drop refused: memsync did not make the collection (or adopted it), so it stays in place."""


# --- config: only a person can fix it (exit 78) --------------------------------------------------------


class ConfigError(MemsyncError):
    """The configuration is invalid; the message names the key or file."""


class PathProblem(ConfigError):
    """A file or folder memsync needs cannot be used as it is (unreadable, unwritable, a folder
    where a file belongs); the message names the path, the user memsync runs as and the fix."""

    @classmethod
    def from_os_error(cls, exc: OSError, key: str | None = None) -> PathProblem:
        """The one sentence for an OSError on a path: which path (and the setting that names it,
        when known), which user, what is wrong and what to do."""
        path = exc.filename if exc.filename is not None else "a path"
        what = key or "the setting that names it"
        reason, fix = _REASONS.get(exc.errno or 0, (exc.strerror or str(exc), "check it, or point {what} elsewhere"))
        if exc.errno == errno.ENOENT and isinstance(exc.filename, str) and os.path.islink(exc.filename):
            reason = f"it is a symbolic link to {os.readlink(exc.filename)}, which does not exist"
        named = f"{path} ({key})" if key else str(path)
        return cls(
            f"memsync runs as user {current_user()}, which cannot use {named}: {reason}; {fix.format(what=what)}"
        )


# errno -> (what is wrong, what to do); {what} is the setting that names the path.
_REASONS = {
    errno.ENOENT: ("it does not exist", "create it, or point {what} at one that does"),
    errno.ENOTDIR: ("a folder on the way to it is a file", "move that file away, or point {what} elsewhere"),
    errno.EISDIR: ("it is a folder where a file belongs", "point {what} at a file"),
    errno.EEXIST: ("something else is already there", "move it away, or point {what} elsewhere"),
    errno.EACCES: ("that user has no access to it", "give that user access, or point {what} at a place it owns"),
    errno.EPERM: ("that user may not change it", "give that user access, or point {what} at a place it owns"),
    errno.EROFS: ("it is on a read-only file system", "point {what} at a writable place"),
    errno.ENAMETOOLONG: ("the name is too long for the file system", "point {what} at a shorter path"),
    errno.ELOOP: ("its symbolic links go round in a loop", "fix the links, or point {what} elsewhere"),
    errno.ENOSPC: ("the disk is full", "free some space"),
    errno.EDQUOT: ("that user's disk quota is used up", "free some space"),
}


def current_user() -> str:
    """The user this process runs as, by name and uid: what a path problem is about."""
    uid = os.geteuid()
    try:
        return f"{pwd.getpwuid(uid).pw_name!r} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


class SourceConflict(ConfigError):
    """Another source (another machine, another AgentDB file) already feeds this site name."""


class BackboneAuthError(ConfigError):
    """The deployment refused this site's secret: only a configuration change can fix it."""


class CollectionMismatch(ConfigError):
    """The collection was built with another embedding model, size or BM25 settings."""


class ForeignCollection(ConfigError):
    """The collection was not made by memsync (no record): never written; build beside it or adopt it."""


class ModelFileError(ConfigError):
    """The local model or tokenizer file is missing or does not match its published checksum."""


class MissingPackage(ConfigError):
    """A package of an optional extra (``cloud``: Gemini, Voyage, reranking) is not installed."""


# --- paused: come back at a known time -------------------------------------------------------------------


class QuotaExhausted(MemsyncError):
    """``provider``'s quota is used up: pause until ``retry_after`` seconds from now, then resume."""

    def __init__(self, message: str, retry_after: float, provider: str) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.provider = provider


# --- between memsync's own processes ------------------------------------------------------------------


class AlreadyRunning(MemsyncError):
    """Another memsync process holds this site's lock."""

    def __init__(self, message: str, pid: int | None) -> None:
        super().__init__(message)
        self.pid = pid


class DaemonNotListening(MemsyncError):
    """No daemon answers on the control socket (none running, or one without the warm layer)."""


class ControlError(MemsyncError):
    """The daemon answered with an error; ``kind`` says which ("invalid", "config", "transient",
    "internal")."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


class ServiceError(MemsyncError):
    """A service command cannot go on; ``code`` is the exit code (78: only a person can fix it)."""

    def __init__(self, message: str, code: int = EX_CONFIG) -> None:
        super().__init__(message)
        self.code = code


# --- not an error: a stop ------------------------------------------------------------------------------


class Interrupted(Exception):
    """The stop event was set while waiting to retry; the last transient error is its cause."""


# --- Telegram (the alert and approval bot) ----------------------------------------------------------


class TelegramUnavailable(TransientError):
    """The Telegram Bot API did not answer, failed (5xx) or asked us to slow down (429, with
    ``retry_after``); the caller's outbox tries again later."""


class TelegramAuthError(ConfigError):
    """Telegram refused the bot token (401, or 404 on any method, which is how it answers a wrong
    token): only a new MEMSYNC_TELEGRAM__BOT_TOKEN fixes it."""


class TelegramConflict(PermanentError):
    """Telegram answered 409: another getUpdates poller or a webhook already receives this bot's
    updates, and only one receiver per bot token is allowed."""


class TelegramRejected(PermanentError):
    """Telegram refused this one request (a 4xx such as a chat not found, a blocked bot, a bad
    keyboard); the message carries Telegram's description."""
