"""The hub's memory roles: episodes and their feed, the cold archive, links, uses, the dream's records."""
