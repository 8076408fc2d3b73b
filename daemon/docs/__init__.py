"""memsync's documentation written from its own code, and the guides shipped with it.

``commands.render(parser)`` is the command reference, from the parser it is given (the CLI's own,
so every option and help text there is what ``--help`` prints); ``configuration.render()`` is the
configuration reference, from the settings models' fields and their descriptions; ``guides`` finds
the Markdown guides in a checkout or where an install put them. ``memsync docs`` prints them, and
``make docs`` writes the two references into ``docs/reference/`` (tests/test_docs_reference.py
fails when a file there and its code disagree)."""
