"""The scheduler: the backbone's periodic jobs, mirrored by every site's daemon.

``plan`` decides (which jobs exist, when they fire, which slot a fire belongs to, where a job runs,
whether a lease may be taken): pure, tested from tables. ``jobs`` are the bodies, each against the
backbone's coordination role. ``worker`` is the thin APScheduler layer that fires them.
"""
