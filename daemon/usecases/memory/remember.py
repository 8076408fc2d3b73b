"""An agent (or a person) saves what it learned: one memory into the site's journal
(``sync.source.journal``), which the daemon pushes like the AgentDB file's episodes, under the key
``SITE:m<n>``. The AgentDB file is never written.

Before it saves, the gate (``sync.source.journal.gate``) looks for the memory among those the site
has: the same text in the journal, or a near one the search index finds (through the running
daemon, else in this process, as ``memsync search`` does). A repeat returns the existing memory and
saves nothing; a value update is saved as newer, naming (``metadata.updates``) the one it
supersedes. Without a search index the journal's own check still runs, and the answer says the
near-duplicate check did not.

A saved memory is an episode of the AgentDB shape: ``task`` is its text; its extra fields ride in
``metadata`` under memsync's keys (``memory_type``, ``project``, ``related_files``, ``about``,
``updates``, ``agentName``, ``platform``); the project is a ``project:<name>`` tag too, as the
context hook looks for it. Secrets are redacted before it is written (the site's ``[privacy]``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal

from sync.errors import MemsyncError
from sync.source.journal.gate import Candidate, Verdict, judge
from sync.source.journal.store import Entry, Journal
from sync.source.redaction import redact_fields
from sync.source.type_names import check_type

if TYPE_CHECKING:
    from daemon.config import Settings

MAX_CHARS: Final = 20_000  # a memory is a note, not a file: longer is refused with the limit
MAX_TAGS: Final = 32
MAX_FILES: Final = 64
NEAREST: Final = 3  # candidates the gate looks at


@dataclass(frozen=True, slots=True)
class Memory:
    """What to remember, and about what."""

    content: str
    memory_type: str | None = None  # one of sync.source.types.MEMORY_TYPES; None: inferred
    tags: Sequence[str] = ()
    related_files: Sequence[str] = ()
    project: str | None = None  # as the context hook finds it (daemon.context.files.project_name)
    about: str | None = None  # SITE:ID of the episode it belongs to
    session: str | None = None  # the session it belongs to (default: the agent's memories)
    agent: str | None = None  # who saves it (default: the site's [site.defaults] agent_name)
    platform: str | None = None


@dataclass(frozen=True, slots=True)
class Remembered:
    """The outcome: ``saved`` (new), ``updated`` (saved, superseding ``existing``) or
    ``duplicate`` (not saved: ``existing`` holds it already)."""

    status: Literal["saved", "updated", "duplicate"]
    key: str  # SITE:ID of the memory that now holds it
    existing: str | None = None
    similarity: float | None = None
    differs: tuple[str, ...] = ()  # an update's values only one of the two holds
    memory_type: str | None = None
    unchecked: str | None = None  # why no near-duplicate search ran, if none did
    tags: tuple[str, ...] = field(default=())

    @property
    def message(self) -> str:
        if self.status == "duplicate":
            near = "" if self.similarity is None else f" (similarity {self.similarity:.2f})"
            said = f"already remembered as {self.key}{near}: nothing saved"
        elif self.status == "updated":
            said = f"saved as {self.key}, an update of {self.existing}" + (
                f" ({', '.join(self.differs)} differ)" if self.differs else ""
            )
        else:
            said = f"saved as {self.key}"
        return said if self.unchecked is None else f"{said}; {self.unchecked}"


Nearest = Callable[[str], list[Candidate]]


def checked(memory: Memory) -> Memory:
    """``memory`` with its arguments checked; ValueError names the first that cannot be."""
    content = memory.content.strip()
    if not content:
        raise ValueError("nothing to remember: the content is empty")
    if len(content) > MAX_CHARS:
        raise ValueError(f"the content is {len(content)} characters; a memory takes at most {MAX_CHARS}")
    if memory.memory_type is not None:
        check_type(memory.memory_type)
    if len(memory.tags) > MAX_TAGS or len(memory.related_files) > MAX_FILES:
        raise ValueError(f"at most {MAX_TAGS} tags and {MAX_FILES} related files")
    if memory.about is not None:
        site, sep, source_id = memory.about.partition(":")
        if not sep or not site or not source_id:
            raise ValueError(f"about {memory.about!r} is not SITE:ID (e.g. laptop:1234, as search shows them)")
    tags = tuple(dict.fromkeys(t.strip() for t in memory.tags if t.strip()))
    files = tuple(dict.fromkeys(f.strip() for f in memory.related_files if f.strip()))
    return Memory(
        content,
        memory.memory_type,
        tags,
        files,
        memory.project or None,
        memory.about,
        memory.session or None,
        memory.agent or None,
        memory.platform or None,
    )


def remember(settings: Settings, memory: Memory, *, now: float, nearest: Nearest | None = None) -> Remembered:
    """Save ``memory`` to the site's journal unless the site has it already (see the module's doc).
    ``nearest``: the memories nearest in meaning to a text (default: the search index's, through
    the daemon or in this process; None from it or a failure: the near check is skipped)."""
    memory = checked(memory)
    site = settings.site.name
    agent = memory.agent or settings.site.defaults.agent_name or "memsync"
    redactor = settings.privacy.redactor()
    content = memory.content
    if redactor is not None and redactor.may_hold_secrets(content):
        content = redact_fields(redactor, {"task": content})[0]["task"]
    tags = (*memory.tags, *((f"project:{memory.project}",) if memory.project else ()))
    with Journal(settings.journal_path) as journal:
        same = journal.same_content(content)
        if same is not None:
            return Remembered("duplicate", f"{site}:m{same}", f"{site}:m{same}", 1.0, memory_type=memory.memory_type)
        unchecked = None
        try:
            candidates = (nearest or _nearest(settings))(content)
        except MemsyncError as exc:
            candidates, unchecked = [], f"not checked for near-duplicates ({exc})"
        judged = judge(content, candidates)
        if judged.verdict is Verdict.DUPLICATE and judged.existing is not None:
            found = judged.existing
            return Remembered("duplicate", found.key, found.key, found.similarity, memory_type=memory.memory_type)
        updates = judged.existing.key if judged.verdict is Verdict.UPDATE and judged.existing else None
        metadata = {
            key: value
            for key, value in (
                ("memory_type", memory.memory_type),
                ("project", memory.project),
                ("related_files", list(memory.related_files) or None),
                ("about", memory.about),
                ("updates", updates),
                ("agentName", agent),
                ("platform", memory.platform),
            )
            if value is not None
        }
        created_ms = int(now * 1000)
        local_id = journal.append(
            Entry(
                session_id=memory.session or f"memories:{agent}",
                task=content,
                created_ms=created_ms,
                tags=tags,
                metadata=metadata,
                agent_name=agent,
                agent_platform=memory.platform,
            )
        )
    key = f"{site}:m{local_id}"
    if updates is not None:
        return Remembered(
            "updated",
            key,
            updates,
            judged.existing.similarity if judged.existing else None,
            judged.differs,
            memory.memory_type,
            unchecked,
            tags,
        )
    return Remembered("saved", key, memory_type=memory.memory_type, unchecked=unchecked, tags=tags)


def _nearest(settings: Settings) -> Nearest:
    """The search index's nearest memories to a text (``daemon.search_worker.recall``)."""

    def look(text: str) -> list[Candidate]:
        if not settings.warm.enabled:
            raise MemsyncError("the search index is off on this site")
        from daemon.search_worker.recall import run_search
        from sync.search.request import SearchRequest

        found = run_search(settings, SearchRequest(query=text[:2000], limit=NEAREST, collapse=False, floor=0.0))
        return [Candidate(f"{r.site}:{r.source_id}", r.text, r.similarity) for r in found.results]

    return look
