"""The search index's small files, found from the settings (``sync.search.collection.files``
says what each holds): light, so that ``memsync status`` and the demo read them without importing
the embedders and vector stores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from daemon.config import Settings
from sync.jsonfile import read_json_object, write_json_atomically
from sync.search.collection.cursor import CursorFile
from sync.search.collection.files import CollectionsFile, IndexFolder


def index_folder(settings: Settings) -> IndexFolder:
    return IndexFolder(settings.warm_dir)


def cursor_file(settings: Settings) -> CursorFile:
    return CursorFile(index_folder(settings).cursor)


class Collections(CollectionsFile):
    """The site's ``collections.json``, for its configured collection (``warm.collection``)."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(index_folder(settings).collections, settings.warm.collection)


def status_path(settings: Settings) -> Path:
    return index_folder(settings).status


def read_status(settings: Settings) -> dict[str, Any] | None:
    return read_json_object(status_path(settings))


def write_status(settings: Settings, data: dict[str, Any]) -> None:
    write_json_atomically(status_path(settings), data)
