"""``memsync mcp``: memsync's memory as an MCP server (``daemon.mcp.server``), over stdio for agents
that spawn it (the default), or streamable HTTP on 127.0.0.1 with a bearer token (``--http``).

It must be ready within a second, before a client's start-up timeout: this module imports nothing
heavy, the SDK is imported once the arguments and settings are known, and no model is ever loaded
here (the daemon answers searches).
"""

from __future__ import annotations

import argparse
import sys

from daemon.cli.common import EX_USAGE, Commands, add_config, fail, handled, load
from sync.errors import EX_CONFIG


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "mcp",
        help="serve memory to agents as MCP tools (stdio; --http for 127.0.0.1 with a token)",
        description="An MCP server with ten tools: search_memory, get_episode, related, recent_activity, "
        "save_memory, memory_health, request_approval, wait_for_approval, pin_memory, undo_dream_step. Searches "
        "go through the running daemon (or this process without one). Over stdio "
        "by default; --http serves streamable HTTP on 127.0.0.1, requiring the bearer token MEMSYNC_MCP__TOKEN.",
    )
    add_config(parser)
    parser.add_argument("--http", action="store_true", help="streamable HTTP on 127.0.0.1 instead of stdio")
    parser.add_argument("--port", type=int, metavar="N", help="the HTTP port (default: mcp.port, 8765)")
    parser.set_defaults(run=main)


def main(args: argparse.Namespace) -> int:
    from daemon import logs

    with handled():
        settings = load(args, log_level="warning")
        token = settings.mcp.token.get_secret_value() if settings.mcp.token is not None else ""
        if args.port is not None and not args.http:
            fail("--port is for --http: add --http, or leave out --port", EX_USAGE)
        if args.http and not token:
            fail(
                "memsync mcp --http needs a bearer token: set MEMSYNC_MCP__TOKEN in the environment or the .env "
                "file beside the config",
                EX_CONFIG,
            )
        if token:
            logs.register_secrets([token])
    from daemon.mcp.server import build_server

    server = build_server(settings)
    try:
        if args.http:
            from daemon.mcp.http import serve_http

            port = args.port if args.port is not None else settings.mcp.port
            sys.stderr.write(f"memsync mcp: serving http://127.0.0.1:{port}/mcp\n")
            serve_http(server, token, port)
        else:
            server.run("stdio")
    except KeyboardInterrupt:
        return 0
    return 0
