"""Texts to vectors. Dense: one narrow interface (``base.Embedder``), three models (``local``,
``gemini``, ``voyage``; the cloud ones share ``cloud``), and ``lazy``, which loads a model on first
use and lets it go when idle. Sparse: ``bm25``, Qdrant's BM25 computed here (``_unicode`` holds the
tables that make Python's tokenizer agree with the engine's)."""
