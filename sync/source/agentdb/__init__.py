"""An AgentDB file as a source: its reader (``reader``), what one of its rows becomes (``rows``:
an episode, or a rejection naming the problem) and the raw digests that spare a re-check the rows
that did not move (``digests``)."""
