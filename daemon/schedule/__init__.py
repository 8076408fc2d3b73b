"""The scheduler: the backbone's periodic jobs, mirrored by every site's daemon.

``policy`` decides, pure and tested from tables: which jobs exist, when they fire by default and
where they run (``policy.job_table``), which slot a fire belongs to and whether a lease may be
taken (``policy.plan``). ``worker`` is the thin APScheduler layer that fires the bodies
(``daemon/hubserver``), each against the backbone's coordination role; ``beats`` heartbeats the
registry.
"""
