"""A site's name (daemon/config.py): which names are taken and the sentence that refuses the others,
from contracts/site_names.json, which cloud_functions/siteNames.test.ts runs against sites.ts too."""

from __future__ import annotations

from typing import Any

import pytest
from contract import contract
from pydantic import ValidationError

from daemon.config import SITE_NAME, SITE_NAME_RULE, SiteSection

NAMES = contract("site_names.json")


def test_the_rule_is_the_contract() -> None:
    assert NAMES["pattern"] == SITE_NAME.pattern
    assert NAMES["rule"] == SITE_NAME_RULE


@pytest.mark.parametrize("case", NAMES["names"], ids=lambda c: repr(c["name"]))
def test_a_site_name(case: dict[str, Any]) -> None:
    if case["ok"]:
        assert SiteSection(name=case["name"]).name == case["name"]
    else:
        with pytest.raises(ValidationError, match=r"site|name") as refused:
            SiteSection(name=case["name"])
        assert NAMES["rule"] in str(refused.value)
