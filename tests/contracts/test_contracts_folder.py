"""contracts/README.md's table is true: every contract file (or folder of files) has a row, and each
row names a Python test and a TypeScript test that exist and load that file (or folder, whose row
names each of its files)."""

from __future__ import annotations

import re

from contract import CONTRACTS

ROOT = CONTRACTS.parent
ROW = re.compile(r"^\| `([^`]+\.json|[^`/]+/)` \|([^|]*)\| `([^`]+\.py)` \| `([^`]+\.ts)`")


def test_every_contract_is_listed_with_the_two_tests_that_load_it() -> None:
    rows = [ROW.match(line) for line in (CONTRACTS / "README.md").read_text(encoding="utf-8").splitlines()]
    listed = {m.group(1): (m.group(2), m.group(3), m.group(4)) for m in rows if m is not None}
    folders = {f"{p.name}/" for p in CONTRACTS.iterdir() if p.is_dir()}
    assert set(listed) == {p.name for p in CONTRACTS.glob("*.json")} | folders
    for name, (says, *tests) in listed.items():
        if name in folders:
            for file in sorted((CONTRACTS / name).iterdir()):
                assert f"`{file.name}`" in says, f"the row of {name} does not name {file.name}"
        for test in tests:
            loads = f'"{name}' if name in folders else f'"{name}"'
            assert loads in (ROOT / test).read_text(encoding="utf-8"), f"{test} does not load {name}"
