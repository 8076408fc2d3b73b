"""The scheduler's pure rules: which jobs exist, when each fires by default and where it runs
(``job_table``, which the settings read), and which slot a fire belongs to and what day a run works
for (``plan``). Import-free of the scheduler's I/O, which takes the settings, so that the settings
and the job bodies (``daemon/hubserver``) may read them (tests/test_import_graph.py)."""
