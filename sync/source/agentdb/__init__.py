"""An AgentDB file as a source: its reader (``reader``), the raw digests that spare a re-check the
rows that did not move (``digests``)."""
