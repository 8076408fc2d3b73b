"""The embedded hub's archive folder: ``<hub>.archive/<site>/<week>.<sha12>.jsonl.gz`` beside the
hub file (``<hub>`` its name without the extension: ``hub.archive/`` for ``hub.db``, as the alerts
file is ``hub.alerts.db``), each with its manifest as ``<same name>.manifest.json`` (so the folder describes itself
to someone restoring it without memsync).

A file's name carries the start of its sha256: a rewrite is a new file, and the hub's
``archive_files`` row switches to it in the transaction that commits the archiving (or the forget),
so a crash at any point leaves the row naming a complete, verified file. Files no row names are
left-overs of such a crash; ``orphans`` lists them for removal once they are old enough that no
writer can still be about to commit them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection
from dataclasses import asdict
from pathlib import Path

from sync.archive.manifest import ArchiveFile
from sync.jsonfile import write_json_atomically

SUFFIX = ".jsonl.gz"
MANIFEST_SUFFIX = ".manifest.json"
# A file no row names is removed only after this long: a writer commits within seconds of writing.
ORPHAN_AGE_S = 3600.0


def location_of(site: str, week: str, sha256: str) -> str:
    """The file's path inside the archive folder (what the hub's row records)."""
    return f"{site}/{week}.{sha256[:12]}{SUFFIX}"


class ArchiveFolder:
    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def beside(cls, hub_path: Path) -> ArchiveFolder:
        return cls(hub_path.with_name(hub_path.stem + ".archive"))

    def path(self, location: str) -> Path:
        return self.root / location

    def write(self, location: str, data: bytes, file: ArchiveFile) -> None:
        """The file, then its manifest, each durable (fsync, rename, fsync the folder) before the
        hub commits a row naming it."""
        path = self.path(location)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with tmp.open("wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        write_json_atomically(
            path.with_name(path.name.removesuffix(SUFFIX) + MANIFEST_SUFFIX), asdict(file), durable=True
        )
        _fsync_folder(path.parent)

    def read(self, location: str) -> bytes | None:
        try:
            return self.path(location).read_bytes()
        except FileNotFoundError:
            return None

    def remove(self, location: str) -> None:
        path = self.path(location)
        for victim in (path, path.with_name(path.name.removesuffix(SUFFIX) + MANIFEST_SUFFIX)):
            victim.unlink(missing_ok=True)

    def orphans(self, named: Collection[str], now: float | None = None) -> list[str]:
        """Archive files no row names, old enough to be a crashed writer's."""
        if not self.root.is_dir():
            return []
        now = time.time() if now is None else now
        found = []
        for path in self.root.glob(f"*/*{SUFFIX}"):
            location = path.relative_to(self.root).as_posix()
            if location not in named and now - path.stat().st_mtime > ORPHAN_AGE_S:
                found.append(location)
        return sorted(found)

    def size(self) -> int:
        """Bytes of every archive file (what ``status`` shows)."""
        if not self.root.is_dir():
            return 0
        return sum(p.stat().st_size for p in self.root.glob(f"*/*{SUFFIX}"))


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
