"""cloud_functions/_generated/api.d.ts lists every module Convex deploys.

It is committed (codegen needs a deployment or `npx convex codegen --system-udfs --init`), and tsc
passes without a module missing from it, so a new module can leave it behind unnoticed: `api.x.y`
then does not type-check for callers, and a deploy regenerates it with a diff nobody reviewed.
"""

from __future__ import annotations

import re

from harness.paths import ROOT

FUNCTIONS = ROOT / "cloud_functions"


def deployed_modules() -> set[str]:
    # Convex deploys every .ts file but those with more than one dot (tests, setup) and the schema.
    found = set()
    for path in [*FUNCTIONS.glob("*.ts"), *(FUNCTIONS / "lib").glob("*.ts")]:
        if path.name.count(".") == 1 and path.name != "schema.ts":
            found.add(path.relative_to(FUNCTIONS).with_suffix("").as_posix())
    return found


def test_the_generated_api_lists_every_deployed_module() -> None:
    text = (FUNCTIONS / "_generated" / "api.d.ts").read_text(encoding="utf-8")
    listed = set(re.findall(r'import type \* as \w+ from "\.\./([^"]+)\.js";', text))
    assert listed, "no module imports found in _generated/api.d.ts: its format changed"
    fix = "run `npx convex codegen --system-udfs --init --typecheck enable` and commit it"
    missing = sorted(deployed_modules() - listed)
    assert not missing, f"cloud_functions/_generated/api.d.ts lacks {missing}: {fix}"
    stale = sorted(listed - deployed_modules())
    assert not stale, f"cloud_functions/_generated/api.d.ts lists modules that are gone, {stale}: {fix}"
