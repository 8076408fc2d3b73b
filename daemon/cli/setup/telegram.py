"""``memsync telegram check|webhook``: set up the bot. ``check`` asks Telegram who the bot is and,
with ``--send``, sends a test message to the chat; ``webhook`` registers the Convex deployment's
``/telegram`` HTTP action as the bot's webhook (on Convex, button presses arrive there), or removes
it (on the embedded hub, a daemon polls for them instead, which a webhook would block)."""

from __future__ import annotations

import argparse

from daemon.cli.common import Commands, add_config, fail, handled, load, say
from sync.errors import EX_CONFIG


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "telegram",
        help="check the bot, or register the Convex webhook for button presses",
        description="Set up Telegram: check the bot token and chat, register or remove the webhook.",
    )
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    check = actions.add_parser("check", help="ask Telegram who the bot is; --send sends a test message")
    add_config(check)
    check.add_argument("--send", action="store_true", help="send a test message to telegram.chat_id")
    check.set_defaults(run=check_main)
    hook = actions.add_parser(
        "webhook",
        help="register URL (https://<deployment>.convex.site/telegram) as the bot's webhook, or --delete it",
        description="Register the Convex deployment's /telegram HTTP action as the bot's webhook, with the "
        "secret from MEMSYNC_TELEGRAM__WEBHOOK_SECRET (set the same value as TELEGRAM_WEBHOOK_SECRET in the "
        "deployment's environment); --delete removes it.",
    )
    add_config(hook)
    hook.add_argument("--url", help="the deployment's HTTP actions URL ending in /telegram")
    hook.add_argument("--delete", action="store_true", help="remove the webhook (the embedded hub polls instead)")
    hook.set_defaults(run=webhook_main)


def _token(args: argparse.Namespace) -> tuple[str, str, str | None]:
    settings = load(args, log_level="error")
    telegram = settings.telegram
    if telegram.bot_token is None or not telegram.bot_token.get_secret_value():
        fail("no bot token: set MEMSYNC_TELEGRAM__BOT_TOKEN in the environment or a .env file", EX_CONFIG)
    secret = None if telegram.webhook_secret is None else telegram.webhook_secret.get_secret_value()
    return telegram.bot_token.get_secret_value(), telegram.api_base, secret


def check_main(args: argparse.Namespace) -> int:
    from daemon.telegram.client import BotApi

    with handled():
        token, base, _secret = _token(args)
        settings = load(args, log_level="error")
        with BotApi(token, base) as bot:
            me = bot.get_me()
            say(f"bot @{me.get('username')} answers at {base}")
            if args.send:
                if not settings.telegram.chat_id:
                    fail("--send needs telegram.chat_id in the config", EX_CONFIG)
                bot.send_message(settings.telegram.chat_id, f"memsync on {settings.site.name} can reach this chat")
                say(f"test message sent to chat {settings.telegram.chat_id}")
    return 0


def webhook_main(args: argparse.Namespace) -> int:
    from daemon.telegram.client import BotApi

    with handled():
        token, base, secret = _token(args)
        with BotApi(token, base) as bot:
            if args.delete:
                bot.delete_webhook()
                say("webhook removed: a daemon on the embedded hub can poll for button presses")
                return 0
            if not args.url or not args.url.startswith("https://"):
                fail("give --url https://<deployment>.convex.site/telegram (Telegram calls only https)", EX_CONFIG)
            if not secret:
                fail(
                    "set MEMSYNC_TELEGRAM__WEBHOOK_SECRET (environment or .env), and the same value as "
                    "TELEGRAM_WEBHOOK_SECRET in the deployment (npx convex env set TELEGRAM_WEBHOOK_SECRET ...)",
                    EX_CONFIG,
                )
            bot.set_webhook(args.url, secret)
            say(f"webhook set: Telegram sends button presses to {args.url}")
    return 0
