"""The backbone's change feed into points in the vector store.

- ``text``: an episode's text, its hash, and its cut into passages that fit the model's window.
- ``passages``: an episode as points: its payload, the id its first passage lives under, its passages.
- ``plan``: a page of the feed decided: what to embed, rewrite, mark archived, delete (pure).
- ``seeds``: an adopted collection's seed points, kept rather than embedded again.
- ``copies``: what a rebuild copies from the collection it replaces.
- ``duplicates``: near-duplicate links, within a page and against the store.
- ``indexer``: ``Indexer``, the I/O around those decisions, a page at a time.
- ``rebuilder``: a fresh collection filled from the feed, switched to, the old one retired.
- ``lag``: how many episodes the index is behind the feed.
"""
