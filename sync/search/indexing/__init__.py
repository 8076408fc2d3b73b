"""The backbone's change feed into points in the vector store.

- ``text``: an episode's text, its hash, and its cut into passages that fit the model's window.
- ``indexer``: ``Indexer``, a page of the feed decided, embedded and written.
- ``rebuilder``: a fresh collection filled from the feed, switched to, the old one retired.
- ``lag``: how many episodes the index is behind the feed.
"""
