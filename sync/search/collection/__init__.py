"""A collection's life: which physical collection serves the configured name, what a crash must
not lose, and when to purge, rebuild or wait.

- ``lifecycle``: the decisions for one site's collection (pure).
- ``cursor``: the feed position each collection reached and the promises a crash must keep.
- ``shared_alias``: the decisions for a Qdrant every site shares through one alias (pure).
- ``shared_pointer``: applies them with the server's aliases.
"""
