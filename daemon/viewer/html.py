"""HTML from strings, escaped by default. Pure.

``Markup`` is HTML already made safe (a template, or what ``render`` returned); any other value put
into a template is escaped (``&``, ``<``, ``>``, quotes), so a memory holding ``<script>`` shows as
those characters. Templates use ``str.format`` fields; values are passed as keywords, never
formatted into the template's own text, so a value cannot add a field.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Final


class Markup(str):
    """A string of HTML that is safe as it is."""

    __slots__ = ()


def esc(value: object) -> Markup:
    """``value`` as HTML text: Markup as is, None as nothing, anything else escaped."""
    if isinstance(value, Markup):
        return value
    if value is None:
        return Markup("")
    return Markup(html.escape(str(value), quote=True))


def render(template: str, /, **values: object) -> Markup:
    """``template`` (trusted HTML) with each ``{name}`` replaced by ``esc(values[name])``."""
    return Markup(template.format(**{name: esc(value) for name, value in values.items()}))


def join(parts: Iterable[object], sep: str = "") -> Markup:
    return Markup(sep.join(esc(part) for part in parts))


def when(ms: int | None) -> Markup:
    """A time in milliseconds as a <time> element, UTC (the browser shows it as is)."""
    if ms is None:
        return Markup("never")
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return render('<time datetime="{iso}">{text}</time>', iso=moment.isoformat(), text=f"{moment:%Y-%m-%d %H:%M} UTC")


def ago(ms: int | None, now_ms: int) -> str:
    """How long before ``now_ms``: "3m ago"; "never" for None."""
    if ms is None:
        return "never"
    seconds = max(0, (now_ms - ms) // 1000)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


NAV: Final = (
    ("memory", "/", "Memory"),
    ("fleet", "/fleet", "Fleet"),
    ("approvals", "/approvals", "Approvals"),
    ("digest", "/digest", "Digest"),
)


def page(*, title: str, active: str, body: Markup, site: str, script: bool = False) -> Markup:
    """A whole page: the head (the stylesheet and, where the page is live, the script, both served
    by the viewer itself), the navigation, ``body``."""
    links = join(
        render('<a href="{href}"{current}>{label}</a>', href=href, label=label, current=_current(key == active))
        for key, href, label in NAV
    )
    return render(
        """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} · memsync</title>
<link rel="stylesheet" href="/static/viewer.css">{script}
</head><body>
<header><strong>memsync</strong> <span class="site">{site}</span><nav>{links}</nav></header>
<main>
<h1>{title}</h1>
{body}
</main></body></html>
""",
        title=title,
        site=site,
        links=links,
        body=body,
        script=Markup('\n<script src="/static/viewer.js" defer></script>') if script else Markup(""),
    )


def _current(yes: bool) -> Markup:
    return Markup(' aria-current="page"') if yes else Markup("")


def csrf_field(token: str) -> Markup:
    return render('<input type="hidden" name="csrf" value="{token}">', token=token)


def notice(text: str | None, kind: str = "note") -> Markup:
    """A sentence in a box (``kind``: note, problem); nothing for None."""
    if not text:
        return Markup("")
    return render('<p class="{kind}" role="status">{text}</p>', kind=kind, text=text)


def table(head: Sequence[str], rows: Markup, empty: str) -> Markup:
    """A table with a header row; ``empty`` said instead when there are no rows."""
    if not rows:
        return notice(empty)
    return render(
        "<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>",
        head=join(render('<th scope="col">{h}</th>', h=h) for h in head),
        rows=rows,
    )
