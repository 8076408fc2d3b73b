"""How a query's pool is ordered, each decision pure: the learned ranking the search uses by
default (``learned``, with its model ``rerank_model`` and the shipped weights
``rerank_model.json``), the hand-weighted fusion of the dense and BM25 lists (``fusion``), recency
decay, near-duplicate collapse and MMR (``rank``), and the optional Voyage cross-encoder (``rerank``).
"""
