"""The scheduler's pure rules that the settings read: which jobs exist, when each fires by
default and where it runs (``job_table``). Import-free of the scheduler's I/O, which takes the
settings (tests/test_import_graph.py)."""
