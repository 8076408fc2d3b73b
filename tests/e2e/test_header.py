"""The snapshot guard: which byte strings are accepted as a complete SQLite file. Pure."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from sync.agentdb import header_problem


@pytest.fixture(scope="module")
def real_bytes(agentdb_cache: Callable[..., Path]) -> bytes:
    return agentdb_cache(50).read_bytes()


def patched(data: bytes, offset: int, value: bytes) -> bytes:
    return data[:offset] + value + data[offset + len(value) :]


def test_a_whole_file_from_the_real_package_is_accepted(real_bytes: bytes) -> None:
    assert header_problem(real_bytes) is None


@pytest.mark.parametrize("keep", [0, 15, 99, 100, 4096, -4096, -1])
def test_torn_files_are_refused_as_not_ready(real_bytes: bytes, keep: int) -> None:
    torn = real_bytes[:keep]
    problem = header_problem(torn)
    assert problem is not None
    assert not problem.permanent, problem.reason


@pytest.mark.parametrize(
    ("mutate", "permanent", "words"),
    [
        pytest.param(lambda d: b"PK\x03\x04" + d[4:], True, "not a SQLite file", id="a zip file"),
        pytest.param(lambda d: b"hello, world\n", True, "not a SQLite file", id="a text file"),
        pytest.param(lambda d: patched(d, 92, b"\x00\x00\x00\x63"), False, "mid-write", id="counter mismatch"),
        pytest.param(lambda d: patched(d, 28, b"\x00\x00\x00\x02"), False, "pages", id="page count mismatch"),
        pytest.param(lambda d: patched(d, 16, b"\x03\x00"), True, "page size", id="bad page size"),
        pytest.param(lambda d: d + b"\x00" * 4096, False, "pages", id="longer than the header says"),
    ],
)
def test_inconsistent_headers(real_bytes: bytes, mutate: Callable[[bytes], bytes], permanent: bool, words: str) -> None:
    problem = header_problem(mutate(real_bytes))
    assert problem is not None
    assert problem.permanent is permanent
    assert words in problem.reason


def test_page_size_one_means_65536(tmp_path: Path) -> None:
    path = tmp_path / "big-pages.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA page_size = 65536")
    conn.execute("CREATE TABLE episodes (id INTEGER PRIMARY KEY)")
    conn.commit()
    conn.close()
    data = path.read_bytes()
    assert data[16:18] == b"\x00\x01"
    assert header_problem(data) is None
