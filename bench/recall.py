"""Recall: what comes back when an agent asks, on a public long-memory benchmark and on the project's
labelled set, through the search path an agent's hook takes.

- **LoCoMo** ("Evaluating Very Long-Term Conversational Memory of LLM Agents", Maharana et al.,
  ACL 2024). The data is not part of this repository and is never downloaded: the public set is
  ``data/locomo10.json`` in https://github.com/snap-research/locomo (pass that file, or a folder of
  one JSON file per conversation in the same format, such as the development half in
  ../shared/data/locomo-dev/). Each dialog turn becomes one episode written into a real AgentDB file
  by the real agentdb package (tests/agentdb_gen/load.mjs): task ``"<speaker>: <text>"`` (plus
  `` [shares a photo of <caption>]`` when the turn shares one), input ``"conversation between A and
  B"``, session ``<conv>-s<N>``, tags ``[<conv>]``, metadata ``{"dia_id": "D1:3"}``; its time is its
  session's date shifted so that each conversation's newest session began an hour before now, 30 s
  between turns. ``memsync sync --wait --searchable`` syncs and indexes the file (site config in a
  temp dir, embedded hub, every setting at its default); a daemon (``memsync run``) then serves
  ``memsync search QUESTION --json -n 50 --tag <conv> [--floor 0 | --mode bm25|dense]`` for every question of
  categories 1-4 (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop) that has evidence, one CLI
  process per search, its wall time measured.
  Recall@k (k = 5, 10, 25, 50): the share of a question's evidence turns in its first k results,
  averaged over questions, and the share of questions with all their evidence there.
- **The labelled set** (tests/data/warm_relevance.json, scored as tests/unit/test_warm_relevance.py
  scores it): its episodes written, synced and searched the same way (times shifted alike, no
  filter, ``-n 10``); MRR@10 with tied scores sharing their ranks, overall, on exact identifiers and
  on paraphrases, and how many queries find their episode within 1, 3 and 10.

The paper's Table 3 (dialog turns as the unit, retriever DRAGON) is the reference beside the figures.

    python -m bench.recall LOCOMO [--modes default bm25 dense] [--limit-questions N]
                           [--conversations 26 30 ...] [--json OUT] [--older-by DAYS]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

# The labelled set is scored as its test scores it: one function, not a copy.
from harness.relevance import shared_rank_of as shared_rank

from bench.common import (
    GEN,
    MEMSYNC,
    ROOT,
    DaemonProcess,
    Figure,
    SiteFiles,
    as_installed,
    at_least,
    at_most,
    emit,
    make_site,
    percentile,
    progress,
    result,
    stopwatch,
    wait_indexed,
    workdir,
)

KS: Final = (5, 10, 25, 50)
DEPTH: Final = 50  # results asked for per LoCoMo question: the largest k
CATEGORIES: Final = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
# default: no --mode, hybrid, as a hook asks; uncut: the same with no relevance floor (--floor 0),
# what the ranking alone finds; bm25 and dense: one list alone.
MODES: Final = ("default", "uncut", "bm25", "dense")
MODE_ARGS: Final = {"default": [], "uncut": ["--floor", "0"], "bm25": ["--mode", "bm25"], "dense": ["--mode", "dense"]}
PAPER_DRAGON: Final = {5: 58.8, 10: 67.5, 25: 79.9, 50: 84.8}  # the paper's Table 3, percent
TARGET_CLI_P50_MS: Final = 130.0
TURN_SPACING_S: Final = 30
NEWEST_AGE_S: Final = 3600
LABELLED: Final = ROOT / "tests" / "data" / "warm_relevance.json"
LABELLED_TOP: Final = 10
LABELLED_CLASSES: Final = ("identifier", "paraphrase")
SESSION_KEY: Final = re.compile(r"^session_(\d+)$")
EVIDENCE: Final = re.compile(r"^D:?(\d+):(\d+)$")  # "D1:3"; one entry in the data reads "D:11:26"


# -- LoCoMo's format -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    caption: str | None = None


@dataclass(frozen=True, slots=True)
class Session:
    number: int
    began: datetime  # as the data says it, read as UTC
    turns: tuple[Turn, ...]


@dataclass(frozen=True, slots=True)
class Question:
    conversation: str
    category: int
    text: str
    evidence: frozenset[str]  # dia_ids


@dataclass(frozen=True, slots=True)
class Conversation:
    name: str
    speakers: tuple[str, str]
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]
    dropped_evidence: int = 0  # evidence entries naming no turn of the conversation


def parse_session_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` as a UTC datetime."""
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(f"session date {text!r} is not like '1:56 pm on 8 May, 2023'") from None


def evidence_ids(entries: Iterable[str], known: frozenset[str]) -> tuple[frozenset[str], int]:
    """The dia_ids a question's evidence names (an entry may hold several, separated by ``;``), and
    how many entries were dropped because they name no turn of the conversation."""
    found: set[str] = set()
    dropped = 0
    for entry in entries:
        for part in entry.split(";"):
            match = EVIDENCE.match(part.strip())
            dia_id = f"D{match[1]}:{match[2]}" if match else None
            if dia_id in known:
                found.add(dia_id)
            else:
                dropped += 1
    return frozenset(found), dropped


def parse_conversation(name: str, data: Mapping[str, Any], qa: Sequence[Mapping[str, Any]]) -> Conversation:
    sessions = []
    for key, turns in data.items():
        match = SESSION_KEY.match(key)
        if match is None or not turns:
            continue
        number = int(match[1])
        sessions.append(
            Session(
                number,
                parse_session_date(data[f"session_{number}_date_time"]),
                tuple(Turn(t["dia_id"], t["speaker"], t["text"], t.get("blip_caption")) for t in turns),
            )
        )
    sessions.sort(key=lambda s: s.number)
    known = frozenset(t.dia_id for s in sessions for t in s.turns)
    questions, dropped = [], 0
    for q in qa:
        if q.get("category") not in CATEGORIES:
            continue
        evidence, lost = evidence_ids(q.get("evidence") or (), known)
        dropped += lost
        if evidence:
            questions.append(Question(name, int(q["category"]), str(q["question"]), evidence))
    speakers = (str(data["speaker_a"]), str(data["speaker_b"]))
    return Conversation(name, speakers, tuple(sessions), tuple(questions), dropped)


def load_locomo(path: Path, only: Sequence[str] | None = None) -> list[Conversation]:
    """A folder of one JSON file per conversation (named by the file's stem), or the public
    ``locomo10.json`` (a list of ``{"sample_id", "conversation", "qa"}``)."""
    found: list[Conversation] = []
    if path.is_dir():
        for file in sorted(path.glob("*.json")):
            data = json.loads(file.read_text(encoding="utf-8"))
            found.append(parse_conversation(file.stem, data, data.get("qa") or ()))
    elif path.is_file():
        for sample in json.loads(path.read_text(encoding="utf-8")):
            found.append(parse_conversation(str(sample["sample_id"]), sample["conversation"], sample.get("qa") or ()))
    else:
        raise ValueError(f"{path} does not exist: pass LoCoMo's locomo10.json or a folder of its conversations")
    if only:
        missing = set(only) - {c.name for c in found}
        if missing:
            raise ValueError(f"no conversation named {', '.join(sorted(missing))} in {path}")
        found = [c for c in found if c.name in set(only)]
    if not found:
        raise ValueError(f"{path} holds no LoCoMo conversation (*.json with speaker_a, session_N, qa)")
    return found


# -- episodes ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Planned:
    """One episode to write: its key in the benchmark (a dia_id or a labelled episode's id), its
    time in unix seconds, and the episode as the agentdb package's ``storeEpisode`` takes it."""

    key: str
    ts: int
    episode: dict[str, Any]


def turn_task(turn: Turn) -> str:
    photo = f" [shares a photo of {turn.caption}]" if turn.caption else ""
    return f"{turn.speaker}: {turn.text}{photo}"


def plan_conversation(conv: Conversation, now: float) -> list[Planned]:
    """Every turn as an episode; the newest session began ``NEWEST_AGE_S`` before ``now``, the
    sessions keep their spacing, and turns follow each other by ``TURN_SPACING_S``."""
    newest = max(s.began for s in conv.sessions).timestamp()
    shift = int(now) - NEWEST_AGE_S - int(newest)
    context = f"conversation between {conv.speakers[0]} and {conv.speakers[1]}"
    planned = []
    for session in conv.sessions:
        began = int(session.began.timestamp()) + shift
        for i, turn in enumerate(session.turns):
            episode = {
                "sessionId": f"{conv.name}-s{session.number}",
                "task": turn_task(turn),
                "input": context,
                "reward": 0,
                "success": False,
                "tags": [conv.name],
                "metadata": {"dia_id": turn.dia_id},
            }
            planned.append(Planned(turn.dia_id, began + i * TURN_SPACING_S, episode))
    return planned


def plan_labelled(episodes: Sequence[Mapping[str, Any]], now: float) -> list[Planned]:
    """The labelled set's episodes, their spacing kept, the newest ``NEWEST_AGE_S`` before ``now``."""
    newest = max(int(e["ts"]) for e in episodes) // 1000
    shift = int(now) - NEWEST_AGE_S - newest
    return [
        Planned(
            e["id"],
            int(e["ts"]) // 1000 + shift,
            {
                "sessionId": e["session"],
                "task": e["task"],
                "input": e["input"],
                "output": e["output"],
                "critique": e["critique"],
                "reward": 0,
                "success": False,
                "tags": list(e["tags"]),
                "metadata": {"agent_name": e["agent"], "relevance_id": e["id"]},
            },
        )
        for e in episodes
    ]


# -- scoring ----------------------------------------------------------------------------------------
def found_share(ranked: Sequence[str], evidence: frozenset[str], k: int) -> float:
    """The share of ``evidence`` among the first ``k`` of ``ranked``."""
    return len(evidence & set(ranked[:k])) / len(evidence)


@dataclass(frozen=True, slots=True)
class Answered:
    question: Question
    ranked: tuple[str, ...]  # dia_ids, best first
    ms: float  # the search CLI's wall time


def recall_table(answers: Sequence[Answered]) -> dict[str, Any]:
    """Percent over ``answers``: per k, the mean share of evidence found and the share of questions
    with all of it found."""
    n = len(answers)
    share = {str(k): 100 * math.fsum(found_share(a.ranked, a.question.evidence, k) for a in answers) / n for k in KS}
    every = {str(k): 100 * sum(a.question.evidence <= set(a.ranked[:k]) for a in answers) / n for k in KS}
    return {"questions": n, "recall": share, "all": every}


def locomo_record(mode: str, answers: Sequence[Answered]) -> dict[str, Any]:
    by_category = {
        str(c): recall_table(mine) for c in CATEGORIES if (mine := [a for a in answers if a.question.category == c])
    }
    by_conversation = {
        c: recall_table([a for a in answers if a.question.conversation == c])
        for c in sorted({a.question.conversation for a in answers})
    }
    latencies = [a.ms for a in answers]
    return {
        "corpus": "locomo",
        "mode": mode,
        **recall_table(answers),
        "by_category": by_category,
        "by_conversation": by_conversation,
        "p50_ms": percentile(latencies, 50),
        "p99_ms": percentile(latencies, 99),
    }


@dataclass(frozen=True, slots=True)
class LabelledQuery:
    id: str
    cls: str
    text: str
    relevant: frozenset[str]


def load_labelled(path: Path = LABELLED) -> tuple[list[Mapping[str, Any]], list[LabelledQuery]]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    queries = [LabelledQuery(q["id"], q["class"], q["query"], frozenset(q["relevant"])) for q in raw["queries"]]
    return list(raw["episodes"]), queries


def labelled_record(
    mode: str, ranked: Mapping[str, tuple[float, int | None]], queries: Sequence[LabelledQuery]
) -> dict[str, Any]:
    def mrr(cls: str | None) -> float:
        values = [ranked[q.id][0] for q in queries if cls is None or q.cls == cls]
        return math.fsum(values) / len(values) if values else 0.0

    def within(n: int) -> int:
        return sum(1 for q in queries if (worst := ranked[q.id][1]) is not None and worst <= n)

    return {
        "corpus": "labelled",
        "mode": mode,
        "queries": len(queries),
        "mrr": mrr(None),
        **{f"mrr_{c}": mrr(c) for c in LABELLED_CLASSES},
        "found": {str(n): within(n) for n in (1, 3, LABELLED_TOP)},
    }


# -- the real parts ---------------------------------------------------------------------------------
def write_agentdb(path: Path, planned: Sequence[Planned]) -> dict[str, str]:
    """The episodes written into a new AgentDB file by the real package; AgentDB row id -> key."""
    lines = "".join(json.dumps({"episode": p.episode, "ts": p.ts}) + "\n" for p in planned)
    done = subprocess.run(
        ["node", str(GEN / "load.mjs"), "--db", str(path)],
        input=lines,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"load.mjs failed: {done.stderr[-2000:]}")
    ids = json.loads(done.stdout.strip().splitlines()[-1])["ids"]
    return {str(i): p.key for i, p in zip(ids, planned, strict=True)}


def search(
    site: SiteFiles, query: str, mode: str, limit: int, tag: str | None
) -> tuple[list[tuple[str, float]], float]:
    """``memsync search`` as a hook runs it: (sourceId, score) best first, and its wall time in ms."""
    argv = [str(MEMSYNC), "search", "--json", "-n", str(limit), "--config", str(site.config)]
    argv += ["--tag", tag] if tag else []
    argv += MODE_ARGS[mode]
    with stopwatch() as elapsed:
        done = subprocess.run([*argv, "--", query], capture_output=True, text=True, check=False)
        ms = elapsed() * 1000
    if done.returncode != 0:
        raise RuntimeError(f"memsync search exited {done.returncode}: {done.stderr[-1000:]}")
    reply = json.loads(done.stdout)
    if reply.get("via") != "daemon":
        raise RuntimeError(f"the search did not go through the daemon: {reply.get('via')}")
    return [(r["sourceId"], float(r["score"])) for r in reply["results"]], ms


@dataclass(slots=True)
class Indexed:
    site: SiteFiles
    keys: dict[str, str]  # AgentDB row id -> key
    sync_index_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def index(root: Path, planned: Sequence[Planned]) -> Indexed:
    """A site on the embedded hub with the default settings; its AgentDB file written, then synced
    and indexed by ``memsync sync --wait --searchable`` (timed)."""
    site = make_site(root)
    keys = write_agentdb(site.agentdb, planned)
    argv = [str(MEMSYNC), "sync", "--wait", "--searchable", "--timeout", "3600", "--config", str(site.config)]
    with stopwatch() as elapsed:
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        seconds = elapsed()
    if done.returncode != 0:
        raise RuntimeError(f"memsync sync exited {done.returncode}: {done.stderr[-2000:]}")
    return Indexed(site, keys, seconds)


def run_locomo(
    conversations: Sequence[Conversation], questions: Sequence[Question], modes: Sequence[str], now: float
) -> list[dict[str, Any]]:
    planned = [p for conv in conversations for p in plan_conversation(conv, now)]
    with workdir("recall-locomo") as root:
        progress(f"recall: writing {len(planned)} turns into an AgentDB file, then memsync sync")
        indexed = index(root, planned)
        progress(f"  synced and indexed in {indexed.sync_index_s:.0f} s")
        with DaemonProcess(indexed.site) as daemon:
            wait_indexed(indexed.site, daemon, timeout=600)
            search(indexed.site, questions[0].text, "default", DEPTH, questions[0].conversation)  # model loaded
            records: list[dict[str, Any]] = [
                {"corpus": "locomo", "part": "index", "episodes": len(planned), "sync_index_s": indexed.sync_index_s}
            ]
            for mode in modes:
                progress(f"recall: {len(questions)} LoCoMo questions, mode {mode}")
                answers = []
                for q in questions:
                    hits, ms = search(indexed.site, q.text, mode, DEPTH, q.conversation)
                    answers.append(Answered(q, tuple(indexed.keys[source] for source, _ in hits), ms))
                records.append(locomo_record(mode, answers))
                progress(f"  {describe_run(records[-1])}")
    return records


def run_labelled(modes: Sequence[str], now: float) -> list[dict[str, Any]]:
    episodes, queries = load_labelled()
    with workdir("recall-labelled") as root:
        progress(f"recall: the labelled set, {len(episodes)} episodes, {len(queries)} queries")
        indexed = index(root, plan_labelled(episodes, now))
        records = []
        with DaemonProcess(indexed.site) as daemon:
            wait_indexed(indexed.site, daemon, timeout=600)
            search(indexed.site, queries[0].text, "default", LABELLED_TOP, None)
            for mode in modes:
                ranked = {}
                for q in queries:
                    hits, _ = search(indexed.site, q.text, mode, LABELLED_TOP, None)
                    ranked[q.id] = shared_rank([(indexed.keys[s], score) for s, score in hits], q.relevant)
                records.append(labelled_record(mode, ranked, queries))
                progress(f"  {describe_run(records[-1])}")
    return records


# -- the benchmark -----------------------------------------------------------------------------------
def describe_run(r: dict[str, Any]) -> str:
    if r["corpus"] == "locomo" and r.get("part") == "index":
        return f"LoCoMo: {r['episodes']} turns synced and indexed in {r['sync_index_s']:.0f} s"
    if r["corpus"] == "locomo":
        recall = "/".join(f"{r['recall'][str(k)]:.1f}" for k in KS)
        every = "/".join(f"{r['all'][str(k)]:.1f}" for k in KS)
        return (
            f"LoCoMo {r['mode']}: R@{'/'.join(map(str, KS))} {recall} (all evidence {every}) over "
            f"{r['questions']} questions, CLI p50 {r['p50_ms']:.0f} / p99 {r['p99_ms']:.0f} ms"
        )
    found = "/".join(str(v) for v in r["found"].values())
    return (
        f"labelled {r['mode']}: MRR@{LABELLED_TOP} {r['mrr']:.3f} (identifiers {r['mrr_identifier']:.3f}, "
        f"paraphrases {r['mrr_paraphrase']:.3f}), found within 1/3/10 {found} of {r['queries']}"
    )


def figures(records: Sequence[dict[str, Any]]) -> list[Figure]:
    out: list[Figure] = []
    for r in records:
        if r["corpus"] == "locomo" and r.get("part") == "index":
            out.append(Figure(f"LoCoMo: sync and index {r['episodes']} turns", r["sync_index_s"], "s"))
        elif r["corpus"] == "locomo":
            for k in KS:
                label = f"LoCoMo R@{k} ({r['mode']})"
                value = r["recall"][str(k)]
                out.append(
                    at_least(label, value, "%", PAPER_DRAGON[k])
                    if r["mode"] == "default"
                    else Figure(label, value, "%")
                )
            label = f"LoCoMo search CLI p50 ({r['mode']})"
            out.append(
                at_most(label, r["p50_ms"], "ms", TARGET_CLI_P50_MS)
                if r["mode"] == "default"
                else Figure(label, r["p50_ms"], "ms")
            )
        else:
            out.append(Figure(f"labelled set MRR@{LABELLED_TOP} ({r['mode']})", r["mrr"], ""))
    locomo = [r for r in records if r["corpus"] == "locomo" and "mode" in r]
    if {"default", "bm25", "dense"} <= {r["mode"] for r in locomo}:
        label = "LoCoMo: (conversation, k) where the default is below BM25 or dense alone"
        out.append(at_most(label, len(below_alone(locomo)), "", 0))
    return out


def below_alone(locomo: Sequence[Mapping[str, Any]]) -> list[str]:
    """Where the default falls below BM25 or dense alone, per conversation and k: "conversation 30
    R@10: default 68.8 < bm25 69.4" (empty: nowhere; needs those modes' records)."""
    by_mode = {r["mode"]: r.get("by_conversation", {}) for r in locomo}
    default = by_mode.get("default", {})
    out = []
    for c, mine in default.items():
        for alone in ("bm25", "dense"):
            theirs = by_mode.get(alone, {}).get(c)
            if theirs is None:
                continue
            for k in KS:
                ours, other = mine["recall"][str(k)], theirs["recall"][str(k)]
                if ours < other:
                    out.append(f"conversation {c} R@{k}: default {ours:.1f} < {alone} {other:.1f}")
    return out


def tables(records: Sequence[dict[str, Any]]) -> str:
    """Markdown tables of a run: per mode, then per category (the docs quote them)."""
    locomo = [r for r in records if r["corpus"] == "locomo" and "mode" in r]
    head = "| | " + " | ".join(f"R@{k}" for k in KS) + " |\n|---|" + "---|" * len(KS)
    lines = [head]
    for r in locomo:
        lines.append(f"| memsync {r['mode']} | " + " | ".join(f"{r['recall'][str(k)]:.1f}" for k in KS) + " |")
    lines.append("| the paper's Table 3, DRAGON | " + " | ".join(f"{PAPER_DRAGON[k]:.1f}" for k in KS) + " |")
    lines.append("\nAll evidence found (share of questions):\n")
    lines.append(head)
    for r in locomo:
        lines.append(f"| memsync {r['mode']} | " + " | ".join(f"{r['all'][str(k)]:.1f}" for k in KS) + " |")
    for c, name in CATEGORIES.items():
        mine = [(r["mode"], r["by_category"][str(c)]) for r in locomo if str(c) in r["by_category"]]
        if not mine:
            continue
        lines.append(f"\nCategory {c}, {name} ({mine[0][1]['questions']} questions):\n")
        lines.append(head)
        for mode, t in mine:
            lines.append(f"| {mode} | " + " | ".join(f"{t['recall'][str(k)]:.1f}" for k in KS) + " |")
    conversations = sorted({c for r in locomo for c in r.get("by_conversation", {})})
    if len(conversations) > 1:
        lines.append("\nEach conversation (the issue's bar: the default at least BM25 and dense alone at every k):\n")
        lines.append("| conversation (questions) | mode | " + " | ".join(f"R@{k}" for k in KS) + " |")
        lines.append("|---|---|" + "---|" * len(KS))
        for c in conversations:
            for r in locomo:
                t = r["by_conversation"][c]
                cells = " | ".join(f"{t['recall'][str(k)]:.1f}" for k in KS)
                lines.append(f"| {c} ({t['questions']}) | {r['mode']} | {cells} |")
        short = below_alone(locomo)
        lines.append(
            "\n"
            + (
                "; ".join(short)
                if short
                else "The default is at least BM25 and dense alone in every conversation at every k."
            )
        )
    labelled = [r for r in records if r["corpus"] == "labelled"]
    if labelled:
        lines.append(f"\nThe labelled set ({labelled[0]['queries']} queries), MRR@{LABELLED_TOP}:\n")
        lines.append("| mode | all | identifiers | paraphrases | found within 1 / 3 / 10 |\n|---|---|---|---|---|")
        for r in labelled:
            found = " / ".join(str(v) for v in r["found"].values())
            lines.append(
                f"| {r['mode']} | {r['mrr']:.3f} | {r['mrr_identifier']:.3f} | {r['mrr_paraphrase']:.3f} | {found} |"
            )
    return "\n".join(lines)


def run(
    locomo: Path | None = None,
    modes: Sequence[str] = MODES,
    limit_questions: int | None = None,
    conversations: Sequence[str] | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """``now``: the clock the episodes' times are set from (the daemon decays by its own clock, so
    a reproducible run passes the real time, the default; a test passes its own)."""
    as_installed()
    now = time.time() if now is None else now
    records: list[dict[str, Any]] = []
    params: dict[str, Any] = {"modes": list(modes), "depth": DEPTH}
    with stopwatch() as total:
        if locomo is not None:
            convs = load_locomo(locomo, conversations)
            questions = [q for c in convs for q in c.questions][:limit_questions]
            params |= {
                "locomo": locomo.name,
                "conversations": [c.name for c in convs],
                "questions": len(questions),
                "dropped_evidence": sum(c.dropped_evidence for c in convs),
            }
            records += run_locomo(convs, questions, modes, now)
        records += run_labelled(modes, now)
        params["seconds"] = round(total())
    return result("recall", params, records, figures(records))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "locomo",
        nargs="?",
        type=Path,
        help="LoCoMo's data/locomo10.json (https://github.com/snap-research/locomo; not downloaded here) or a "
        "folder of its conversations, one JSON file each; without it, only the labelled set is measured",
    )
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES), help="default is hybrid, no --mode")
    parser.add_argument("--limit-questions", type=int, metavar="N", help="only the first N questions (quick runs)")
    parser.add_argument("--conversations", nargs="+", metavar="NAME", help="only these conversations (file stems)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the result here")
    parser.add_argument(
        "--older-by",
        type=float,
        default=0.0,
        metavar="DAYS",
        help="set every episode's time this many days further back (the newest then began DAYS days and an hour "
        "ago): how much the recency decay weighs in the figures",
    )
    args = parser.parse_args()
    if args.limit_questions is not None and args.limit_questions < 1:
        parser.exit(2, "recall: --limit-questions must be 1 or more\n")
    if args.locomo is not None:
        try:
            # Say what is wrong with the data before any work.
            if not any(c.questions for c in load_locomo(args.locomo, args.conversations)):
                parser.exit(2, f"recall: {args.locomo} has no question of categories 1-4 with evidence\n")
        except (KeyError, TypeError, json.JSONDecodeError) as exc:
            parser.exit(
                2, f"recall: {args.locomo} is not in LoCoMo's format ({type(exc).__name__}: {exc}); see --help\n"
            )
        except ValueError as exc:
            parser.exit(2, f"recall: {exc}\n")
    now = time.time() - args.older_by * 86400
    res = run(args.locomo, args.modes, args.limit_questions, args.conversations, now)
    res["params"]["older_by_days"] = args.older_by
    emit(res)
    print(tables(res["runs"]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
