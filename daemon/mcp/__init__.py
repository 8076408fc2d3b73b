"""``memsync mcp``: memsync's memory as an MCP server's tools, answered through the daemon."""
