"""The commands about the episodes the backbone holds: ``export`` them, ``forget`` them for good,
their cold ``archive``, ``adopt`` the seed design's, and the rows that never became one
(``quarantine``)."""
