"""``memsync docs [TOPIC]``: the guides and the references, from what is installed. The references
are written from this memsync's own code (its parser, its settings models), so they are true for
the version that prints them; the guides are the Markdown files shipped with it."""

from __future__ import annotations

import argparse
import sys

from daemon.cli.common import EX_USAGE, Commands, fail
from sync.errors import EX_CONFIG

REFERENCES = {
    "commands": "Command reference: every command and option",
    "configuration": "Configuration reference: every key, its default and variable",
}


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "docs",
        help="the guides and the references (commands, configuration), as Markdown",
        description="Without a topic, list the guides and references installed with this memsync; with one, "
        "print it as Markdown (`memsync docs telegram | less`).",
    )
    parser.add_argument("topic", nargs="?", metavar="TOPIC", help="a guide's name, `commands` or `configuration`")
    parser.set_defaults(run=main)


def main(args: argparse.Namespace) -> int:
    from daemon.docs import guides

    folder = guides.folder()
    found = guides.topics(folder) if folder is not None else {}
    if args.topic is None:
        width = max(len(name) for name in [*found, *REFERENCES])
        lines = ["Guides:"] if found else []
        lines += [f"  {name.ljust(width)}  {title}" for name, title in found.items()]
        lines += ["References (from this memsync's code):"]
        lines += [f"  {name.ljust(width)}  {title}" for name, title in REFERENCES.items()]
        lines += ["", "Print one with `memsync docs TOPIC`."]
        lines += [f"The guides' files: {folder}" if folder else "This install has no guides (no docs/guides)."]
        sys.stdout.write("\n".join(lines) + "\n")
        return 0
    if args.topic == "commands":
        from daemon.docs.commands import render

        sys.stdout.write(render(args.memsync_parser))
        return 0
    if args.topic == "configuration":
        from daemon.docs.configuration import render as render_configuration

        sys.stdout.write(render_configuration())
        return 0
    if folder is None:
        fail(f"this install has no guides, so no {args.topic!r}: `memsync docs` lists what it has", EX_CONFIG)
    if args.topic not in found:
        fail(f"no guide named {args.topic!r}: use one of {', '.join([*found, *REFERENCES])}", EX_USAGE)
    sys.stdout.write((folder / f"{args.topic}.md").read_text(encoding="utf-8"))
    return 0
