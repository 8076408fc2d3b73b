"""The command reference, as Markdown, from an ``argparse`` parser: every command and subcommand
in the parser's order, its help and description, its usage and each option with its help.

Pure: the parser is an argument (``daemon.cli.app.parser()`` for memsync's), and nothing here reads
the environment, so the text is the same on every machine. An option's default is not printed:
the help text says it where it matters, and a default taken from the environment (``-c``'s
``$MEMSYNC_CONFIG``) would make the reference differ from one shell to the next."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

WIDTH = 100  # the usage lines' width, fixed so that the text is the same on any terminal
INTRO = """\
Every command and subcommand with its options, written from the CLI's own parser
(`daemon/docs/commands.py`, `make docs`; `memsync docs commands` prints the same). Edits here are
overwritten; a test fails when this file and the parser disagree.

`memsync COMMAND --help` prints the same for one command. Most commands take the site's config
with `-c FILE` (or `MEMSYNC_CONFIG`); the configuration reference is `docs/reference/configuration.md`
(`memsync docs configuration`).
"""


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.HelpFormatter(prog, width=WIDTH, max_help_position=WIDTH)


def _usage(parser: argparse.ArgumentParser) -> str:
    formatter = _formatter(parser.prog)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups, prefix="")
    return formatter.format_help().strip()


def _subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """Each subcommand (name, one-line help, parser), in the order the parser lists them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name, ""), sub


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _options(parser: argparse.ArgumentParser) -> list[str]:
    formatter = _formatter(parser.prog)
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) or action.help == argparse.SUPPRESS:
            continue
        invocation = formatter._format_action_invocation(action)
        meaning = formatter._expand_help(action) if action.help else ""
        if action.required and action.option_strings:
            meaning = f"(required) {meaning}"
        rows.append(f"| `{_cell(invocation)}` | {_cell(meaning)} |")
    return ["| argument | meaning |", "| --- | --- |", *rows] if rows else []


def _section(parser: argparse.ArgumentParser, summary: str, depth: int) -> list[str]:
    lines = [f"{'#' * depth} {parser.prog}", ""]
    if summary:
        lines += [summary[0].upper() + summary[1:] + ("" if summary.endswith(".") else "."), ""]
    if parser.description and parser.description != summary:
        lines += [parser.description, ""]
    lines += ["```", _usage(parser), "```", ""]
    options = _options(parser)
    if options:
        lines += [*options, ""]
    subs = list(_subcommands(parser))
    if subs:
        lines += [f"- `{sub.prog}`: {help_}" for _name, help_, sub in subs] + [""]
        for _name, help_, sub in subs:
            lines += _section(sub, help_, depth + 1)
    if parser.epilog and depth > 1:
        lines += [parser.epilog, ""]
    return lines


def render(parser: argparse.ArgumentParser) -> str:
    """The whole reference: the program, then each command (``##``) and subcommand (``###``)."""
    lines = ["# Command reference", "", INTRO]
    if parser.description:
        lines += [f"`{parser.prog}`: {parser.description}", ""]
    lines += ["```", _usage(parser), "```", ""]
    lines += [*_options(parser), ""]
    if parser.epilog:
        lines += [parser.epilog, ""]
    commands = list(_subcommands(parser))
    lines += ["| command | what it does |", "| --- | --- |"]
    lines += [f"| [`{sub.prog}`](#{_anchor(sub.prog)}) | {_cell(help_)} |" for _name, help_, sub in commands]
    lines.append("")
    for _name, help_, sub in commands:
        lines += _section(sub, help_, 2)
    return "\n".join(lines).rstrip() + "\n"


def _anchor(heading: str) -> str:
    """The anchor a Markdown renderer (GitHub's) gives a heading: lower case, spaces to dashes."""
    return "".join(c for c in heading.lower().replace(" ", "-") if c.isalnum() or c in "-_")
