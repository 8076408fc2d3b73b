"""Before and after a dream, on the same store: what an agent receives, and what a search finds.

The issue's proof: "the context set and LoCoMo before and after a dream: recall not lower,
duplicate entries per block lower". Each part writes its episodes into a real AgentDB file, syncs
and indexes them at the product's defaults (``bench.recall.index``; the scheduled dream off, so
that nothing dreams before it is asked), starts a daemon, measures, runs the dream as a person runs
it (``memsync dream``, the job's manual run), waits until the index has taken the night's marks from
the change feed, and measures again with the same daemon.

- **The context set with planted duplicates** (tests/data/context_set.json, as ``bench.context_set``
  scores it). The set has next to no duplicates of its own, so a copy of it is planted with them:
  for ``--families`` of the memories that answer its prompts, one or two copies of the memory in
  other words (the task said another way, the input cut to its first sentence, the output's
  sentences in another order, no critique; the fact kept whole wherever it is), written by another
  agent on another site, hours to a day apart: the same fix noted again, as the seed user's agents
  do. Each copy stands for its
  original in the scoring (it answers what the original answers, and its fact is whole in it).
  **Duplicate entries per block**: the entries of one block beyond the first of each family (an
  original and its copies), over the answerable prompts' blocks. With it the context set's own
  figures: fact whole %, unrelated entries per block, silent % (the prompts that should get
  nothing), entries and characters per block.
- **LoCoMo** (a folder of its conversations, e.g. the development half; never downloaded): every
  dialog turn an episode as ``bench.recall`` writes them; every question of categories 1-4 with
  evidence searched through the daemon as ``memsync search --tag CONV -n 50`` asks it (the same
  request, over the control socket: the search is measured, not a process start); Recall@5/10/25/50
  as ``bench.recall`` computes it. After the dream a hidden evidence turn found through its fold's
  canonical memory is not counted (the strict figure); the figure that counts it is beside it.

Every episode is set two hours further back than ``bench.recall`` and ``bench.context_set`` set it,
so that the dream considers them all (it leaves memories younger than an hour to the next night).

    python -m bench.dream_effect [LOCOMO] [--tools claude-code ...] [--families N] [--runs N]
                                 [--markdown FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from bench.common import (
    MEMSYNC,
    DaemonProcess,
    Figure,
    SiteFiles,
    at_least,
    at_most,
    emit,
    median,
    progress,
    result,
    stopwatch,
    wait_indexed,
    workdir,
)
from bench.context_set import SET, TOOLS, Case, Episode, Scored, ask_case, hook_stdin, load_set, plan_set, run_hook
from bench.context_set import score as score_block
from bench.context_set import summary_of as context_summary
from bench.recall import (
    DEPTH,
    KS,
    Answered,
    Conversation,
    Indexed,
    Planned,
    Question,
    found_share,
    index,
    load_locomo,
    plan_conversation,
    recall_table,
)

SETTLED_S: Final = 2 * 3600  # every episode this much older: past the dream's hour of settling
COPY_SITES: Final = ("laptop-maya", "vm-ops", "desktop-raj")
COPY_AGENTS: Final = ("claude-code", "codex", "gemini-cli")
DEFAULT_FAMILIES: Final = 40
COPY_MARK: Final = "~"  # a copy's id: the original's id, the mark and its number
_SENTENCE: Final = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`(])")
# Said another way: the task's opening words as another agent writes them.
_OPENINGS: Final = (
    ("Fixed ", "Fix for "),
    ("Fix ", "Fixing "),
    ("Attempt: ", "Tried: "),
    ("Decided ", "Decision: "),
    ("Investigate ", "Looked into "),
)


# -- planting (pure) ----------------------------------------------------------------------------------
def original_of(key: str) -> str:
    """The set's episode a copy stands for (an original stands for itself)."""
    return key.split(COPY_MARK, 1)[0]


def reworded_task(task: str, n: int) -> str:
    for old, new in _OPENINGS:
        if task.startswith(old):
            return new + task[len(old) :]
    said = task[0].lower() + task[1:] if task[:1].isupper() and not task[1:2].isupper() else task
    return ("Noted again: " if n == 1 else "Same thing, another session: ") + said


def reordered(text: str, keep: str | None) -> str:
    """``text``'s sentences, the last first, unless that would split ``keep`` (then as it was)."""
    sentences = _SENTENCE.split(text.strip())
    if len(sentences) < 2:
        return text
    moved = " ".join([sentences[-1], *sentences[:-1]])
    if (
        keep
        and " ".join(keep.split()) in " ".join(text.split())
        and " ".join(keep.split()) not in " ".join(moved.split())
    ):
        return text
    return moved


def copy_of(original: Mapping[str, Any], n: int, fact: str | None) -> dict[str, Any]:
    """The ``n``-th copy (1 or 2) of a set episode: the same memory in other words, by another agent
    on another site, ``n`` half-days newer (1) or a day older (2) but never younger than the set's
    newest."""
    others = [s for s in COPY_SITES if s != original["site"]]
    agents = [a for a in COPY_AGENTS if a != original["agent"]]
    given = str(original["input"] or "")
    first = _SENTENCE.split(given.strip())[0]
    whole = " ".join((fact or "").split())
    if whole and whole in " ".join(given.split()) and whole not in " ".join(first.split()):
        first = given  # the fact is in the input: the copy keeps it whole
    age = float(original["age_days"]) + (-0.5 if n == 1 else 1.0)
    return {
        **original,
        "id": f"{original['id']}{COPY_MARK}{n}",
        "site": others[(n - 1) % len(others)],
        "agent": agents[(n - 1) % len(agents)],
        "session": f"{original['session']}-again{n}",
        "age_days": max(age, 0.05),
        "task": reworded_task(str(original["task"]), n),
        "input": first,
        "output": reordered(str(original["output"] or ""), fact),
        "critique": original["critique"] if whole and whole in " ".join(str(original["critique"]).split()) else "",
    }


def plant(episodes: Sequence[Mapping[str, Any]], cases: Sequence[Case], families: int) -> list[dict[str, Any]]:
    """Copies of ``families`` of the memories that answer the set's prompts (each answering memory
    once, in the set's order): one copy for the odd ones, two for the even."""
    by_id = {str(e["id"]): e for e in episodes}
    facts: dict[str, str | None] = {}
    for case in cases:
        if case.memory is not None and case.memory in by_id:
            facts.setdefault(case.memory, case.fact)
    out: list[dict[str, Any]] = []
    for i, (memory, fact) in enumerate(list(facts.items())[:families]):
        for n in range(1, 2 + (i % 2)):
            out.append(copy_of(by_id[memory], n, fact))
    return out


# -- scoring (pure) -----------------------------------------------------------------------------------
def duplicate_entries(shown: Sequence[str]) -> int:
    """A block's entries beyond the first of each family (an original and its copies)."""
    families = [original_of(k) for k in shown]
    return len(families) - len(set(families))


def block_summary(scored: Sequence[Scored]) -> dict[str, Any]:
    """``bench.context_set``'s figures over the blocks, and the duplicate entries per block (over the
    answerable prompts' blocks, as unrelated entries are counted) and the share of blocks with any."""
    answer = [s for s in scored if s.fact_whole is not None]
    dups = [duplicate_entries(s.shown) for s in answer]
    return context_summary(scored) | {
        "duplicates_per_block": sum(dups) / len(dups) if dups else 0.0,
        "blocks_with_duplicates_pct": 100 * sum(1 for d in dups if d) / len(dups) if dups else 0.0,
    }


def credited(ranked: Sequence[str], members_of: Mapping[str, Sequence[str]]) -> tuple[str, ...]:
    """``ranked`` with each fold's hidden members counted where its canonical memory is."""
    out: list[str] = []
    for key in ranked:
        out += [key, *members_of.get(key, ())]
    return tuple(out)


def changed_questions(
    before: Sequence[Answered], after: Sequence[Answered], members_of: Mapping[str, Sequence[str]]
) -> list[dict[str, Any]]:
    """The questions whose share of evidence found in the first ``k`` changed at some k, each with
    every evidence turn's place before and after (None: not in the results), the fold hiding it,
    and the turns that left or entered the first five (those hidden by a fold named)."""
    hidden_in = {m: c for c, ms in members_of.items() for m in ms}
    out: list[dict[str, Any]] = []
    for b, a in zip(before, after, strict=True):
        q = b.question
        moved = {
            str(k): [found_share(b.ranked, q.evidence, k), found_share(a.ranked, q.evidence, k)]
            for k in KS
            if found_share(b.ranked, q.evidence, k) != found_share(a.ranked, q.evidence, k)
        }
        if not moved:
            continue
        out.append(
            {
                "question": q.text,
                "evidence": {
                    e: {"before": place(b.ranked, e), "after": place(a.ranked, e), "hidden_in": hidden_in.get(e)}
                    for e in sorted(q.evidence)
                },
                "shares": moved,
                "left_top5": {k: hidden_in.get(k) for k in b.ranked[:5] if k not in a.ranked[:5]},
                "entered_top5": [k for k in a.ranked[:5] if k not in b.ranked[:5]],
            }
        )
    return out


def place(ranked: Sequence[str], key: str) -> int | None:
    """``key``'s place in ``ranked``, from 1 (None: not in it)."""
    return ranked.index(key) + 1 if key in ranked else None


# -- the dream, as a person runs it --------------------------------------------------------------------
def dream(site: SiteFiles) -> dict[str, Any]:
    """``memsync dream`` on the site (the job's manual run), timed; and the steps it recorded."""
    argv = [str(MEMSYNC), "dream", "--config", str(site.config)]
    with stopwatch() as elapsed:
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        seconds = elapsed()
    if done.returncode != 0:
        raise RuntimeError(f"memsync dream exited {done.returncode}: {done.stderr[-2000:]}")
    listed = subprocess.run(
        [str(MEMSYNC), "dream", "steps", "--json", "--config", str(site.config)],
        capture_output=True,
        text=True,
        check=False,
    )
    if listed.returncode != 0:
        raise RuntimeError(f"memsync dream steps exited {listed.returncode}: {listed.stderr[-2000:]}")
    return {"seconds": seconds, "said": done.stderr.strip()[-400:], "steps": json.loads(listed.stdout)}


def hidden_by(steps: Sequence[Mapping[str, Any]], keys: Mapping[str, str]) -> dict[str, list[str]]:
    """Each step's canonical memory -> the memories it hides, as the benchmark's keys (``keys``:
    a source id -> its key; the steps name ``site:id``)."""
    out: dict[str, list[str]] = {}
    for step in steps:
        canonical = keys[str(step["canonical"]).rsplit(":", 1)[1]]
        out.setdefault(canonical, []).extend(keys[str(m).rsplit(":", 1)[1]] for m in step["members"])
    return out


def wait_marked(site: SiteFiles, daemon: DaemonProcess) -> None:
    """Until the index has read the feed to its end (the night's marks are changes in it)."""
    wait_indexed(site, daemon, timeout=900)


# -- the context set ----------------------------------------------------------------------------------
def context_pass(
    indexed: Indexed, root: Path, cases: Sequence[Case], tools: Sequence[str], episodes: Mapping[str, Episode]
) -> list[Scored]:
    keys = {f"{indexed.site.name}#{row}": original_of(key) for row, key in indexed.keys.items()}
    scored: list[Scored] = []
    for n, case in enumerate(cases):
        for tool in tools:
            got = ask_case(indexed.site, root, tool, case, n)
            if got is not None:
                scored.append(score_block(case, tool, got[0], keys, episodes, got[1]))
    return scored


def run_context(tools: Sequence[str], families: int, now: float) -> dict[str, Any]:
    data = load_set()
    raw = json.loads(SET.read_text(encoding="utf-8"))
    copies = plant(raw["episodes"], data.cases, families)
    with workdir("dream-effect-context") as root:
        progress(f"context set: {len(raw['episodes'])} episodes and {len(copies)} planted copies, then memsync sync")
        indexed = index(root, plan_set([*raw["episodes"], *copies], now - SETTLED_S))
        record: dict[str, Any] = {
            "part": "context_set",
            "episodes": len(raw["episodes"]),
            "copies": len(copies),
            "families": min(families, len(copies)),
            "sync_index_s": indexed.sync_index_s,
        }
        with DaemonProcess(indexed.site) as daemon:
            wait_indexed(indexed.site, daemon, timeout=600)
            run_hook(indexed.site, tools[0], hook_stdin(tools[0], "UserPromptSubmit", prompt="warm up the model"))
            progress(f"  before: {len(data.cases)} cases x {len(tools)} tools")
            before = context_pass(indexed, root / "before", data.cases, tools, data.episodes)
            record["before"] = block_summary(before)
            progress(f"  {describe_blocks(record['before'])}")
            night = dream(indexed.site)
            wait_marked(indexed.site, daemon)
            after = context_pass(indexed, root / "after", data.cases, tools, data.episodes)
            record["after"] = block_summary(after)
            progress(f"  after: {describe_blocks(record['after'])}")
    record["dream"] = dream_record(night, indexed.keys)
    record["changed_cases"] = [
        {"case": b.case, "tool": b.tool, "before": list(b.shown), "after": list(a.shown)}
        for b, a in zip(before, after, strict=True)
        if b.shown != a.shown
    ]
    return record


def dream_record(night: Mapping[str, Any], keys: Mapping[str, str]) -> dict[str, Any]:
    """What the night did, in the benchmark's keys: its folds and supersedes, and for planted copies
    how many it put with their original."""
    steps = night["steps"]
    named = [
        {
            "kind": s["kind"],
            "canonical": keys[str(s["canonical"]).rsplit(":", 1)[1]],
            "members": [keys[str(m).rsplit(":", 1)[1]] for m in s["members"]],
        }
        for s in steps
    ]
    copies = [k for k in keys.values() if COPY_MARK in k]
    together = {
        m for s in named if s["kind"] == "consolidates" for m in [s["canonical"], *s["members"]] if COPY_MARK in m
    }
    mixed = [
        s for s in named if len({original_of(k) for k in [s["canonical"], *s["members"]]}) > 1
    ]  # a step across families: the set's own near-duplicates, or a wrong one (read them in the results)
    return {
        "seconds": night["seconds"],
        "said": night["said"],
        "folds": sum(1 for s in named if s["kind"] == "consolidates"),
        "hidden": sum(len(s["members"]) for s in named),
        "superseded": sum(1 for s in named if s["kind"] == "supersedes"),
        "copies_folded_pct": 100 * len(together) / len(copies) if copies else 0.0,
        "across_families": mixed,
    }


# -- LoCoMo ------------------------------------------------------------------------------------------
def locomo_pass(indexed: Indexed, questions: Sequence[Question]) -> list[Answered]:
    from daemon.control.client import ControlClient
    from daemon.usecases.memory.search import search_request

    daemon = ControlClient(indexed.site.settings().socket_path)
    answers = []
    for q in questions:
        request = search_request(q.text, now=time.time(), limit=DEPTH, tags=(q.conversation,))
        with stopwatch() as elapsed:
            found = daemon.search(request)
            ms = elapsed() * 1000
        answers.append(Answered(q, tuple(indexed.keys[r.source_id] for r in found), ms))
    return answers


def recall_of(answers: Sequence[Answered]) -> dict[str, float]:
    return {k: float(v) for k, v in recall_table(answers)["recall"].items()}


def run_locomo(conversations: Sequence[Conversation], now: float) -> dict[str, Any]:
    questions = [q for c in conversations for q in c.questions]
    record: dict[str, Any] = {"part": "locomo", "questions": len(questions)}
    with workdir("dream-effect-locomo") as root:
        # One key per turn across conversations (bench.recall's are dia_ids, per conversation).
        planned = [
            Planned(f"{c.name}/{p.key}", p.ts, p.episode)
            for c in conversations
            for p in plan_conversation(c, now - SETTLED_S)
        ]
        progress(f"LoCoMo: {len(planned)} turns into an AgentDB file, then memsync sync")
        indexed = index(root, planned)
        record |= {"turns": len(planned), "sync_index_s": indexed.sync_index_s}
        with DaemonProcess(indexed.site) as daemon:
            wait_indexed(indexed.site, daemon, timeout=900)
            ours = [replace(q, evidence=frozenset(f"{q.conversation}/{e}" for e in q.evidence)) for q in questions]
            locomo_pass(indexed, ours[:1])  # the model loaded
            before = locomo_pass(indexed, ours)
            record["before"] = recall_of(before)
            progress(f"  before: R@5/10/25/50 {describe_recall(record['before'])}")
            night = dream(indexed.site)
            wait_marked(indexed.site, daemon)
            after = locomo_pass(indexed, ours)
    members = hidden_by(night["steps"], indexed.keys)
    record["after"] = recall_of(after)
    record["after_credited"] = recall_of([Answered(a.question, credited(a.ranked, members), a.ms) for a in after])
    record["dream"] = dream_record(night, indexed.keys)
    record["changed_questions"] = changed_questions(before, after, members)
    record["search_p50_ms"] = {
        "before": median([a.ms for a in before]),
        "after": median([a.ms for a in after]),
    }
    progress(f"  after: R@5/10/25/50 {describe_recall(record['after'])}; {record['dream']['said']}")
    return record


# -- the benchmark -----------------------------------------------------------------------------------
def describe_recall(r: Mapping[str, float]) -> str:
    return "/".join(f"{r[str(k)]:.1f}" for k in KS)


def describe_change(c: Mapping[str, Any]) -> str:
    """One changed question: its shares by k, each evidence turn's places, the first five's changes."""
    shares = ", ".join(f"R@{k} {b:.2f}->{a:.2f}" for k, (b, a) in c["shares"].items())
    turns = "; ".join(
        f"{e} {p['before']}->{p['after']}" + (f" (hidden in {p['hidden_in']})" if p["hidden_in"] else "")
        for e, p in c["evidence"].items()
    )
    left = ", ".join(k + (f" (hidden in {h})" if h else "") for k, h in c["left_top5"].items())
    return f"{c['question']!r}: {shares}; evidence {turns}; left the first five: {left or '-'}; entered: " + (
        ", ".join(c["entered_top5"]) or "-"
    )


def describe_blocks(r: Mapping[str, Any]) -> str:
    return (
        f"fact {r['fact_whole_pct']:.1f}%, unrelated {r['unrelated_per_block']:.2f}/block, duplicates "
        f"{r['duplicates_per_block']:.2f}/block ({r['blocks_with_duplicates_pct']:.0f}% of blocks), entries "
        f"{r['entries_per_block']:.1f}, silent {r['silent_pct']:.1f}%"
    )


def describe_run(r: Mapping[str, Any]) -> str:
    if r["part"] == "locomo":
        return (
            f"LoCoMo R@5/10/25/50 before {describe_recall(r['before'])}, after {describe_recall(r['after'])} "
            f"(credited {describe_recall(r['after_credited'])}); dream hid {r['dream']['hidden']} of {r['turns']}"
        )
    return (
        f"context set: before {describe_blocks(r['before'])}; after {describe_blocks(r['after'])}; dream hid "
        f"{r['dream']['hidden']}, planted copies folded {r['dream']['copies_folded_pct']:.0f}%"
    )


def figures(records: Sequence[Mapping[str, Any]]) -> list[Figure]:
    out: list[Figure] = []
    context = [r for r in records if r["part"] == "context_set"]
    if context:

        def mid(when: str, name: str) -> float:
            return median([float(r[when][name]) for r in context])

        for name, label, unit in (
            ("duplicates_per_block", "duplicate entries per block", ""),
            ("fact_whole_pct", "fact whole (answerable prompts)", "%"),
            ("unrelated_per_block", "unrelated entries per block", ""),
            ("silent_pct", "nothing or one line (should get nothing)", "%"),
            ("entries_per_block", "entries per answerable block", ""),
        ):
            before, after = mid("before", name), mid("after", name)
            out.append(Figure(f"context set + planted copies: {label}, before the dream", before, unit))
            if name in ("duplicates_per_block", "unrelated_per_block"):
                target = at_most(f"context set + planted copies: {label}, after", after, unit, before)
            elif name in ("fact_whole_pct", "silent_pct"):
                target = at_least(f"context set + planted copies: {label}, after", after, unit, before)
            else:
                target = Figure(f"context set + planted copies: {label}, after", after, unit)
            out.append(target)
        out.append(
            Figure(
                "context set: planted copies folded with their original",
                median([float(r["dream"]["copies_folded_pct"]) for r in context]),
                "%",
            )
        )
    locomo = [r for r in records if r["part"] == "locomo"]
    if locomo:
        for k in KS:
            before = median([r["before"][str(k)] for r in locomo])
            after = median([r["after"][str(k)] for r in locomo])
            out.append(Figure(f"LoCoMo R@{k}, before the dream", before, "%"))
            out.append(at_least(f"LoCoMo R@{k}, after the dream", after, "%", before))
        out.append(
            Figure("LoCoMo: turns the dream hid", median([float(r["dream"]["hidden"]) for r in locomo]), "turns")
        )
        out.append(Figure("LoCoMo: dream time", median([float(r["dream"]["seconds"]) for r in locomo]), "s"))
    return out


def markdown(res: Mapping[str, Any]) -> str:
    """The runs as tables (bench/results/dream-effect.md)."""
    lines = [f"### Before and after a dream ({res['at']}, load {'/'.join(f'{x:.1f}' for x in res['load'])})", ""]
    for r in res["runs"]:
        if r["part"] == "context_set":
            lines += [
                f"Context set, {r['episodes']} episodes + {r['copies']} planted copies of {r['families']} answering "
                f"memories; dream: {r['dream']['said']} ({r['dream']['seconds']:.0f} s); planted copies folded with "
                f"their original: {r['dream']['copies_folded_pct']:.0f}%",
                "",
                "| | fact whole | unrelated/block | duplicates/block | blocks with duplicates | entries/block "
                "| chars/block | silent |",
                "|---|---|---|---|---|---|---|---|",
            ]
            for when in ("before", "after"):
                b = r[when]
                lines.append(
                    f"| {when} | {b['fact_whole_pct']:.1f}% | {b['unrelated_per_block']:.2f} "
                    f"| {b['duplicates_per_block']:.2f} | {b['blocks_with_duplicates_pct']:.1f}% "
                    f"| {b['entries_per_block']:.2f} | {b['answer_chars']:.0f} | {b['silent_pct']:.1f}% |"
                )
            mixed = r["dream"]["across_families"]
            lines += ["", f"Steps across families (the set's own near-duplicates or wrong folds): {len(mixed)}"]
            lines += [f"- {s['kind']}: {s['canonical']} <- {', '.join(s['members'])}" for s in mixed]
            lines += ["", f"Cases whose block changed: {len(r['changed_cases'])}", ""]
        else:
            lines += [
                f"LoCoMo, {r['turns']} turns, {r['questions']} questions; dream: {r['dream']['said']} "
                f"({r['dream']['seconds']:.0f} s)",
                "",
                "| | R@5 | R@10 | R@25 | R@50 |",
                "|---|---|---|---|---|",
            ]
            for when in ("before", "after", "after_credited"):
                lines.append(f"| {when} | " + " | ".join(f"{r[when][str(k)]:.1f}%" for k in KS) + " |")
            changed = r.get("changed_questions", [])
            lines += ["", f"Questions whose found evidence changed at some k ({len(changed)}):"]
            lines += [f"- {describe_change(c)}" for c in changed]
            mixed = r["dream"]["across_families"]
            lines += ["", f"Steps ({len(mixed)}):"]
            lines += [f"- {s['kind']}: {s['canonical']} <- {', '.join(s['members'])}" for s in mixed[:40]]
            lines.append("")
    return "\n".join(lines) + "\n"


def run(
    locomo: Path | None = None, tools: Sequence[str] = ("claude-code",), families: int = DEFAULT_FAMILIES, runs: int = 1
) -> dict[str, Any]:
    records: list[dict[str, Any]] = []
    convs = load_locomo(locomo) if locomo is not None else []
    with stopwatch() as total:
        for n in range(runs):
            progress(f"run {n + 1}/{runs}")
            records.append(run_context(tools, families, time.time()))
            progress(f"  {describe_run(records[-1])}")
            if convs:
                records.append(run_locomo(convs, time.time()))
                progress(f"  {describe_run(records[-1])}")
    params = {
        "runs": runs,
        "tools": list(tools),
        "families": families,
        "locomo": None if locomo is None else locomo.name,
        "seconds": round(total()),
    }
    return result("dream_effect", params, records, figures(records))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("locomo", nargs="?", type=Path, help="a folder of LoCoMo conversations (or locomo10.json)")
    parser.add_argument("--tools", nargs="+", choices=TOOLS, default=["claude-code"], help="the hooks asked")
    parser.add_argument("--families", type=int, default=DEFAULT_FAMILIES, help="answering memories given copies")
    parser.add_argument("--runs", type=int, default=1, help="repetitions (figures: their median)")
    parser.add_argument("--markdown", type=Path, metavar="FILE", help="write the runs as tables")
    args = parser.parse_args()
    if args.runs < 1 or args.families < 0:
        parser.exit(2, "dream_effect: --runs must be 1 or more and --families 0 or more\n")
    res = run(args.locomo, args.tools, args.families, args.runs)
    if args.markdown is not None:
        args.markdown.write_text(markdown(res), encoding="utf-8")
    emit(res)


if __name__ == "__main__":
    main()
