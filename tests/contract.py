"""The shared contracts (``contracts/`` at the repository root): the data files that these tests and
the TypeScript tests both run, so that neither server's copy of a policy drifts from the other's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

CONTRACTS: Final = Path(__file__).resolve().parents[1] / "contracts"


def contract(name: str) -> Any:
    """``contracts/<name>``, parsed."""
    return json.loads((CONTRACTS / name).read_text(encoding="utf-8"))
