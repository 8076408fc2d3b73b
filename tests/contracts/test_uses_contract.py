"""The kinds of use both backbones accept (sync/policy/salience.py): contracts/uses.json, which
cloud_functions/uses.test.ts runs too."""

from __future__ import annotations

import pytest
from contract import contract

from sync.policy.salience import HANDED_KINDS, OPENED_KINDS, USE_KINDS, check_kind

KINDS = contract("uses.json")


def test_the_kinds_are_the_contract() -> None:
    assert list(HANDED_KINDS) == KINDS["handed"]
    assert list(OPENED_KINDS) == KINDS["opened"]
    assert list(USE_KINDS) == KINDS["handed"] + KINDS["opened"]


def test_another_kind_is_refused_in_the_contracts_sentence() -> None:
    refused = KINDS["refused"]
    with pytest.raises(ValueError) as caught:
        check_kind(refused["kind"])
    assert str(caught.value) == refused["sentence"]
