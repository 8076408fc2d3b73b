"""The hashed lock (requirements/dev.txt) read as pins, and the constraints file made from it.

The lock is what `make bootstrap` installs, byte for byte. People who install memsync as a tool
(`pipx install ./memsync`) get the same versions through requirements/constraints.txt: the lock's
pins without hashes, because pip takes no hashes in a constraints file. `make constraints` writes
it with this module; tests/unit/test_lock.py fails when the two disagree.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")
HEADER = (
    "# The versions of requirements/dev.txt (the hashed lock), without hashes: for installing memsync\n"
    "# as a tool with these versions (README, Install). Written by `make constraints`; do not edit.\n"
)


def normalise(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(lock_text: str) -> dict[str, str]:
    """Every `name==version` the lock pins, by normalised name."""
    found: dict[str, str] = {}
    for line in lock_text.splitlines():
        match = PIN.match(line)
        if match:
            found[normalise(match.group(1))] = match.group(2)
    return found


def constraints(lock_text: str) -> str:
    """The constraints file's text for a lock's text."""
    body = "".join(f"{name}=={version}\n" for name, version in sorted(pins(lock_text).items()))
    return HEADER + body


if __name__ == "__main__":
    sys.stdout.write(constraints(Path(sys.argv[1]).read_text(encoding="utf-8")))
