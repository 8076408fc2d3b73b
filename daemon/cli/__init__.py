"""The ``memsync`` command. This module stays light: ``memsync search`` through a running daemon
is answered by ``daemon.cli.search.fast_search`` without importing the rest of the CLI; every
other command (and any search the light path cannot answer) goes to the full parser
(``daemon.cli.app``), one module per command."""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["search"]:
        from daemon.cli.search import fast_search

        code = fast_search(argv[1:])
        if code is not None:
            sys.exit(code)
    from daemon.cli.app import run_app

    run_app(argv)


__all__ = ["main"]
