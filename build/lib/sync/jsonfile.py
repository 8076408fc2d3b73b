"""Small JSON state files written atomically (temp file, then rename), so a reader or a crash never
sees half a file. ``durable`` adds an fsync for the files whose loss would cost more than time:
the vector store's model record and which collection serves searches."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def write_json_atomically(path: Path, data: Mapping[str, Any], *, durable: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # One temp file per writing thread: two threads writing the same file must not share one.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2, sort_keys=True)
        if durable:
            fh.flush()
            os.fsync(fh.fileno())
    os.replace(tmp, path)


def read_json_object(path: Path) -> dict[str, Any] | None:
    """The file's JSON object, or None when it is missing, unreadable or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
