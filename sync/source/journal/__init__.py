"""The journal: memories agents save (``memsync remember``, the MCP ``remember`` tool), in a SQLite
file memsync owns under ``data_dir``, a second source of the site beside its AgentDB file."""
