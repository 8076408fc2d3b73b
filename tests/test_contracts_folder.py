"""contracts/README.md's table is true: every contract file has a row, and each row names a Python
test and a TypeScript test that exist and load that file."""

from __future__ import annotations

import re

from contract import CONTRACTS

ROOT = CONTRACTS.parent
ROW = re.compile(r"^\| `([^`]+\.json)` \|[^|]*\| `([^`]+\.py)` \| `([^`]+\.ts)`")


def test_every_contract_is_listed_with_the_two_tests_that_load_it() -> None:
    rows = [ROW.match(line) for line in (CONTRACTS / "README.md").read_text(encoding="utf-8").splitlines()]
    listed = {m.group(1): (m.group(2), m.group(3)) for m in rows if m is not None}
    assert set(listed) == {p.name for p in CONTRACTS.glob("*.json")}
    for name, tests in listed.items():
        for test in tests:
            assert f'"{name}"' in (ROOT / test).read_text(encoding="utf-8"), f"{test} does not load {name}"
