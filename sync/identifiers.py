"""The identifiers a query names, and whether a memory holds one verbatim: pure, no I/O.

An identifier names one thing: an error code (``E11000``, ``40P01``, ``ECONNRESET``), a key or a
flag (``ZQX_7781_A``, ``FEAT_CHECKOUT_V2``, ``--max-old-space-size``), a function
(``parse_retry_after``, ``findOneAndUpdate``, ``getUser()``), a file (``next.config.js``,
``/etc/nginx/nginx.conf``, ``src/app/page.tsx``), a ticket (``JIRA-4521``, ``#4521``), a host
(``db-1.prod.internal``, ``10.0.3.7``, ``localhost:5432``), a version (``ranker-v7.2.1``). Plain
words and plain numbers are not: ``137`` (an exit code as often as a count), ``tests``, ``Docker``.

BM25 splits an identifier where it is not a letter or a digit (``ZQX_7781_A`` is ``zqx``, ``7781``,
and ``a``, a stopword it drops), so that ``ZQX_7781_B`` matches it as well as itself: whether a memory
holds the identifier is read from its text (``holds``: verbatim, case folded, not inside a longer
identifier), never from BM25. ``siblings`` tells the look-alike (``ZQX_7781_B`` for ``ZQX_7781_A``,
``exp-4417`` for ``exp-4471``) from an unrelated identifier.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

ID_MIN: Final = 5  # characters of an identifier of letters and digits ("S3", "bf16" name kinds of things)
SIBLING_MIN: Final = 5  # characters an identifier needs to have siblings
SIBLING_MAX_EDITS: Final = 2

# A token: an optional path, ticket or flag lead ("/", "~/", "./", "../", "#", "--") and dot (a
# dotfile), then word characters and the joiners identifiers use, ending on a word character.
_TOKEN = re.compile(r"(?<![\w$/.~#-])(?:~/|\.{1,2}/|/|#|--)?\.?[\w$](?:[\w$.\-/:@]*[\w$])?")
_HAS_DIGIT = re.compile(r"\d")
_HAS_LETTER = re.compile(r"[^\W\d_]")
_HUMP = re.compile(r"[a-z][A-Z]")
_CAPS_THEN_WORD = re.compile(r"[A-Z]{3,}[a-z]")  # OOMKilled, JSONDecodeError
_LOUD = re.compile(r"[A-Z]{5,}")
_DIGITS = re.compile(r"\d+")
_IP = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?")
_TICKET = re.compile(r"#\d{2,}")
_FLAG = re.compile(r"--[A-Za-z][\w-]+")
_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,7}$")
_WORD_CHAR = re.compile(r"[\w$]")


def is_identifier(token: str, *, called: bool = False) -> bool:
    """Whether ``token`` (as ``identifiers`` cuts it from a text) names one thing. ``called``: the
    text goes on with ``(`` (``getUser(``: a function, whatever its shape)."""
    if _TICKET.fullmatch(token) or _FLAG.fullmatch(token) or _IP.fullmatch(token):
        return True
    has_letter = bool(_HAS_LETTER.search(token))
    if not has_letter:
        return False
    if token.startswith(("/", "~/", "./", "../")):
        return "/" in token.lstrip("/~.")[:-1] or bool(_EXTENSION.search(token))
    if token.startswith(("#", "--")):
        return False
    if _HAS_DIGIT.search(token):
        return len(token) >= ID_MIN
    core = token.strip("_")
    return (
        "_" in core
        or len(_HUMP.findall(token)) >= 2
        or bool(_CAPS_THEN_WORD.search(token))
        or (called and (len(_HUMP.findall(token)) >= 1 or "." in token))
        or (len(token) >= 6 and "." in token and not token.endswith("."))
        or (token.count("/") >= 2 or ("/" in token and bool(_EXTENSION.search(token))))
        or bool(_LOUD.fullmatch(token))
    )


def identifiers(text: str) -> tuple[str, ...]:
    """The identifiers ``text`` names, each once (case folded), in the order it names them, spelt as
    it first spells them."""
    seen: dict[str, str] = {}
    for match in _TOKEN.finditer(text):
        token = match.group()
        called = text[match.end() : match.end() + 1] == "("
        if is_identifier(token, called=called):
            seen.setdefault(token.casefold(), token)
    return tuple(seen.values())


def holds(text: str, identifier: str) -> bool:
    """Whether ``text`` holds ``identifier`` verbatim (case folded), not as part of a longer one:
    no letter, digit or underscore right before it (when it starts with one) or right after it
    (when it ends with one). ``E11000`` is in "E11000 duplicate key", not in "E110001";
    ``ZQX_7781_A`` is in "ZQX_7781_A.log", not in "ZQX_7781_AB"."""
    needle = identifier.casefold()
    if not needle:
        return False
    hay = text.casefold()
    check_before = bool(_WORD_CHAR.match(needle[0]))
    check_after = bool(_WORD_CHAR.match(needle[-1]))
    start = hay.find(needle)
    while start >= 0:
        end = start + len(needle)
        before_ok = not check_before or start == 0 or not _WORD_CHAR.match(hay[start - 1])
        after_ok = not check_after or end == len(hay) or not _WORD_CHAR.match(hay[end])
        if before_ok and after_ok:
            return True
        start = hay.find(needle, start + 1)
    return False


def held(text: str, named: Iterable[str]) -> tuple[str, ...]:
    """Those of ``named`` that ``text`` holds verbatim, in their order."""
    return tuple(n for n in named if holds(text, n))


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
    """Two identifiers of one family, different members (case folded): the same letters around other
    digits (``exp-4471`` and ``exp-4417``, ``ranker-v7.4.0`` and ``ranker-v7.2.11``), or the same shape
    a character or two apart (``ZQX_7781_A`` and ``ZQX_7781_B``). Short ones (``1mb``, ``v2``) and
    those whose letters say little (``E11000`` and ``E0277``) are never siblings."""
    named, other = named.casefold(), other.casefold()
    if named == other or min(len(named), len(other)) < SIBLING_MIN or named[:3] != other[:3]:
        return False
    skeleton = _skeleton(named)
    if skeleton == _skeleton(other) != other and len(_HAS_LETTER.findall(skeleton)) >= 2 and skeleton != named:
        return True
    allowed = 1 if len(named) < 8 else SIBLING_MAX_EDITS
    both_numbered = bool(_HAS_DIGIT.search(named)) and bool(_HAS_DIGIT.search(other))
    return both_numbered and _edits(named, other, allowed) <= allowed


def lookalikes(text: str, named: Iterable[str]) -> tuple[str, ...]:
    """The identifiers ``text`` holds that are siblings of one of ``named`` it does not hold itself,
    as the text spells them (``ZQX_7781_B`` in a memory, for a query naming ``ZQX_7781_A``)."""
    missing = [n for n in named if not holds(text, n)]
    if not missing:
        return ()
    return tuple(o for o in identifiers(text) if any(siblings(n, o) for n in missing))


__all__ = ["held", "holds", "identifiers", "is_identifier", "lookalikes", "siblings"]
