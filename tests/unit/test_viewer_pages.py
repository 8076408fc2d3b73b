"""The viewer's HTML and its auth, pure: memory text is escaped wherever it shows, a template's
values cannot add fields, the login token works once, a session expires, CSRF values are per
session."""

from __future__ import annotations

import re

import pytest

from daemon.usecases.fleet.jobs import Digest
from daemon.viewer.auth import CSP, Sessions, session_cookie
from daemon.viewer.html import Markup, esc, page, render
from daemon.viewer.pages.digest import digest_body
from daemon.viewer.pages.fleet import fleet_live
from daemon.viewer.pages.memory import Searched, SearchForm, memory_page_body, search_form, search_results
from sync.search.request import EpisodeView, Passage, SearchAnswer, SearchResult, Why

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def result(text: str = HOSTILE, **fields: object) -> SearchResult:
    base: dict[str, object] = {
        "id": "p1",
        "site": "laptop",
        "source_id": "7",
        "score": 1.0,
        "similarity": 0.5,
        "ts": 1_700_000_000_000,
        "agent": "coder",
        "session": "s1",
        "task": HOSTILE,
        "tags": ["bug", "<b>tag</b>"],
        "reward": 0.9,
        "success": True,
        "text": text,
        "relevance": 0.8,
        "why": Why("learned", 0.8, exact=("E1234",), terms=2, of=3, words=("deploy", "error")),
    }
    base.update(fields)
    return SearchResult(**base)  # type: ignore[arg-type]


def tags_in(html: str) -> set[str]:
    return {m.lower() for m in re.findall(r"<\s*([a-zA-Z][a-zA-Z0-9]*)", html)}


def test_esc_escapes_markup_characters_and_keeps_markup() -> None:
    assert esc(HOSTILE) == ("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;")
    assert esc(Markup("<b>ok</b>")) == "<b>ok</b>"
    assert esc(None) == ""


def test_a_value_cannot_add_a_field_or_markup() -> None:
    assert render("<p>{a}</p>", a="{b}<i>") == "<p>{b}&lt;i&gt;</p>"


def test_search_results_show_hostile_memory_text_as_text() -> None:
    found = Searched(answer=SearchAnswer([result()], cut=2, absent=("JIRA-1",)))
    html = search_results(found, SearchForm(q="deploy"), now_ms=1_700_000_060_000)
    assert "script" not in tags_in(html)
    assert "img" not in tags_in(html)
    assert html.count("&lt;script&gt;") == 2  # the title and the text
    assert "relevance 0.80" in html
    assert "E1234" in html
    assert "2 more under the relevance floor" in html
    assert "absent: JIRA-1" in html
    assert 'href="/?q=deploy&amp;mode=hybrid&amp;all=1"' in html  # show everything keeps the query


def test_a_long_episodes_result_shows_the_passage_that_matched() -> None:
    text = "start " * 100 + "the passage that matched"
    hit = result(text, passage=Passage(3, 4, len(text) - 24, len(text), "the passage that matched"))
    html = search_results(Searched(answer=SearchAnswer([hit])), SearchForm(q="x"), now_ms=0)
    assert "the passage that matched" in html
    assert "start start" not in html


def test_a_search_from_a_link_without_a_mode_is_hybrid() -> None:
    assert SearchForm.of({"q": " deploy ", "all": "1"}) == SearchForm(q="deploy", mode="hybrid", all=True)


def test_the_search_form_keeps_its_values_escaped() -> None:
    html = search_form(SearchForm(q='"><script>', mode="bm25", agent="a<b", site="vm"), ["laptop", "vm"])
    assert 'value="&quot;&gt;&lt;script&gt;"' in html
    assert '<option value="bm25" selected>' in html
    assert '<option value="vm" selected>' in html
    assert "script" not in tags_in(html)


def test_a_memory_page_escapes_everything_and_offers_forget_with_the_csrf_value() -> None:
    before = result("earlier", id="p0", source_id="6", task="earlier <u>step</u>")
    view = EpisodeView(result(), before=[before])
    html = memory_page_body(view, now_ms=1_700_000_060_000, csrf="tok123", sections=[("Links", Markup("<p>l</p>"))])
    assert tags_in(html) <= {
        "p",
        "dl",
        "dt",
        "dd",
        "code",
        "h2",
        "pre",
        "ol",
        "li",
        "a",
        "section",
        "form",
        "input",
        "label",
        "button",
        "time",
        "span",
    }
    assert '<input type="hidden" name="csrf" value="tok123">' in html
    assert 'action="/memory/laptop/7/forget"' in html
    assert "required" in html
    assert "<h2>Links</h2><p>l</p>" in html
    assert "&lt;b&gt;tag&lt;/b&gt;" in html
    assert "earlier &lt;u&gt;step&lt;/u&gt;" in html


def test_a_missing_memory_says_so() -> None:
    assert "no such memory" in memory_page_body(EpisodeView(None), now_ms=0, csrf="x")


def test_the_fleet_marks_an_offline_site_and_escapes_names() -> None:
    report = {
        "health": "down",
        "reasons": ["site <vm> is offline"],
        "pendingApprovals": 1,
        "sites": [
            {"site": "laptop", "online": True, "last_heartbeat": 1_000_000, "lag_s": 1.0, "backlog": 0},
            {"site": "<vm>", "online": False, "last_heartbeat": 400_000, "index_state": "ready"},
        ],
        "agents": [],
    }
    html = fleet_live(
        report, [], [{"signal": "offline", "subject": "<vm>", "state": "down", "since": 500_000}], 1_060_000
    )
    assert '<tr data-site="laptop" class="online">' in html
    assert '<tr data-site="&lt;vm&gt;" class="offline">' in html
    assert "silent since 11m ago" in html
    assert "site &lt;vm&gt; is offline" in html
    assert "no agent seen yet" in html


def test_the_digest_names_today_so_far_and_escapes_top_tasks() -> None:
    found = Digest(
        "2026-01-02",
        {"sites": [{"site": "laptop", "episodes": 3, "agents": [{"agent": "c", "episodes": 3, "topTasks": ["<x>"]}]}]},
    )
    html = digest_body(found, "2026-01-02", ["2026-01-02", "2026-01-01"])
    assert "<h2>today so far</h2>" in html
    assert "&lt;x&gt;" in html
    assert "3 episodes" in html
    missing = digest_body(Digest("2026-01-01", None, "no digest for 2026-01-01: run it"), "2026-01-02", ["2026-01-01"])
    assert "no digest for 2026-01-01: run it" in missing


def test_a_page_loads_only_the_viewers_own_script_and_stylesheet() -> None:
    html = page(title="<T>", active="fleet", body=Markup("<p>b</p>"), site="laptop", script=True)
    assert '<script src="/static/viewer.js" defer></script>' in html
    assert html.count("<script") == 1
    assert '<a href="/fleet" aria-current="page">Fleet</a>' in html
    assert "<title>&lt;T&gt; · memsync</title>" in html
    assert "http" not in html  # no asset from the network


def test_the_login_token_opens_one_session_once() -> None:
    sessions = Sessions()
    token = sessions.login_token
    assert token is not None
    assert sessions.login("wrong", 0.0) is None
    session = sessions.login(token, 0.0)
    assert session is not None
    assert sessions.valid(session, 1.0)
    assert sessions.login(token, 2.0) is None  # spent
    assert not sessions.valid("another", 1.0)
    assert not sessions.valid(None, 1.0)


def test_a_session_expires_after_its_ttl_unused_and_use_renews_it() -> None:
    sessions = Sessions(ttl_s=100)
    session = sessions.login(sessions.login_token, 0.0)
    assert session is not None
    assert sessions.valid(session, 90.0)
    assert sessions.valid(session, 180.0)
    assert not sessions.valid(session, 281.0)
    assert not sessions.valid(session, 282.0)  # gone for good


def test_csrf_values_are_per_session_and_checked() -> None:
    sessions = Sessions()
    one = sessions.login(sessions.login_token, 0.0)
    assert one is not None
    value = sessions.csrf(one)
    assert sessions.csrf_ok(one, value)
    assert not sessions.csrf_ok(one, None)
    assert not sessions.csrf_ok(one, "")
    assert not sessions.csrf_ok(one, value[:-1])
    assert not sessions.csrf_ok("other-session", value)


@pytest.mark.parametrize("flag", ["HttpOnly", "SameSite=Strict", "Path=/"])
def test_the_session_cookie_is_out_of_scripts_and_other_sites_reach(flag: str) -> None:
    assert flag in session_cookie("abc").split("; ")


def test_the_policy_allows_no_inline_script_and_nothing_from_elsewhere() -> None:
    directives = dict(d.split(" ", 1) for d in CSP.split("; "))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == "'self'"
    assert "unsafe" not in CSP
    assert "http" not in CSP
