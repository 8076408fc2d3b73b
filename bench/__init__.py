"""The benchmarks: ``python -m bench.<name>``, ``python -m bench.run_all`` for every one.

They drive the real parts through the harness the tests use (``tests/harness/``, free of pytest):
tests/ goes on ``sys.path`` here, before any benchmark's module loads, so that each imports
``harness`` as the tests do."""

import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parents[1] / "tests")
if _TESTS not in sys.path:
    sys.path.append(_TESTS)
