"""What memsync does for a person or an agent, as plain functions that the CLI (``daemon/cli``),
the MCP server (``daemon/mcp``) and any other front end call alike. One module per use case, in two
rooms. ``memory``, about the memories:

- ``context``: the memories for a task or a prompt, from the running daemon
- ``remember``: a memory saved into the site's journal, unless the site has it already
- ``related``: a memory's neighbours, each with why
- ``export``: the backbone's episodes, hot and archived, oldest first
- ``forget``: find the episodes holding a text (the plan), and forget episodes everywhere they reach
- ``uses``: noting that memories were handed to or opened by an agent (light: the hook's)
- ``pins``: pinning a memory; memories' use and salience
- ``dream``: the dream cycle (fold, supersede, record) and undoing one of its steps

``fleet``, about the fleet and its people:

- ``status``: one site's health, gathered from its files, the backbone and the search index; and
  the fleet's, as the backbone's registry holds it
- ``jobs``: the periodic jobs as they stand, running one now, the daily digest
- ``approvals``: ask a person, wait for the decision, decide one
- ``tasks``: one task with its approval; changing a task
- ``adopt``: take over (or give back) a Convex deployment the seed design filled

A use case takes the settings or the parts it works on (a backbone opened with
``daemon.site.opened_backbone``, the server's duties), plain arguments and, where time matters,
the clock; it returns a dataclass (or the backbone's own documents) and raises memsync's errors
(``sync.errors``; ``ValueError`` for arguments that cannot be, ``LookupError`` for an id that
names nothing). It never parses arguments, prints or exits: the front end does, and maps the
errors to its own words and exit codes. Searching is the search index's own
(``daemon.search_worker.recall``: through the daemon, or in this process).

These ``__init__`` files import nothing: ``memory.context`` is on the light path of an agent's hook.
"""
