"""Which search results are worth an agent's attention: a relevance floor over what a search result
carries. Pure: the query and the results in, each result judged (admitted or not, its relevance,
and why) out, best first.

The search ranks well (the memory that answers is its first result for almost every question in
the context set), but it always returns something: a chatty turn ("ok go ahead and run the tests")
or a question no memory is about gets its nearest neighbours all the same. Its fused score cannot
say how well a result matches (it is scaled within each query's lists: the first result of any
query scores about the same), so the floor is computed here from what each result carries besides:

- **Relevance** is the dense cosine of the result to the query (comparable across queries, on the
  embedder's own scale), plus ``Rules.exact`` when the result holds an identifier the prompt names
  (``E11000``, ``exp-4471``, ``ranker-v7.2.1``: ``identifiers``; an identifier alone says little to
  a sentence embedder: "what did exp-4471 show?" is 0.14 from its answer), plus ``Rules.project``
  for a memory of the project the agent works in.
- **Siblings are out.** A result holding none of the prompt's identifiers but a sibling of one
  (``ZQX_7781_B`` for ``ZQX_7781_A``, ``exp-4417`` for ``exp-4471``: ``siblings``) is about another
  member of the family, and is left out however close it is in meaning.
- **The floor**: a relevance of at least ``Rules.floor``, and at least ``Rules.lead`` above the
  median cosine of all the results the search returned. An answer stands out from the rest (by
  0.36 at the median in the context set) while every result of a chatty turn is about as far as
  the others (0.06): the lead is the part of the floor that holds whatever the embedder's scale.
  It needs ``POOL_MIN`` results to have a median.
- **Against the best**: within ``Rules.margin`` of the best admitted relevance. The block keeps the
  memories that answer and leaves out those that merely relate.

The values are tuned choices, chosen on the context set's tune half and checked on its other half
(``python -m bench.context_tune``; bench/results/context-set.md). ``floor`` is on the default
embedder's scale (MiniLM); the search's design for a score comparable across queries and models is
in that file too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from sync.search.request import SearchResult

POOL_MIN: Final = 5  # results needed for the pool's median to mean anything
ID_MIN: Final = 5  # characters of an identifier of letters and digits
SIBLING_MIN: Final = 5  # characters an identifier needs to have siblings
SIBLING_MAX_EDITS: Final = 2
MAX_NAMED: Final = 3  # a prompt naming more identifiers than this (a pasted log) is not about one of them

# A token: word characters and the joiners identifiers use, trimmed of sentence punctuation.
_TOKEN = re.compile(r"[\w$][\w$.\-/:@]*[\w$]|[\w$]")
_HAS_DIGIT = re.compile(r"\d")
_HAS_LETTER = re.compile(r"[^\W\d_]")
_HUMP = re.compile(r"[a-z][A-Z]")
_LOUD = re.compile(r"[A-Z]{5,}")
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True, slots=True)
class Rules:
    """The floor's tuned values (see the module's docstring for what each one weighs)."""

    floor: float = 0.55  # the least relevance a memory needs (a cosine, on the default embedder's scale)
    lead: float = 0.15  # how far above the median cosine of the search's results
    margin: float = 0.15  # how far below the best admitted relevance
    max_entries: int = 3  # memories in a prompt's block, at most
    exact: float = 0.35  # added for holding an identifier the prompt names
    project: float = 0.10  # added for a memory of the project the agent works in


RULES: Final = Rules()


@dataclass(frozen=True, slots=True)
class Judged:
    """A result and the judgement on it: ``admitted`` or not, its ``relevance`` (its cosine and
    what the rules add), and ``why`` in a few words."""

    result: SearchResult
    admitted: bool
    relevance: float
    why: str


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def is_identifier(token: str) -> bool:
    """A token that names one thing: letters and digits together (``E11000``, ``exp-4471``,
    ``v1.4.2``; five characters or more: ``S3``, ``A10``, ``bf16`` name kinds of things), snake case
    (``parse_retry_after``), camel case of two humps or more (``findOneAndUpdate``,
    ``getStaticProps``; one hump is as often a product or a class name: ``GitHub``, ``TypeError``),
    a dotted name (``next.config.js``) or a long capitalised code (``ECONNRESET``). Plain words and
    plain numbers are not."""
    has_digit = bool(_HAS_DIGIT.search(token))
    has_letter = bool(_HAS_LETTER.search(token))
    if has_digit and has_letter:
        return len(token) >= ID_MIN
    if not has_letter:
        return False
    core = token.strip("_")
    return (
        "_" in core
        or len(_HUMP.findall(token)) >= 2
        or (len(token) >= 6 and "." in token)
        or bool(_LOUD.fullmatch(token))
    )


def identifiers(text: str) -> frozenset[str]:
    """The identifiers a text names, case folded."""
    return frozenset(t.casefold() for t in tokens(text) if is_identifier(t))


def _edits(a: str, b: str, limit: int) -> int:
    """Levenshtein distance with adjacent transpositions (optimal string alignment), or ``limit + 1``
    as soon as it exceeds ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before: list[int] | None = None
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            cost = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if before is not None and i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cost = min(cost, before[j - 2] + 1)
            current.append(cost)
        if min(current) > limit:
            return limit + 1
        before, previous = previous, current
    return previous[-1]


def _skeleton(identifier: str) -> str:
    return _DIGITS.sub("", identifier)


def siblings(named: str, other: str) -> bool:
    """Two identifiers of one family, different members: the same letters around other digits
    (``exp-4471`` and ``exp-4417``, ``ranker-v7.4.0`` and ``ranker-v7.2.11``), or the same shape a
    character or two apart (``ZQX_7781_A`` and ``ZQX_7781_B``). Short ones (``1mb``, ``v2``) and
    those whose letters say little (``E11000`` and ``E0277``) are never siblings."""
    if named == other or min(len(named), len(other)) < SIBLING_MIN or named[:3] != other[:3]:
        return False
    skeleton = _skeleton(named)
    if skeleton == _skeleton(other) != other and len(_HAS_LETTER.findall(skeleton)) >= 2 and skeleton != named:
        return True
    allowed = 1 if len(named) < 8 else SIBLING_MAX_EDITS
    both_numbered = bool(_HAS_DIGIT.search(named)) and bool(_HAS_DIGIT.search(other))
    return both_numbered and _edits(named, other, allowed) <= allowed


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def judge(
    query: str, results: Sequence[SearchResult], rules: Rules = RULES, *, project: str | None = None
) -> list[Judged]:
    """Each result judged, best first (see the module's docstring for the rules). ``project``: the
    project the agent works in (its memories carry the tag ``project:<name>``)."""
    named = identifiers(query)
    cosines = [r.similarity for r in results if r.similarity is not None]
    pool = _median(cosines) if len(cosines) >= POOL_MIN else None
    mine = f"project:{project}" if project else None
    scored: list[tuple[SearchResult, float, str, bool]] = []  # result, relevance, why, still in the running
    for r in results:
        held = identifiers(r.text)
        hit = sorted(named & held)
        others = [] if hit or len(named) > MAX_NAMED else sorted({o for o in held for n in named if siblings(n, o)})
        if others:
            scored.append((r, 0.0, f"names {', '.join(others)}, not {', '.join(sorted(named))}", False))
            continue
        cosine = r.similarity if r.similarity is not None else 0.0
        relevance = cosine + (rules.exact if hit else 0.0) + (rules.project if mine and mine in r.tags else 0.0)
        why = [f"cosine {cosine:.2f}"] + ([f"holds {', '.join(hit)}"] if hit else [])
        if pool is not None:
            why.append(f"{relevance - pool:+.2f} on the pool")
        if relevance < rules.floor or (pool is not None and relevance - pool < rules.lead):
            scored.append((r, relevance, ", ".join(why) + ": under the floor", False))
        else:
            scored.append((r, relevance, ", ".join(why), True))
    best = max((relevance for _, relevance, _, ok in scored if ok), default=0.0)
    out = [
        Judged(
            r,
            ok and relevance >= best - rules.margin,
            relevance,
            why if relevance >= best - rules.margin or not ok else f"{why}: well below the best ({best:.2f})",
        )
        for r, relevance, why, ok in scored
    ]
    # Best first; the search's order breaks ties (sorted is stable).
    return sorted(out, key=lambda j: -j.relevance)


__all__ = ["RULES", "Judged", "Rules", "identifiers", "is_identifier", "judge", "siblings"]
