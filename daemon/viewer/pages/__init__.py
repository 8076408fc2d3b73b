"""The viewer's pages, each rendered from a use case's result: pure functions to HTML."""
