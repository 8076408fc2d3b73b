"""The context set: what an agent's hook receives for what agents ask, scored as the block it gets.

The set (tests/data/context_set.json, written by hand) holds a few hundred coding-agent episodes and
the prompts an agent's hook sees: each answerable prompt names the memory that answers it and the
fact (a substring of it) that must reach the agent; prompts of kind chatty, off-topic and absent
should get nothing; ``starts`` are sessions starting in a project (SessionStart ``startup``, or
``resume`` with the session's last prompt in its transcript).

Its episodes are written into a real AgentDB file by the real agentdb package (the times are ages
before now), synced and indexed by ``memsync sync --wait --searchable`` on a site at the product's
defaults, and a daemon (``memsync run``) serves ``memsync context --for TOOL`` run as each tool's
hook runs it: its documented stdin (tests/data/hooks/), ``cwd`` a git checkout named after the
prompt's project, a new session each call. For each tool's hook shape (Claude Code and Codex
UserPromptSubmit, Gemini CLI BeforeAgent; SessionStart for all three) the block it gets is scored:

- **fact whole**: the answering memory's fact is in the block, whole (whitespace runs as one space);
- **unrelated entries**: entries that are neither the answering memory nor one the set accepts
  beside it (for a session start: from another project and not named);
- **characters** of the block;
- **silent**: a prompt that should get nothing got nothing, or one line;
- **failures said**: shown entries of failed episodes (success false) whose entry says FAILED.

``--capture FILE`` also keeps what the daemon answered for each prompt (the search's and the
project's recent results, as ``memsync context`` asks for them), so that the block's rules can be
tried on them without a daemon (``python -m bench.context_tune FILE``).

    python -m bench.context_set [--tools claude-code codex gemini] [--split tune|check]
                                [--capture FILE] [--limit-prompts N]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from bench.common import (
    MEMSYNC,
    ROOT,
    DaemonProcess,
    Figure,
    SiteFiles,
    as_installed,
    at_least,
    at_most,
    emit,
    percentile,
    progress,
    result,
    wait_indexed,
    workdir,
)
from bench.recall import Planned, index
from daemon.context.hook import HookInput, Plan, plan

SET: Final = ROOT / "tests" / "data" / "context_set.json"
HOOKS: Final = ROOT / "tests" / "data" / "hooks"
TOOLS: Final = ("claude-code", "codex", "gemini")
PROMPT_EVENT: Final = {"claude-code": "UserPromptSubmit", "codex": "UserPromptSubmit", "gemini": "BeforeAgent"}
RESUMABLE: Final = ("claude-code", "codex")  # tools whose transcripts memsync reads (JSON lines)
NOTHING: Final = ("chatty", "off-topic", "absent")
DAY_S: Final = 86_400
NEWEST_AGE_S: Final = 600  # the set's ages count from ten minutes before the run
# The proof: the fact whole in >= 90% of answerable prompts, <= 2 unrelated entries per block
# on average, nothing (or one line) for >= 90% of the prompts that should get nothing.
TARGET_FACT: Final = 90.0
TARGET_UNRELATED: Final = 2.0
TARGET_SILENT: Final = 90.0
# The hook gives up after 2 s by default; on a shared, loaded machine that would score a late answer
# as an empty block. The block is what is measured here (its time: python -m bench.hooks).
HOOK_TIMEOUT_S: Final = 10
REF: Final = re.compile(r"\[([^\]#\s]+)#(\d+) ·")
FAILED_WORD: Final = "FAILED"


# -- the set -----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Episode:
    id: str
    project: str | None
    success: bool
    fields: Mapping[str, Any]

    @property
    def text(self) -> str:
        return " ".join(
            " ".join(str(self.fields.get(k) or "") for k in ("task", "input", "output", "critique")).split()
        )


@dataclass(frozen=True, slots=True)
class Case:
    """One thing an agent's hook is asked: a prompt (``kind`` answer, chatty, off-topic, absent) or a
    session starting (``kind`` startup or resume, ``prompt`` its last prompt)."""

    id: str
    kind: str
    split: str
    project: str | None
    prompt: str | None
    memory: str | None = None
    fact: str | None = None
    also: frozenset[str] = field(default_factory=frozenset)

    @property
    def answerable(self) -> bool:
        return self.memory is not None

    @property
    def start(self) -> bool:
        return self.kind in ("startup", "resume")


@dataclass(frozen=True, slots=True)
class ContextSet:
    episodes: dict[str, Episode]
    cases: list[Case]


def load_set(path: Path = SET) -> ContextSet:
    raw = json.loads(path.read_text(encoding="utf-8"))
    episodes = {e["id"]: Episode(e["id"], e.get("project"), bool(e["success"]), e) for e in raw["episodes"]}
    cases = [
        Case(
            p["id"],
            p["kind"],
            p["split"],
            p.get("project"),
            p["prompt"],
            p.get("memory"),
            p.get("fact"),
            frozenset(p.get("also", ())),
        )
        for p in raw["prompts"]
    ]
    cases += [
        Case(
            s["id"],
            s["source"],
            s["split"],
            s["project"],
            s.get("last_prompt"),
            s["memory"],
            s["fact"],
            frozenset(s.get("also", ())),
        )
        for s in raw["starts"]
    ]
    return ContextSet(episodes, cases)


def plan_set(episodes: Iterable[Mapping[str, Any]], now: float) -> list[Planned]:
    """The set's episodes as the agentdb package stores them, each ``age_days`` before ``now``."""
    newest = int(now) - NEWEST_AGE_S
    return [
        Planned(
            e["id"],
            newest - int(float(e["age_days"]) * DAY_S),
            {
                "sessionId": e["session"],
                "task": e["task"],
                "input": e["input"] or None,
                "output": e["output"] or None,
                "critique": e["critique"] or None,
                "reward": e["reward"],
                "success": e["success"],
                "tags": list(e["tags"]),
                "metadata": {"agent_name": e["agent"], "host": e["site"], "context_set_id": e["id"]},
            },
        )
        for e in episodes
    ]


# -- scoring (pure) -----------------------------------------------------------------------------------
def squeezed(text: str) -> str:
    return " ".join(text.split())


def entries(block: str) -> list[tuple[str, str]]:
    """The block's entries as (site#sourceId, the entry's text up to the next entry)."""
    marks = list(REF.finditer(block))
    return [
        (f"{m.group(1)}#{m.group(2)}", block[m.start() : marks[i + 1].start() if i + 1 < len(marks) else len(block)])
        for i, m in enumerate(marks)
    ]


@dataclass(frozen=True, slots=True)
class Scored:
    case: str
    kind: str
    split: str
    tool: str
    chars: int
    shown: tuple[str, ...]  # the set's episode ids, in the block's order
    fact_whole: bool | None  # None: nothing to find
    unrelated: int
    silent: bool  # nothing, or one line
    failed_shown: int
    failed_said: int
    ms: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def score(
    case: Case, tool: str, block: str, keys: Mapping[str, str], episodes: Mapping[str, Episode], ms: float = 0.0
) -> Scored:
    """How well ``block`` serves ``case``. ``keys``: site#sourceId -> the set's episode id."""
    found = entries(block)
    shown = tuple(keys.get(ref, ref) for ref, _ in found)
    fact = None if case.fact is None else squeezed(case.fact) in squeezed(block)
    wanted = {case.memory, *case.also} if case.memory else set()
    if case.start:
        unrelated = sum(1 for i in shown if i not in wanted and episodes[i].project != case.project)
    else:
        unrelated = sum(1 for i in shown if i not in wanted)
    failed = [(ref, text) for (ref, text), i in zip(found, shown, strict=True) if not episodes[i].success]
    return Scored(
        case=case.id,
        kind=case.kind,
        split=case.split,
        tool=tool,
        chars=len(block),
        shown=shown,
        fact_whole=fact,
        unrelated=unrelated,
        silent="\n" not in block.strip(),
        failed_shown=len(failed),
        failed_said=sum(1 for _, text in failed if FAILED_WORD in text),
        ms=ms,
    )


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def summary_of(scored: Sequence[Scored]) -> dict[str, Any]:
    """The figures over some scored cases: answerable (fact whole %, unrelated per block, chars),
    should-get-nothing (silent %, chars), failed entries said as such."""
    answer = [s for s in scored if s.fact_whole is not None]
    nothing = [s for s in scored if s.kind in NOTHING]
    failed = sum(s.failed_shown for s in scored)
    return {
        "answerable": len(answer),
        "fact_whole_pct": 100 * mean([float(bool(s.fact_whole)) for s in answer]),
        "unrelated_per_block": mean([float(s.unrelated) for s in answer]),
        "entries_per_block": mean([float(len(s.shown)) for s in answer]),
        "answer_chars": mean([float(s.chars) for s in answer]),
        "nothing": len(nothing),
        "silent_pct": 100 * mean([float(s.silent) for s in nothing]),
        "nothing_chars": mean([float(s.chars) for s in nothing]),
        "failed_shown": failed,
        "failed_said_pct": 100 * sum(s.failed_said for s in scored) / failed if failed else 100.0,
        "ms_p50": percentile([s.ms for s in scored], 50) if scored else 0.0,
    }


def breakdown(scored: Sequence[Scored]) -> dict[str, Any]:
    """``summary_of`` for every tool, split and kind of case, and over all."""
    out: dict[str, Any] = {"all": summary_of(scored)}
    for name, key in (("tool", "tool"), ("split", "split")):
        for value in sorted({getattr(s, key) for s in scored}):
            out[f"{name}:{value}"] = summary_of([s for s in scored if getattr(s, key) == value])
    for kind in sorted({s.kind for s in scored}):
        out[f"kind:{kind}"] = summary_of([s for s in scored if s.kind == kind])
    for tool in sorted({s.tool for s in scored}):
        for split in sorted({s.split for s in scored}):
            out[f"{tool}:{split}"] = summary_of([s for s in scored if s.tool == tool and s.split == split])
    return out


# -- the hooks, as each tool runs them ----------------------------------------------------------------
def hook_stdin(tool: str, event: str, **fields: Any) -> str:
    """The tool's documented stdin for ``event`` with ``fields`` set (tests/data/hooks/)."""
    data = json.loads((HOOKS / f"{tool}.{event}.json").read_text(encoding="utf-8"))
    return json.dumps({**data, **fields})


def block_of(tool: str, stdout: str) -> str:
    """The context a tool takes from the hook's stdout ("" for nothing)."""
    if not stdout.strip() or stdout.strip() == "{}":
        return ""
    answer = json.loads(stdout)
    context = answer.get("hookSpecificOutput", {}).get("additionalContext", "")
    return str(context)


def transcript(tool: str, path: Path, prompt: str) -> Path:
    """A session's transcript whose last prompt is ``prompt``, in the tool's JSON lines."""
    if tool == "codex":
        lines = [{"type": "event_msg", "payload": {"type": "user_message", "message": prompt}}]
    else:
        lines = [{"type": "user", "message": {"role": "user", "content": prompt}}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def project_dir(root: Path, project: str | None) -> Path:
    """A git checkout named after the project (a folder of its own for none)."""
    folder = root / "checkouts" / (project or "scratch")
    (folder / ".git").mkdir(parents=True, exist_ok=True)
    return folder


def run_hook(site: SiteFiles, tool: str, stdin: str) -> tuple[str, float]:
    started = time.perf_counter()
    done = subprocess.run(
        [str(MEMSYNC), "context", "--for", tool, "--config", str(site.config), "--timeout", str(HOOK_TIMEOUT_S)],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )
    ms = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise RuntimeError(f"memsync context --for {tool} exited {done.returncode}: {done.stderr[-800:]}")
    if done.stderr.strip():
        progress(f"  context --for {tool} said: {done.stderr.strip()[-300:]}")
    return block_of(tool, done.stdout), ms


def ask_case(site: SiteFiles, root: Path, tool: str, case: Case, n: int) -> tuple[str, float] | None:
    """The block ``tool``'s hook gets for ``case`` (None: this tool's hook is not asked it)."""
    cwd = project_dir(root, case.project)
    session = f"{tool}-{case.id}-{n}"
    if not case.start:
        event = PROMPT_EVENT[tool]
        return run_hook(site, tool, hook_stdin(tool, event, cwd=str(cwd), session_id=session, prompt=case.prompt))
    if case.kind == "resume":
        if tool not in RESUMABLE:
            return None
        path = transcript(tool, root / f"{session}.jsonl", str(case.prompt))
        stdin = hook_stdin(
            tool, "SessionStart", cwd=str(cwd), session_id=session, source="resume", transcript_path=str(path)
        )
        return run_hook(site, tool, stdin)
    return run_hook(site, tool, hook_stdin(tool, "SessionStart", cwd=str(cwd), session_id=session, source="startup"))


def planned(case: Case, project: str | None) -> Plan:
    """What the hook decides for ``case`` (``daemon.context.hook.plan``), as Claude Code would ask."""
    hook = HookInput(
        tool="claude-code",
        event="SessionStart" if case.start else "UserPromptSubmit",
        session_id=case.id,
        cwd=None,
        transcript_path=None,
        source=("resume" if case.kind == "resume" else "startup") if case.start else None,
        prompt=None if case.start else case.prompt,
    )
    return plan(hook, project=project, last_prompt=case.prompt if case.kind == "resume" else None)


def capture(site: SiteFiles, case: Case, root: Path) -> dict[str, Any]:
    """What ``memsync context`` asks the daemon for this case, as it asks it (``daemon.cli.context``):
    the search for the prompt (or the project and last prompt at a start) and the project's recent
    episodes, as the daemon's wire results."""
    from daemon.context.files import project_name
    from daemon.control.client import ControlClient
    from sync.search.request import RecentRequest, SearchFilter, SearchRequest

    daemon = ControlClient(site.settings().socket_path)
    project = project_name(project_dir(root, case.project))
    decided = planned(case, project)
    record: dict[str, Any] = {"case": case.id, "project": project, "plan": decided.action, "query": decided.query}
    if decided.action != "search":
        return record | {"found": [], "recent": []}
    request = SearchRequest(query=decided.query, limit=12)
    record["found"] = [r.to_wire() for r in daemon.search(request)]
    recent = RecentRequest(limit=12, filter=SearchFilter(tags=(f"project:{project}",)))
    record["recent"] = [r.to_wire() for r in daemon.recent(recent)]
    return record


# -- the benchmark -----------------------------------------------------------------------------------
def chosen(cases: Sequence[Case], split: str | None, limit: int | None) -> list[Case]:
    picked = [c for c in cases if split is None or c.split == split]
    return picked[:limit] if limit else picked


def run(
    tools: Sequence[str] = TOOLS,
    split: str | None = None,
    capture_to: Path | None = None,
    limit: int | None = None,
    records_to: Path | None = None,
) -> dict[str, Any]:
    as_installed()
    data = load_set()
    raw = json.loads(SET.read_text(encoding="utf-8"))
    cases = chosen(data.cases, split, limit)
    with workdir("context-set") as root:
        progress(f"context set: {len(data.episodes)} episodes into an AgentDB file, then memsync sync")
        indexed = index(root, plan_set(raw["episodes"], time.time()))
        keys = {f"{indexed.site.name}#{row}": key for row, key in indexed.keys.items()}
        progress(f"  synced and indexed in {indexed.sync_index_s:.0f} s")
        scored: list[Scored] = []
        blocks: list[str] = []
        captured: list[dict[str, Any]] = []
        with DaemonProcess(indexed.site) as daemon:
            wait_indexed(indexed.site, daemon, timeout=600)
            run_hook(
                indexed.site, "claude-code", hook_stdin("claude-code", "UserPromptSubmit", prompt="warm up the model")
            )
            for n, case in enumerate(cases):
                for tool in tools:
                    got = ask_case(indexed.site, root, tool, case, n)
                    if got is not None:
                        scored.append(score(case, tool, got[0], keys, data.episodes, got[1]))
                        blocks.append(got[0])
                if capture_to is not None:
                    captured.append(capture(indexed.site, case, root))
                if (n + 1) % 50 == 0:
                    progress(f"  {n + 1}/{len(cases)} cases")
    if capture_to is not None:
        capture_to.write_text(json.dumps({"keys": keys, "cases": captured}) + "\n", encoding="utf-8")
    if records_to is not None:
        records = [s.to_json() | {"block": b} for s, b in zip(scored, blocks, strict=True)]
        records_to.write_text(json.dumps(records, indent=1) + "\n", encoding="utf-8")
    table = breakdown(scored)
    progress(describe_run(table))
    return result(
        "context_set",
        {"tools": list(tools), "split": split, "cases": len(cases), "episodes": len(data.episodes)},
        [table],
        figures(table),
    )


def figures(table: Mapping[str, Any]) -> list[Figure]:
    out: list[Figure] = []
    for tool in TOOLS:
        row = table.get(f"tool:{tool}")
        if row is None:
            continue
        out += [
            at_least(f"{tool}: fact present and whole (answerable prompts)", row["fact_whole_pct"], "%", TARGET_FACT),
            at_most(f"{tool}: unrelated entries per block", row["unrelated_per_block"], "", TARGET_UNRELATED),
            at_least(f"{tool}: nothing or one line (should get nothing)", row["silent_pct"], "%", TARGET_SILENT),
            Figure(f"{tool}: characters per answerable block", row["answer_chars"], "chars"),
            Figure(f"{tool}: characters per should-get-nothing block", row["nothing_chars"], "chars"),
            Figure(f"{tool}: failed entries said FAILED", row["failed_said_pct"], "%"),
        ]
    return out


def describe_run(table: Mapping[str, Any]) -> str:
    def line(name: str, row: Mapping[str, Any]) -> str:
        return (
            f"{name}: fact {row['fact_whole_pct']:.1f}% of {row['answerable']}, unrelated "
            f"{row['unrelated_per_block']:.2f}/block ({row['entries_per_block']:.1f} entries, "
            f"{row['answer_chars']:.0f} chars); silent {row['silent_pct']:.1f}% of {row['nothing']} "
            f"({row['nothing_chars']:.0f} chars); failed said {row['failed_said_pct']:.0f}% of "
            f"{row['failed_shown']}; p50 {row['ms_p50']:.0f} ms"
        )

    return "; ".join(line(name, row) for name, row in table.items() if name == "all" or name.startswith("tool:"))


def markdown(table: Mapping[str, Any]) -> str:
    """The breakdown as a table (bench/results/context-set.md)."""
    rows = [
        "| Cases | Answerable | Fact whole | Unrelated/block | Entries/block | Chars (answer) "
        "| Should get nothing | Silent | Chars (nothing) | Failed said | p50 ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in table.items():
        rows.append(
            f"| {name} | {r['answerable']} | {r['fact_whole_pct']:.1f}% | {r['unrelated_per_block']:.2f} "
            f"| {r['entries_per_block']:.1f} | {r['answer_chars']:.0f} | {r['nothing']} | {r['silent_pct']:.1f}% "
            f"| {r['nothing_chars']:.0f} | {r['failed_said_pct']:.0f}% of {r['failed_shown']} | {r['ms_p50']:.0f} |"
        )
    return "\n".join(rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tools", nargs="*", choices=TOOLS, default=list(TOOLS), help="none: only --capture")
    parser.add_argument("--split", choices=("tune", "check"))
    parser.add_argument("--capture", type=Path, metavar="FILE", help="keep the daemon's answers for each case")
    parser.add_argument("--records", type=Path, metavar="FILE", help="keep every scored block")
    parser.add_argument("--markdown", type=Path, metavar="FILE", help="write the breakdown as a markdown table")
    parser.add_argument("--limit-prompts", type=int, metavar="N")
    args = parser.parse_args()
    res = run(args.tools, args.split, args.capture, args.limit_prompts, args.records)
    if args.markdown is not None:
        args.markdown.write_text(markdown(res["runs"][0]), encoding="utf-8")
    emit(res)


if __name__ == "__main__":
    main()
