"""Small JSON state files (sync.jsonfile): atomic replacement, also when threads write at once."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from sync.jsonfile import read_json_object, write_json_atomically


def test_written_then_read_back_and_bad_files_read_as_none(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "status.json"
    write_json_atomically(path, {"state": "ok", "cursor": 7}, durable=True)
    assert read_json_object(path) == {"state": "ok", "cursor": 7}
    assert read_json_object(tmp_path / "missing.json") is None
    (tmp_path / "torn.json").write_text('{"state": "o', encoding="utf-8")
    assert read_json_object(tmp_path / "torn.json") is None
    assert list(path.parent.iterdir()) == [path]  # no temp file left behind


def test_threads_writing_one_file_never_collide(tmp_path: Path) -> None:
    """The warm layer's loop and a search thread both write the status file."""
    path = tmp_path / "status.json"
    failures: list[BaseException] = []

    def write(writer: int) -> None:
        try:
            for n in range(200):
                write_json_atomically(path, {"writer": writer, "n": n, "pad": "x" * 2000})
        except BaseException as exc:  # collected for the assertion below
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert json.loads(path.read_text(encoding="utf-8"))["n"] == 199
    assert list(tmp_path.iterdir()) == [path]
