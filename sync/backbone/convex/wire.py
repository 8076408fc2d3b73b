"""Reading the deployment's documents back as the hub gives them: an episode as ``export`` prints
it, what a forget did, and the optional numbers."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sync.backbone.base import Forgotten
from sync.episode import EXPORT_FIELDS


def exported(episode: Mapping[str, Any]) -> dict[str, Any]:
    """As the hub exports it: the documented fields in order, then ``approvalStatus`` only for an
    episode an approval is about, and ``archived: true`` only for an archived episode."""
    record = dict(episode)
    text = record.get("metadataJson")
    if isinstance(text, str):
        record["metadata"] = json.loads(text)
    out = {name: record.get(name) for name in EXPORT_FIELDS}
    if record.get("approvalStatus") is not None:
        out["approvalStatus"] = record["approvalStatus"]
    if record.get("dream") is not None:  # a standing dream step hides it (sync.backbone.dreams)
        out["dream"] = dict(record["dream"])
    if record.get("archived") is True:
        out["archived"] = True
    return out


def forgotten(value: Mapping[str, Any]) -> Forgotten:
    week = value.get("archiveWeek")
    return Forgotten(bool(value["deleted"]), None if week is None else str(week))


def int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)
