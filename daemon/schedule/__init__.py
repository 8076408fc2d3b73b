"""The scheduler: the backbone's periodic jobs, mirrored by every site's daemon.

``policy.job_table`` says which jobs exist, when they fire by default and where they run; ``plan``
decides which slot a fire belongs to and whether a lease may be taken: both pure, tested from
tables. ``worker`` is the thin APScheduler layer that fires the bodies (``daemon/hubserver``), each
against the backbone's coordination role; ``beats`` heartbeats the registry.
"""
