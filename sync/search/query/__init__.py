"""A query into ranked episodes, and episodes read without one.

- ``pipeline``: ``search``: embed, prefetch, fuse, decay, group passages, collapse, rerank, MMR.
- ``fusion``: the dense and BM25 lists into one ranking (pure).
- ``rank``: recency decay, near-duplicate collapse, MMR (pure).
- ``rerank``: the optional Voyage cross-encoder.
- ``browse``: recent episodes and one episode with its session's neighbours, no query.
- ``results_text``: results as text for people, and the ``--since`` moment.
"""
