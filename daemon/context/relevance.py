"""Which search results are worth an agent's attention: the search's own judgement, with a higher
floor. Pure: the query and the search results in, each judged (admitted or not, its relevance,
and why) out, best first.

The search judges every result it returns (``sync.search.query.judgement``): its ``relevance`` is
the probability that it is relevant, comparable across queries (a chatty prompt's nearest memory
scores near 0, a question's answer near 1), and its ``why`` says what it holds of the query. The
search's own floor only cuts what shares nothing with the query; the block, given unasked with
every prompt, keeps what very likely answers:

- **The floor**: a relevance of at least ``Rules.floor``, a memory of the project the agent works
  in counting ``Rules.project`` more in log-odds (its odds times e^1.5, about 4.5).
- **Against the best**: within ``Rules.margin`` of the best admitted relevance: the block keeps
  the memories that answer and leaves out those that merely relate.
- **Look-alikes are out.** A result holding a look-alike of an identifier the prompt names
  (``ZQX_7781_B`` for ``ZQX_7781_A``, ``exp-4417`` for ``exp-4471``) and not the identifier itself
  is about another member of the family, however close it is in meaning.
- A result without a relevance (from a daemon older than the judgement) is not admitted.

The values are tuned choices, chosen on the context set's tune half and checked on its other half
(``python -m bench.context_tune``; bench/results/judgement.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from sync.search.query.judgement import why_words
from sync.search.request import SearchResult


@dataclass(frozen=True, slots=True)
class Rules:
    """The floor's tuned values (see the module's docstring for what each one weighs)."""

    floor: float = 0.60  # the least relevance a memory needs (a probability)
    margin: float = 0.30  # how far below the best admitted relevance
    max_entries: int = 3  # memories in a prompt's block, at most
    project: float = 1.5  # log-odds added for a memory of the project the agent works in


RULES: Final = Rules()


@dataclass(frozen=True, slots=True)
class Judged:
    """A result and the judgement on it: ``admitted`` or not, its ``relevance`` (the search's, and
    what the project adds), and ``why`` in a few words."""

    result: SearchResult
    admitted: bool
    relevance: float
    why: str


def _with_project(relevance: float, bonus: float) -> float:
    if bonus == 0.0 or relevance <= 0.0:
        return relevance
    if relevance >= 1.0:
        return 1.0
    return 1.0 / (1.0 + math.exp(-(math.log(relevance / (1.0 - relevance)) + bonus)))


def judge(
    query: str, results: Sequence[SearchResult], rules: Rules = RULES, *, project: str | None = None
) -> list[Judged]:
    """Each result judged, best first (see the module's docstring for the rules). ``project``: the
    project the agent works in (its memories carry the tag ``project:<name>``). ``query`` is what
    was searched for: the search's judgement already read it."""
    del query  # the results carry the search's judgement of it
    mine = f"project:{project}" if project else None
    scored: list[tuple[SearchResult, float, str, bool]] = []  # result, relevance, why, still in the running
    for r in results:
        why = r.why
        if r.relevance is None or why is None:
            scored.append((r, 0.0, "not judged (a daemon older than this memsync)", False))
            continue
        if why.lookalike and not why.exact:
            scored.append((r, 0.0, f"holds {', '.join(why.lookalike)}, a look-alike of what was asked", False))
            continue
        relevance = _with_project(r.relevance, rules.project if mine and mine in r.tags else 0.0)
        said = f"relevance {relevance:.2f}" + (f" · {words}" if (words := why_words(why)) else "")
        if relevance < rules.floor:
            scored.append((r, relevance, f"{said}: under the floor", False))
        else:
            scored.append((r, relevance, said, True))
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


__all__ = ["RULES", "Judged", "Rules", "judge"]
