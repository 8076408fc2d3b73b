"""A memory's type: given by whoever wrote it, or read from its words by a small rule table. Pure.

One taxonomy, the seeds' union (Hephaestus's error_fix, discovery, decision, learning, warning,
codebase_knowledge; HADES's observation, decision, learning, event). A memory has exactly one type:

- **given**: a save's ``--type`` (the journal writes it into the metadata), an episode's
  ``metadata.memory_type``, a ``type:<name>`` tag, or a plain tag that is a type's name or one of
  ``TAG_ALIASES`` (``lesson``, ``incident``...), in that order; a name outside the taxonomy is not a
  type (the rules decide instead, so a typo never hides a memory from a filter);
- **inferred** otherwise, by ``RULES``: the first rule whose words the memory holds wins, and
  ``observation`` is what a memory none of them describe is. The rules read the task, the input, the
  output, the critique, and whether it succeeded; they are measured on tests/data/memory_types.json
  (``python -m bench.memory_types``), precision per type stated with the set's size.

The type is a function of the stored fields, not a stored field: every memory already synced has
one, on both backbones, with no migration and no content hash changed (a changed hash would send
every episode again as an edit)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from sync.source.type_names import DEFAULT_TYPE, MEMORY_TYPES, METADATA_KEY, TAG_ALIASES, TYPE_TAG, check_type


@dataclass(frozen=True, slots=True)
class MemoryType:
    """A memory's type, whether it was given, and which rule read it (``"given"`` when given)."""

    name: str
    given: bool
    rule: str


def _words(*patterns: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w-])(?:" + "|".join(patterns) + r")(?![\w-])", re.IGNORECASE)


# Each rule: its name, the type, the words its memory holds, and where it looks ("all": task, input,
# output, critique; "lead": the task and the critique, where a memory says what it is about).
_ERROR: Final = _words(
    r"errors?",
    r"exceptions?",
    r"traceback",
    r"crash(?:es|ed|ing)?",
    r"hangs?",
    r"hanging",
    r"leaks?",
    r"fail(?:s|ed|ing|ures?)?",
    r"broken",
    r"exit (?:code|status) \d+",
    r"exit \d+",
    r"oom(?:killed)?",
    r"out of memory",
    r"timeouts?",
    r"timed out",
    r"panic",
    r"segfault",
    r"(?-i:E[A-Z0-9]{3,})",
    r"(?-i:\w+Error)",
    r"(?-i:\w+Exception)",
    r"HTTP [45]\d\d",
    r"deadlock",
    r"bug",
    r"regression",
    r"flaky",
    r"refused",
    r"denied",
    r"not found",
    r"undefined",
    r"times out",
    r"expired",
    r"null",
    r"stuck",
    r"can'?t",
    r"cannot",
    r"could(?: not|n'?t)",
    r"unable to",
    r"mismatch(?:es|ed)?",
    r"(?-i:[A-Z]+(?:_[A-Z]+)*_FAILED)",
)
_FIXED: Final = _words(
    r"fix(?:es|ed)?",
    r"resolved?",
    r"solved?",
    r"workaround",
    r"patched?",
    r"the cure",
    r"went away",
    r"now passes",
    r"works now",
    r"now works",
    r"root cause",
    r"was caused by",
    r"because",
    r"raised",
    r"bumped",
    r"pinned",
    r"downgraded",
    r"upgraded",
    r"set",
    r"updated",
    r"rotated",
    r"defaulted",
    r"sorted",
    r"changed",
    r"added",
    r"wrapped",
    r"switched",
    r"restarted",
    r"replaced",
    r"increased",
    r"removed",
    r"moved",
    r"re-?added",
    r"restored",
    r"installed",
)
_WARNING: Final = _words(
    r"never",
    r"don'?t",
    r"do not",
    r"must not",
    r"avoid",
    r"beware",
    r"careful",
    r"caution",
    r"warning",
    r"dangerous",
    r"destructive",
    r"wipes?",
    r"deletes? everything",
    r"irreversible",
    r"gotcha",
    r"watch out",
    r"footgun",
    r"trap",
)
_DECISION: Final = _words(
    r"decided?",
    r"decisions?",
    r"chose",
    r"chosen",
    r"choose",
    r"going with",
    r"we(?:'ll| will| are going to)",
    r"settled on",
    r"opted",
    r"picked",
    r"adopt(?:ed)?",
    r"standardi[sz]e(?:d)? on",
    r"instead of",
    r"rather than",
    r"trade-?offs?",
    r"ADR",
    r"agreed",
)
_LEARNING: Final = _words(
    r"learn(?:ed|t)",
    r"lessons?",
    r"turns out",
    r"til",
    r"next time",
    r"realis(?:ed|e)",
    r"realiz(?:ed|e)",
    r"in hindsight",
    r"takeaway",
    r"should have",
    r"the trick is",
    r"rule of thumb",
)
_DISCOVERY: Final = _words(
    r"found(?: out)? that",
    r"discovered",
    r"noticed",
    r"it seems",
    r"apparently",
    r"surprisingly",
    r"undocumented",
    r"hidden",
    r"it appears",
    r"spotted",
    r"stumbled",
)
_CODEBASE: Final = _words(
    r"lives? (?:in|under)",
    r"is defined in",
    r"defined in",
    r"located (?:in|at)",
    r"entry ?point",
    r"is wired",
    r"calls into",
    r"architecture",
    r"codebase",
    r"is implemented",
    r"is responsible for",
    r"config(?:uration)? (?:is|lives)",
    r"conventions?",
)
_EVENT: Final = _words(
    r"deployed",
    r"released",
    r"shipped",
    r"rolled out",
    r"rolled back",
    r"went live",
    r"launched",
    r"meeting",
    r"standup",
    r"retro",
    r"incident",
    r"outage",
    r"on-?call",
    r"migrated",
    r"fail(?:ed)? ?over",
    r"joined",
    r"met with",
    r"renewed",
    r"kicked off",
    r"sprint \d+",
    r"cut over",
    r"v\d+(?:\.\d+)+ (?:is )?out",
    r"merged",
    r"tagged",
)

# A task that asks to look into something: what it says it found is a discovery (unless the task
# names an error: then it is a fix or a lesson); a plain reading ("check the queue length") is not.
_INVESTIGATE: Final = re.compile(
    r"^\s*(?:look(?:ed)? into|investigat\w*|audit\w*|check(?:ed)?|why\b|find out|figure out|explore|dig into)",
    re.IGNORECASE,
)
_FOUND: Final = _words(r"found", r"turn(?:s|ed) out", r"learn(?:ed|t)", r"it seems", r"it appears", r"noticed")
# A task that asks how the code is built, answered with where (a path) in the output.
_HOW_BUILT: Final = re.compile(
    r"^\s*how\b(?! to\b)|\b(?:layout|structure|schema|access pattern|architecture)\b", re.IGNORECASE
)
_PATH: Final = re.compile(r"[\w.-]+/[\w./-]*|\b\w+\.(?:py|ts|tsx|js|go|rs|rb|java|toml|ya?ml|json|sql|sh)\b")
# An output saying the problem its task names (an error, or a warning something prints) is gone.
_PROBLEM: Final = re.compile(_ERROR.pattern + r"|(?<![\w-])warnings?(?![\w-])", re.IGNORECASE)
_GONE: Final = _words(
    r"(?:is|are) gone",
    r"went away",
    r"no longer (?:fails|crashes|warns|errors|appears|happens)",
    r"works again",
    r"(?:runs|passes|verify|verifies) again",
)

# Where code is: a path or a file name, said to be somewhere or to be something.
_PLACED: Final = re.compile(
    r"(?:[\w.-]+/[\w./-]+|\b\w+\.(?:py|ts|tsx|js|go|rs|rb|java|toml|ya?ml|json|sql|sh)\b)"
    r"[^.;\n]{0,60}?\b(?:is|are)\b|\b(?:is|are)\b[^.;\n]{0,30}?\b(?:in|under|at) [\w.-]*[/.]\w",
    re.IGNORECASE,
)

Rule = tuple[str, str, re.Pattern[str], str]
RULES: Final[tuple[Rule, ...]] = (
    ("a look into something, and what it found", "discovery", _FOUND, "asked"),
    ("how the code is built, and where", "codebase_knowledge", _HOW_BUILT, "built"),
    ("an error its output says is gone", "error_fix", _GONE, "gone"),
    ("a discovery said first", "discovery", _DISCOVERY, "start"),
    ("an event said first", "event", _EVENT, "start"),
    ("a warning", "warning", _WARNING, "lead"),
    ("a decision", "decision", _DECISION, "lead"),
    ("an error and its fix", "error_fix", _ERROR, "fix"),
    ("a lesson", "learning", _LEARNING, "all"),
    ("an error the task names, solved", "error_fix", _ERROR, "solved"),
    ("an event", "event", _EVENT, "lead"),
    ("a discovery", "discovery", _DISCOVERY, "all"),
    ("where code lives", "codebase_knowledge", _CODEBASE, "all"),
    ("a path and what it is", "codebase_knowledge", _PLACED, "all"),
    ("a failed attempt", "learning", _ERROR, "failed"),
    ("a failed attempt and its critique", "learning", re.compile(r"\w"), "criticised"),
)


def _text(fields: Mapping[str, Any], *names: str) -> str:
    return "\n".join(str(fields[n]) for n in names if isinstance(fields.get(n), str))


def _opening(text: str) -> str:
    """The first clause of a text: up to its first full stop, semicolon or colon, 120 characters at most."""
    cut = re.search(r"[.;:](?:\s|$)", text)
    return text[: min(cut.start() if cut else len(text), 120)]


def given_type(metadata: Any, tags: Iterable[Any] | None) -> str | None:
    """The type whoever wrote the memory gave it: ``metadata.memory_type``, else a ``type:`` tag."""
    if isinstance(metadata, Mapping):
        named = metadata.get(METADATA_KEY)
        if isinstance(named, str) and named.strip().lower() in MEMORY_TYPES:
            return named.strip().lower()
    words = [t.strip().lower() for t in tags or () if isinstance(t, str)]
    for tag in words:
        if tag.startswith(TYPE_TAG) and tag[len(TYPE_TAG) :].strip() in MEMORY_TYPES:
            return tag[len(TYPE_TAG) :].strip()
    for tag in words:
        if tag in MEMORY_TYPES or tag in TAG_ALIASES:
            return TAG_ALIASES.get(tag, tag)
    return None


def _where(where: str, fields: Mapping[str, Any]) -> str | None:
    """The text a rule looks in (None: the rule does not apply to this memory's outcome)."""
    succeeded, failed = fields.get("success") is True, fields.get("success") is False
    texts: dict[str, Callable[[], str | None]] = {
        "start": lambda: " ".join(_text(fields, "output").split()[:4]),  # how the output opens
        # Where a memory says what it is: its task, its critique, its output's first clause.
        "lead": lambda: _text(fields, "task", "critique") + "\n" + _opening(_text(fields, "output")),
        "solved": lambda: _text(fields, "task") if succeeded else None,
        "criticised": lambda: _text(fields, "critique") if failed else None,
        "failed": lambda: _text(fields, "task", "input", "output", "critique") if failed else None,
        "fix": lambda: None if failed else _text(fields, "task", "input", "output", "critique"),
        # The output of a task that asks to look into something and names no error.
        "asked": lambda: _text(fields, "output") if _asks(_text(fields, "task")) else None,
        # The task, when the output names a path.
        "built": lambda: _text(fields, "task") if _PATH.search(_text(fields, "output")) else None,
        # The output, when the task names an error (or a warning printed) and the memory did not fail.
        "gone": lambda: None if failed or not _PROBLEM.search(_text(fields, "task")) else _text(fields, "output"),
    }
    return texts.get(where, lambda: _text(fields, "task", "input", "output", "critique"))()


def _asks(task: str) -> bool:
    return bool(_INVESTIGATE.search(task)) and not _ERROR.search(task)


def _holds(where: str, words: re.Pattern[str], fields: Mapping[str, Any]) -> bool:
    """Whether a memory holds a rule's words where the rule looks (a fix: with a fix's words too)."""
    text = _where(where, fields)
    if text is None or not words.search(text):
        return False
    return where != "fix" or bool(_FIXED.search(text))


def infer_type(fields: Mapping[str, Any]) -> tuple[str, str]:
    """The type the rules read in a memory's fields, and the rule's name."""
    for name, kind, words, where in RULES:
        if _holds(where, words, fields):
            return kind, name
    return DEFAULT_TYPE, "none of the rules"


def memory_type(fields: Mapping[str, Any]) -> MemoryType:
    """A memory's type from its camelCase fields (``task``, ``input``, ``output``, ``critique``,
    ``success``, ``tags``, ``metadata`` as a mapping or its JSON text already parsed)."""
    tags = fields.get("tags")
    given = given_type(fields.get("metadata"), tags if isinstance(tags, list | tuple) else None)
    if given is not None:
        return MemoryType(given, True, "given")
    name, rule = infer_type(fields)
    return MemoryType(name, False, rule)


# The names live in ``sync.source.type_names`` (light: what a command line offers without the rules).
__all__ = [
    "DEFAULT_TYPE",
    "MEMORY_TYPES",
    "METADATA_KEY",
    "TAG_ALIASES",
    "TYPE_TAG",
    "MemoryType",
    "check_type",
    "given_type",
    "infer_type",
    "memory_type",
]
