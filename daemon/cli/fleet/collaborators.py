"""``memsync collaborators list|sync``: the people memsync speaks to in their own Telegram chats
(``[[collaborators]]`` in the config: ``daemon/telegram/policy/routing.py`` says what each hears and who may
decide approvals). The config is the one source of truth: the embedded hub's sites read it as they
start; ``sync`` pushes it to a Convex deployment's ``collaborators`` table with the operator's
deploy key (``CONVEX_DEPLOY_KEY`` in the shell), which then holds exactly that list."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from daemon.cli.common import Commands, add_config, add_json, handled, load, say

if TYPE_CHECKING:
    from daemon.config import Collaborator


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "collaborators",
        help="the people memsync tells in their own Telegram chats: list them, or push them to Convex",
        description="List the config's [[collaborators]], or push them to the Convex deployment's collaborators "
        "table (sync; needs CONVEX_DEPLOY_KEY in the shell).",
    )
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="the config's collaborators: their chat, permissions and notify_on")
    add_config(listing)
    add_json(listing)
    listing.set_defaults(run=list_main)
    push = actions.add_parser(
        "sync",
        help="make the Convex deployment's collaborators the config's (CONVEX_DEPLOY_KEY)",
        description="Replace the Convex deployment's collaborators table with the config's [[collaborators]] "
        "(with the deploy key in CONVEX_DEPLOY_KEY). On the embedded hub there is nothing to push.",
    )
    add_config(push)
    push.set_defaults(run=sync_main)


def as_stored(person: Collaborator) -> dict[str, Any]:
    """A collaborator as Convex's ``collaborators`` table holds them."""
    row: dict[str, Any] = {
        "name": person.name,
        "role": person.role,
        "telegramChatId": person.chat_id,
        "permissions": list(person.permissions),
        "notifyOn": list(person.notify_on),
    }
    if person.user_id is not None:
        row["telegramUserId"] = person.user_id
    return row


def list_main(args: argparse.Namespace) -> int:
    with handled():
        settings = load(args, log_level="error")
        rows = [as_stored(p) for p in settings.collaborators]
        if args.as_json:
            print(json.dumps(rows, ensure_ascii=False))
            return 0
        if not rows:
            say("no [[collaborators]] in the config: everything goes to telegram.chat_id alone")
        for p in settings.collaborators:
            role = f" ({p.role})" if p.role else ""
            print(
                f"{p.name}{role}: chat {p.chat_id}; may {', '.join(p.permissions) or 'not decide approvals'}; "
                f"hears {', '.join(p.notify_on) or 'nothing'}"
            )
    return 0


def sync_main(args: argparse.Namespace) -> int:
    from daemon.site import duties_of, opened_backbone

    with handled():
        settings = load(args, log_level="error")
        with opened_backbone(settings) as backbone:
            say(duties_of(settings, backbone).sync_collaborators([as_stored(p) for p in settings.collaborators]))
    return 0
