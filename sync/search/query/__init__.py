"""A query into ranked episodes, and episodes read without one.

- ``pipeline``: ``search``: embed, prefetch, rank the pool, decay, group passages, collapse, judge.
- ``ranking/``: how a pool is ordered: the learned ranking, the fusion, decay/collapse/MMR, rerank.
- ``judgement``: why each result ranked and how relevant it is (``relevance_model.json``).
- ``presence``: the identifiers a query names that no memory holds.
- ``query_time``: the times a query names; ``hops``: a query's second hop through what it found.
- ``browse``: recent episodes and one episode with its session's neighbours, no query.
- ``results_text``: results as text for people, and the ``--since`` moment.
"""
