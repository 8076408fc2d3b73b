"""Running the service managers (``systemctl``, ``loginctl``, ``launchctl``), found on PATH.

PATH is the one seam: the tests put stand-in programs first on it. Every failure becomes a
:class:`sync.errors.ServiceError`: one sentence naming the problem and what to do, and an exit code.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from sync.errors import ServiceError

# What to do when a manager is missing, by program.
_MISSING = {
    "systemctl": "this machine does not run systemd: use --kind launchd on a Mac, "
    "or run `memsync run -c FILE` under the supervisor you have",
    "loginctl": "install systemd-logind, or keep a session open for the user",
    "launchctl": "launchd services need macOS: use --kind systemd on Linux",
}
# `systemctl enable --now` waits for READY=1, which waits for systemd's start timeout at worst.
TIMEOUT = 180.0


@dataclass(frozen=True)
class Result:
    argv: tuple[str, ...]
    code: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.code == 0

    @property
    def command(self) -> str:
        return " ".join(self.argv)

    def reason(self) -> str:
        """The program's own last words, for an error message."""
        lines = [line.strip() for line in (self.stderr or self.stdout).splitlines() if line.strip()]
        return lines[-1] if lines else f"exit status {self.code}"


@dataclass(frozen=True)
class Managers:
    """The managers on ``path`` (a PATH string); ``env`` is the environment they run with."""

    path: str
    env: dict[str, str]

    def which(self, program: str) -> str | None:
        return shutil.which(program, path=self.path)

    def require(self, program: str) -> str:
        """The program's path; a ServiceError (exit 78) saying what to do when it is not on PATH."""
        found = self.which(program)
        if found is None:
            raise ServiceError(f"{program} is not on PATH: {_MISSING.get(program, 'install it')}")
        return found

    def run(self, program: str, *args: str) -> Result:
        """Run ``program args``; a missing program is a ServiceError, a failing one a Result."""
        found = self.require(program)
        argv = (program, *args)
        try:
            done = subprocess.run(
                [found, *args],
                capture_output=True,
                text=True,
                env={**self.env, "PATH": self.path},
                timeout=TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ServiceError(f"`{' '.join(argv)}` did not finish in {TIMEOUT:.0f} seconds", 1) from None
        except OSError as exc:
            raise ServiceError(f"could not run {found}: {exc.strerror or exc}", 1) from None
        return Result(argv, done.returncode, done.stdout, done.stderr)

    def must(self, program: str, *args: str, hint: str = "") -> Result:
        """Run it, and turn a failure into a ServiceError (exit 1) naming the command and its reason."""
        result = self.run(program, *args)
        if not result.ok:
            raise ServiceError(f"`{result.command}` failed ({result.reason()}){hint}", 1)
        return result


def systemctl_args(system: bool, *args: str) -> Sequence[str]:
    return args if system else ("--user", *args)


__all__ = ["TIMEOUT", "Managers", "Result", "systemctl_args"]
