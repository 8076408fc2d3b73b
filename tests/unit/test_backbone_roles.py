"""``Coordination`` is the union of narrow roles, and its consumers take the role they use.

The roles split its calls with no call left over and none in two roles (a new call lands in the role
its consumers need); both backbones implement every role; and no module outside ``sync/backbone``
names ``Coordination``, so a consumer cannot quietly widen back to the whole of it.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from sync.backbone.base import Approvals, Coordination, Forgetting, JobLeases, Links, Registry, Reports, Tasks
from sync.backbone.convex import ConvexBackbone
from sync.backbone.hub import HubBackbone

ROOT = Path(__file__).resolve().parents[2]
ROLES = (Registry, JobLeases, Approvals, Tasks, Reports, Forgetting)


def _calls(role: type) -> set[str]:
    """The calls a Protocol declares itself (not those of the roles it is made of)."""
    return {name for name, value in vars(role).items() if inspect.isfunction(value) and not name.startswith("_")}


def test_the_roles_split_coordination_with_nothing_left_over_and_nothing_shared() -> None:
    assert _calls(Coordination) == {"close"}, "a call of Coordination's own: put it in the role that uses it"
    seen: dict[str, str] = {}
    for role in ROLES:
        assert role in Coordination.__mro__
        for call in _calls(role):
            assert call not in seen, f"{call} is in both {seen[call]} and {role.__name__}"
            seen[call] = role.__name__
    assert len(seen) == 21


@pytest.mark.parametrize("backbone", [HubBackbone, ConvexBackbone])
@pytest.mark.parametrize("role", [*ROLES, Links], ids=lambda r: r.__name__)
def test_each_backbone_plays_each_role(backbone: type, role: type) -> None:
    for call in _calls(role):
        ours, theirs = inspect.signature(getattr(backbone, call)), inspect.signature(getattr(role, call))
        assert list(ours.parameters) == list(theirs.parameters), f"{backbone.__name__}.{call}"


def test_no_consumer_takes_the_whole_of_coordination() -> None:
    wide = []
    for path in sorted([*ROOT.joinpath("daemon").rglob("*.py"), *ROOT.joinpath("sync").rglob("*.py")]):
        if path.is_relative_to(ROOT / "sync" / "backbone"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Name) and node.id == "Coordination":
                wide.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            elif isinstance(node, ast.alias) and node.name == "Coordination":
                wide.append(f"{path.relative_to(ROOT)}: imports it")
    assert wide == [], "type each consumer with the role it uses (sync/backbone/base.py), not Coordination"
