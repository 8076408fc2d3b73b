"""The commands about the fleet: how this site and every other is doing (``status``, ``agents``),
the periodic jobs and the digest (``jobs``, ``digest``), and what people decide (``approval``,
``approvals``, ``tasks``, ``collaborators``)."""
