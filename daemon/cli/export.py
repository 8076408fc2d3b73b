"""``memsync export``: the backbone's episodes as JSON lines; ``--archived`` adds those the cleanup
job moved to the cold archive."""

from __future__ import annotations

import argparse
import json
import sys
from itertools import chain

from daemon.cli.common import Commands, add_config, fail, handled, load


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "export",
        help="the backbone's episodes as JSON lines on stdout",
        description="The backbone's episodes as JSON lines on stdout, oldest first, in the backbone's "
        "camelCase fields (the same names `search --json` uses).",
    )
    add_config(parser)
    parser.add_argument("--site", metavar="SITE", help="only this site's episodes (default: every site)")
    parser.add_argument(
        "--archived",
        action="store_true",
        help="also the archived episodes, read from the cold archive, with archived: true (after the hot ones)",
    )
    parser.set_defaults(run=main)


def main(args: argparse.Namespace) -> int:
    from daemon.paths import exists
    from daemon.site import open_backbone

    with handled():
        settings = load(args, log_level="error")
        if settings.backbone.kind == "local" and not exists(settings.hub_path, "backbone.path"):
            fail(
                f"the hub {settings.hub_path} does not exist yet: nothing has been synced to it "
                f"(run `memsync sync` or `memsync run` first)",
                1,
            )
        backbone = open_backbone(settings, create=False)
        written = 0
        try:
            write = sys.stdout.write
            episodes = backbone.episodes(args.site)
            for episode in chain(episodes, backbone.archived_episodes(args.site)) if args.archived else episodes:
                write(json.dumps(episode, ensure_ascii=False) + "\n")
                written += 1
        except BrokenPipeError:  # `memsync export | head` is fine
            sys.stderr.close()
            return 0
        finally:
            backbone.close()
        if written == 0 and args.site is not None:
            fail(f"no episodes from site {args.site!r} in {backbone.description}", 1)
        return 0
