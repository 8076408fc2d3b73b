"""The exceptions memsync raises on purpose, grouped by what the caller should do about them.

- ``TransientError``: try again later, with backoff (the backbone is busy or unreachable, the
  AgentDB file was caught mid-rewrite).
- ``PermanentError``: retrying the same thing will not help. A row is quarantined with the reason;
  a source problem (missing file, not SQLite) is reported and the daemon waits for the file to change.
- ``ConfigError``: only a person can fix it: the configuration is wrong, a path cannot be used
  (``PathProblem``), or another source already feeds this site (``SourceConflict``). The process
  exits with ``EX_CONFIG`` (78) so that systemd's ``RestartPreventExitStatus=78`` (and launchd's
  KeepAlive on failure only after a person restarts it) stops restarting it until someone acts.
"""

from __future__ import annotations

EX_CONFIG = 78
EX_TEMPFAIL = 75


class MemsyncError(Exception):
    """Base of every error memsync raises on purpose."""


class TransientError(MemsyncError):
    """Worth retrying with backoff; ``retry_after`` is how long the other side asked us to wait."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PermanentError(MemsyncError):
    """Retrying the same input will not help."""


class ConfigError(MemsyncError):
    """The configuration is invalid; the message names the key or file."""


class PathProblem(ConfigError):
    """A file or folder memsync needs cannot be used as it is (unreadable, unwritable, a folder
    where a file belongs); the message names the path, the user memsync runs as and the fix."""


class SourceConflict(ConfigError):
    """Another source (another machine, another AgentDB file) already feeds this site name."""


class SnapshotNotReady(TransientError):
    """The AgentDB file was caught mid-write (torn); read it again shortly."""


class SourceUnavailable(PermanentError):
    """The AgentDB file is missing, is not SQLite, or has no episodes table."""


class BackboneUnavailable(TransientError):
    """The backbone could not be reached or was busy."""


class BackboneRejected(PermanentError):
    """The backbone refused a request for a reason retrying will not fix."""


class BackboneConflict(PermanentError):
    """The request contradicts the backbone's state (an approval already resolved or expired)."""


class BackboneNotFound(PermanentError):
    """No such record for this site (an approval or task id that is unknown or another site's)."""


class AlreadyRunning(MemsyncError):
    """Another memsync process holds this site's lock."""

    def __init__(self, message: str, pid: int | None) -> None:
        super().__init__(message)
        self.pid = pid
