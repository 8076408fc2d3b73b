"""``memsync dream [--dry-run]``, ``memsync dream steps`` and ``memsync unmerge ID``: the dream cycle
by hand, what it did, and undoing a step (``daemon.usecases.memory.dream``)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from daemon.cli.common import EX_USAGE, Commands, add_config, add_json, fail, handled, load, say
from sync.backbone.dreams import DreamStep, key_text


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "dream",
        help="fold near-duplicate memories and supersede changed values now (the nightly dream job); never deletes",
        description="Runs the dream job now (as `memsync jobs run dream`: once across sites, recorded): folds "
        "near-duplicates (alike in meaning and naming the same identifiers and numbers) into their best memory, "
        "and marks a value a newer memory changed as superseded. Members and superseded memories stay, hidden "
        "from the context block and default results; `memsync unmerge ID` undoes a step.",
    )
    add_config(parser)
    parser.add_argument("--dry-run", action="store_true", help="show what it would do, and change nothing")
    add_json(parser)
    parser.set_defaults(run=dream_main)
    actions = parser.add_subparsers(title="actions", metavar="ACTION")
    steps = actions.add_parser(
        "steps", help="the steps the dream took, newest first, standing or undone", description="Every dream step."
    )
    add_config(steps)
    steps.add_argument("--standing", action="store_true", help="only the steps not undone")
    steps.add_argument(
        "--memory",
        metavar="ID",
        help="only the steps that name this memory (SITE:ID or SITE#ID), as what it consolidated or what folded it",
    )
    add_json(steps)
    steps.set_defaults(run=steps_main)

    unmerge = commands.add_parser(
        "unmerge",
        help="undo one dream step exactly: its members are shown again, its links go, the record stays",
        description="Undoes a dream step (an id from `memsync dream steps`): the memories it hid are shown "
        "again everywhere, its links go, and later nights never put those memories together again.",
    )
    unmerge.add_argument("step", metavar="ID", help="the step's id (`memsync dream steps`)")
    add_config(unmerge)
    add_json(unmerge)
    unmerge.set_defaults(run=unmerge_main)


def step_json(step: DreamStep) -> dict[str, Any]:
    return {
        "id": step.step_id,
        "kind": step.kind,
        "canonical": key_text(step.canonical),
        "members": [key_text(m) for m in step.members],
        "at": step.at,
        "run": step.run,
        "reason": step.reason,
        "undoneAt": step.undone_at,
        "undoneBy": step.undone_by,
    }


def _line(step: DreamStep) -> str:
    state = "" if step.standing else f" (undone by {step.undone_by})"
    members = ", ".join(key_text(m) for m in step.members)
    return f"{step.step_id}: {key_text(step.canonical)} {step.kind} {members}: {step.reason}{state}"


def dream_main(args: argparse.Namespace) -> int:
    from daemon.site import opened_backbone
    from daemon.usecases.fleet.jobs import job_named, run_job
    from daemon.usecases.memory.dream import dream_job

    with handled():
        settings = load(args)
        if not args.dry_run:
            done = run_job(settings, job_named(settings, "dream"), now=time.time())
            say(f"dream, slot {done.slot}: {done.outcome}: {done.summary}")
            return 0 if done.ran and done.outcome == "ok" else 1
        with opened_backbone(settings) as backbone:
            night = dream_job(settings, backbone, int(time.time() * 1000), "dry run", dry_run=True)
    if args.as_json:
        out = {
            "summary": night.summary,
            "folds": [
                {
                    "canonical": key_text(f.canonical),
                    "members": [key_text(m) for m in f.members],
                    "cosine": f.cosine_min,
                }
                for f in night.plan.folds
            ],
            "supersedes": [
                {"newer": key_text(s.newer), "older": key_text(s.older), "changed": [list(c) for c in s.changed]}
                for s in night.plan.supersedes
            ],
        }
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
        return 0
    for fold in night.plan.folds:
        say(f"fold into {key_text(fold.canonical)}: {', '.join(key_text(m) for m in fold.members)}")
    for sup in night.plan.supersedes:
        changed = "; ".join(f"{k}: {old} -> {new}" for k, old, new in sup.changed)
        say(f"{key_text(sup.newer)} supersedes {key_text(sup.older)} ({changed})")
    say(night.summary)
    return 0


def steps_main(args: argparse.Namespace) -> int:
    from daemon.site import opened_backbone
    from daemon.usecases.memory.dream import steps
    from daemon.usecases.memory.uses import key_of

    with handled():
        try:
            memory = None if args.memory is None else key_of(args.memory)
        except ValueError as exc:
            fail(f"dream steps: {exc}", EX_USAGE)
        settings = load(args, log_level="error")
        with opened_backbone(settings, create=False) as backbone:
            found = steps(backbone, standing_only=args.standing, memory=memory)  # type: ignore[arg-type]
    if args.as_json:
        sys.stdout.write(json.dumps([step_json(s) for s in found], indent=2) + "\n")
        return 0
    for step in found:
        say(_line(step))
    if not found:
        say("no dream steps yet" if memory is None else f"no dream step names {key_text(memory)}")
    return 0


def unmerge_main(args: argparse.Namespace) -> int:
    import getpass

    from daemon.site import opened_backbone
    from daemon.usecases.memory.dream import unmerge

    with handled():
        settings = load(args, log_level="error")
        with opened_backbone(settings) as backbone:
            step = unmerge(backbone, args.step, by=f"{getpass.getuser()} on {settings.site.name}")  # type: ignore[arg-type]
    if args.as_json:
        sys.stdout.write(json.dumps(step_json(step), indent=2) + "\n")
    else:
        say(f"undone: {_line(step)}")
    return 0
