"""The Memory pages, pure: the search form and its answer, and one memory with its neighbours.

What a result says is what ``memsync search`` says (``sync.search.query.results_text``: how it
went, its type, its relevance, why it ranked), as HTML; the memory's text is always escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import quote, urlencode

from daemon.usecases.memory.search import MODES
from daemon.viewer.html import Markup, ago, csrf_field, join, notice, render, when
from sync.search.query.judgement import why_words
from sync.search.query.results_text import answer_notes, outcome, relevance_words
from sync.search.request import OUTCOMES, EpisodeView, SearchAnswer, SearchResult
from sync.source.type_names import MEMORY_TYPES

# The form's fields, in the query string's names.
FIELDS = ("q", "mode", "site", "agent", "type", "tag", "project", "since", "outcome", "all")
PREVIEW_CHARS = 400


@dataclass(frozen=True, slots=True)
class SearchForm:
    """The search as the form (and the URL) holds it."""

    q: str = ""
    mode: str = "hybrid"
    site: str = ""
    agent: str = ""
    type: str = ""
    tag: str = ""
    project: str = ""
    since: str = ""
    outcome: str = ""  # success, failure, or "" (any)
    all: bool = False

    @classmethod
    def of(cls, query: Mapping[str, str]) -> SearchForm:
        given = {name: query.get(name, "").strip() for name in FIELDS if name != "all"}
        return cls(**{**given, "mode": given["mode"] or "hybrid"}, all=query.get("all") in ("1", "on", "true"))


@dataclass(frozen=True, slots=True)
class Searched:
    """What the page shows under the form: an answer, or why there is none."""

    answer: SearchAnswer | None = None
    problem: str | None = None
    behind: str | None = None  # what the answer cannot see (the index is behind)
    notes: Sequence[str] = field(default_factory=tuple)


def memory_href(site: str, source_id: str) -> str:
    return f"/memory/{quote(site, safe='')}/{quote(source_id, safe='')}"


def search_form(form: SearchForm, sites: Sequence[str]) -> Markup:
    modes = join(
        render('<option value="{m}"{sel}>{m}</option>', m=m, sel=Markup(" selected") if m == form.mode else "")
        for m in MODES
    )
    site_options = join(
        render('<option value="{s}"{sel}>{s}</option>', s=s, sel=Markup(" selected") if s == form.site else "")
        for s in sites
    )
    return render(
        """<form class="search" method="get" action="/" role="search">
<input type="search" name="q" value="{q}" placeholder="words, an error code, a function name" autofocus
 aria-label="search the memory">
<select name="mode" aria-label="mode">{modes}</select>
<button type="submit">Search</button>
<details{open}><summary>Filters</summary>
<label>site <select name="site"><option value="">any</option>{sites}</select></label>
<label>agent <input name="agent" value="{agent}"></label>
<label>type <select name="type"><option value="">any</option>{types}</select></label>
<label>tag <input name="tag" value="{tag}"></label>
<label>project <input name="project" value="{project}"></label>
<label>since <input name="since" value="{since}" placeholder="7d, 12h, 2026-11-01"></label>
<label>outcome <select name="outcome"><option value="">any</option>{outcomes}</select></label>
<label><input type="checkbox" name="all" value="1"{all}> everything (near-duplicates, under the floor)</label>
</details>
</form>""",
        q=form.q,
        modes=modes,
        sites=site_options,
        agent=form.agent,
        types=join(
            render('<option value="{t}"{sel}>{t}</option>', t=t, sel=Markup(" selected") if t == form.type else "")
            for t in MEMORY_TYPES
        ),
        tag=form.tag,
        project=form.project,
        since=form.since,
        outcomes=join(
            render('<option value="{o}"{sel}>{o}</option>', o=o, sel=Markup(" selected") if o == form.outcome else "")
            for o in OUTCOMES
        ),
        all=Markup(" checked") if form.all else "",
        open=Markup(" open")
        if any((form.site, form.agent, form.type, form.tag, form.project, form.since, form.outcome, form.all))
        else "",
    )


def why_line(result: SearchResult) -> str:
    """How it went, its type, relevance and why it ranked, in the CLI's words."""
    parts = [
        outcome(result),
        (result.memory_type or "").replace("_", " "),
        relevance_words(result.relevance) if result.relevance is not None else "",
        why_words(result.why) if result.why is not None else "",
    ]
    if result.duplicates:
        parts.append(f"+{result.duplicates} near-duplicate{'s' if result.duplicates > 1 else ''}")
    if result.archived:
        parts.append("archived")
    if result.dream:
        parts.append(f"{result.dream} by the dream (hidden from default results)")
    return " · ".join(p for p in parts if p)


def matched_text(result: SearchResult) -> str:
    """The passage that matched (a long episode's), or the start of the text."""
    text = result.passage.text if result.passage is not None else result.text
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…"


def result_item(result: SearchResult, now_ms: int) -> Markup:
    return render(
        """<li class="result">
<a class="title" href="{href}">{title}</a>
<div class="meta">{site} · {agent} · {when} ({ago})</div>
<div class="why">{why}</div>
<pre class="text">{text}</pre>
</li>""",
        href=memory_href(result.site, result.source_id),
        title=result.task or f"{result.site}:{result.source_id}",
        site=result.site,
        agent=result.agent or "?",
        when=when(result.ts),
        ago=ago(result.ts, now_ms),
        why=why_line(result),
        text=matched_text(result),
    )


def search_results(searched: Searched, form: SearchForm, now_ms: int) -> Markup:
    if searched.problem:
        return notice(searched.problem, "problem")
    if searched.answer is None:
        return Markup("")
    answer = searched.answer
    items = join(result_item(r, now_ms) for r in answer.results)
    everything = "/?" + urlencode({**dict(_form_items(form)), "all": "1"})
    notes = join(
        notice(line)
        for line in [*([searched.behind] if searched.behind else []), *answer_notes(answer, "show everything")]
    )
    more = render('<p><a href="{href}">show everything</a></p>', href=everything) if answer.cut else Markup("")
    empty = notice("no matches") if not answer.results and not answer.cut else Markup("")
    return render(
        '<ol class="results">{items}</ol>{empty}{notes}{more}', items=items, empty=empty, notes=notes, more=more
    )


def _form_items(form: SearchForm) -> list[tuple[str, str]]:
    return [(name, str(getattr(form, name))) for name in FIELDS if name != "all" and getattr(form, name)]


def memory_page_body(
    view: EpisodeView,
    *,
    now_ms: int,
    csrf: str,
    sections: Sequence[tuple[str, Markup]] = (),
    problem: str | None = None,
    message: str | None = None,
) -> Markup:
    """A memory: its whole text, where and when it came from, its approval's status, its session's
    neighbours, the sections other use cases add (``sections``: title and body), and forget."""
    if view.episode is None:
        return notice(problem or "no such memory in the search index (forgotten, or not indexed yet)", "problem")
    e = view.episode
    facts = render(
        """<dl class="facts">
<dt>key</dt><dd><code>{key}</code></dd>
<dt>site</dt><dd>{site}</dd><dt>agent</dt><dd>{agent}</dd><dt>session</dt><dd>{session}</dd>
<dt>when</dt><dd>{when} ({ago})</dd><dt>outcome</dt><dd>{outcome}</dd><dt>tags</dt><dd>{tags}</dd>
<dt>type</dt><dd class="type">{type}</dd><dt>approval</dt><dd>{approval}</dd>
</dl>""",
        key=f"{e.site}:{e.source_id}",
        site=e.site,
        agent=e.agent or "?",
        session=e.session or "none",
        when=when(e.ts),
        ago=ago(e.ts, now_ms),
        outcome=outcome(e) or "not recorded",
        tags=", ".join(e.tags) or "none",
        type=_type_words(e),
        approval=e.approval_status or "none asked",
    )
    neighbours = join(
        render('<li{cls}><a href="{href}">{title}</a> <span class="meta">{when}</span></li>', **_neighbour(r, e))
        for r in [*view.before, e, *view.after]
    )
    extra = join(render("<section><h2>{title}</h2>{body}</section>", title=t, body=b) for t, b in sections)
    forget = render(
        """<section class="danger"><h2>Forget</h2>
<p>Forget takes this memory back everywhere: the backbone keeps only a tombstone, every site's index drops it.</p>
<form method="post" action="{action}">{csrf}
<label><input type="checkbox" name="confirm" value="yes" required> I want this memory gone for good</label>
<button type="submit" class="danger">Forget this memory</button></form></section>""",
        action=memory_href(e.site, e.source_id) + "/forget",
        csrf=csrf_field(csrf),
    )
    return render(
        """{problem}{message}<p class="why">{why}</p>{facts}
<h2>Text</h2><pre class="text whole">{text}</pre>
<h2>Its session</h2><ol class="neighbours">{neighbours}</ol>
{extra}{forget}""",
        problem=notice(problem, "problem"),
        message=notice(message),
        why=why_line(e),
        facts=facts,
        text=e.text,
        neighbours=neighbours,
        extra=extra,
        forget=forget,
    )


def _type_words(result: SearchResult) -> str:
    """Its type, and whether its writer (or a correction) gave it or the rules read it."""
    if not result.memory_type:
        return "not known (indexed before types)"
    name = result.memory_type.replace("_", " ")
    return name if result.type_given is None else f"{name} ({'given' if result.type_given else 'inferred'})"


def _neighbour(result: SearchResult, current: SearchResult) -> dict[str, object]:
    return {
        "cls": Markup(' class="current"') if result.id == current.id else "",
        "href": memory_href(result.site, result.source_id),
        "title": result.task or f"{result.site}:{result.source_id}",
        "when": when(result.ts),
    }


def forgotten_body(key: str, lines: Sequence[str], complete: bool) -> Markup:
    """What a forget did, in the CLI's sentences."""
    return render(
        '{head}<ul>{lines}</ul><p><a href="/">back to the memory</a></p>',
        head=notice(
            f"{key} forgotten" if complete else f"{key}: the forget is not complete", "note" if complete else "problem"
        ),
        lines=join(render("<li>{line}</li>", line=line) for line in lines),
    )
