"""Tier: unit. A memory page's further sections, pure: each link with its reason, the dream steps
that name it with unmerge for a standing one, its use and pin with the one button that flips it,
the approvals about it, the correction form (or why there is none); every action a POST carrying the
CSRF value; memory text always escaped."""

from __future__ import annotations

import re

from daemon.usecases.memory.pins import MemoryUse
from daemon.viewer.html import Markup
from daemon.viewer.pages.memory import memory_page_body
from daemon.viewer.pages.sections import (
    approvals_section,
    correct_section,
    dream_section,
    links_section,
    split_tags,
    use_section,
)
from sync.backbone.base import Approval, UseTotals
from sync.backbone.dreams import DreamStep
from sync.policy.links import EpisodeRef, Link
from sync.search.request import EpisodeView, SearchResult

HOSTILE = "<script>alert(1)</script>"
CSRF = "c" * 64
NOW = 1_800_000_000_000
KEY = ("laptop", "7")


def tags_in(html: str) -> set[str]:
    return {m.lower() for m in re.findall(r"<\s*([a-zA-Z][a-zA-Z0-9]*)", html)}


def forms(html: str) -> list[str]:
    return re.findall(r"<form .*?</form>", html, re.S)


def test_each_link_shows_its_kind_its_other_end_and_why() -> None:
    links = [
        Link(EpisodeRef("vm", "m3"), "updates", "out", "it updates vm:m3", task=HOSTILE),
        Link(EpisodeRef("laptop", "6"), "led_to", "in", "just before it in session s1"),
    ]
    title, body = links_section(links)
    assert title == "Links"
    assert 'href="/memory/vm/m3"' in body
    assert "it updates vm:m3" in body
    assert "just before it in session s1" in body
    assert "&lt;script&gt;" in body
    assert "script" not in tags_in(body)
    assert "no related memories" in links_section([])[1]
    assert "the hub is away" in links_section(None, "the hub is away")[1]


def step(step_id: str, undone_by: str | None = None) -> DreamStep:
    return DreamStep(
        step_id,
        "consolidates",
        KEY,
        (("laptop", "8"), ("vm", "2")),
        NOW,
        "dream@1 on laptop",
        "same fix, same port 8443",
        undone_at=None if undone_by is None else NOW,
        undone_by=undone_by,
    )


def test_a_standing_step_offers_unmerge_and_an_undone_one_says_who_undid_it() -> None:
    _, body = dream_section([step("s1"), step("s0", "ana")], KEY, csrf=CSRF, action="/memory/laptop/7/unmerge")
    assert "this memory consolidated" in body
    assert "same fix, same port 8443" in body
    (form,) = forms(body)
    assert 'action="/memory/laptop/7/unmerge"' in form
    assert 'method="post"' in form
    assert f'name="csrf" value="{CSRF}"' in form
    assert 'name="step" value="s1"' in form
    assert "undone by ana" in body
    _, member = dream_section([step("s1")], ("vm", "2"), csrf=CSRF, action="/x")
    assert "folded into" in member
    assert 'href="/memory/laptop/7"' in member


def use(pinned: bool) -> MemoryUse:
    totals = UseTotals("laptop", "7", 3, NOW - 60_000, {"context_hook": 2, "get_episode": 1}, pinned, "ana", NOW)
    return MemoryUse(KEY, 1.0 if pinned else 0.42, totals)


def test_the_use_section_flips_between_pin_and_unpin() -> None:
    _, unpinned = use_section(use(False), now_ms=NOW, csrf=CSRF, action="/memory/laptop/7/pin")
    assert "3 times (context_hook 2, get_episode 1)" in unpinned
    assert "0.42" in unpinned
    assert "not pinned" in unpinned
    (form,) = forms(unpinned)
    assert 'name="pinned" value="yes"' in form
    assert f'value="{CSRF}"' in form
    _, pinned = use_section(use(True), now_ms=NOW, csrf=CSRF, action="/memory/laptop/7/pin")
    assert "pinned by ana" in pinned
    assert 'name="pinned" value="no"' in pinned
    assert "Unpin" in pinned
    _, never = use_section(MemoryUse(KEY, 0.3, None), now_ms=NOW, csrf=CSRF, action="/p")
    assert "0 times" in never
    assert "never" in never


def test_the_approvals_about_a_memory_show_their_status() -> None:
    asked = Approval("ap1", "coder", "deploy", "approved", "normal", (), NOW, "ana", summary=HOSTILE, site="laptop")
    _, body = approvals_section([asked])
    assert "ap1" in body
    assert "approved" in body
    assert "by ana" in body
    assert "script" not in tags_in(body)
    assert "no approval names it" in approvals_section([])[1]


def test_the_correction_form_keeps_the_type_unless_one_is_chosen() -> None:
    _, body = correct_section("warning", True, ["ops", "project:shop", HOSTILE], csrf=CSRF, action="/r", refused=None)
    (form,) = forms(body)
    assert '<option value="" selected>keep warning (given)</option>' in form
    assert '<option value="decision">decision</option>' in form
    assert 'name="tags" value="ops, &lt;script&gt;alert(1)&lt;/script&gt;"' in form  # project tags stay
    assert f'value="{CSRF}"' in form
    _, refused = correct_section(None, None, [], csrf=CSRF, action="/r", refused="laptop:7 is an agent's own episode")
    assert forms(refused) == []
    assert "agent&#x27;s own episode" in refused
    assert split_tags(" a, ,b ,a") == ["a", "b", "a"]


def test_the_memory_page_shows_its_type_the_sections_and_a_message() -> None:
    e = SearchResult(
        "p",
        "laptop",
        "7",
        0,
        None,
        NOW,
        "coder",
        "s1",
        "task",
        [],
        None,
        None,
        HOSTILE,
        memory_type="error_fix",
        type_given=False,
        dream="merged",
    )
    html = memory_page_body(
        EpisodeView(e), now_ms=NOW, csrf=CSRF, sections=[("Links", Markup("<ul></ul>"))], message="pinned: yes"
    )
    assert "error fix (inferred)" in html
    assert "merged by the dream" in html
    assert "<h2>Links</h2>" in html
    assert "pinned: yes" in html
    assert "script" not in tags_in(html)
