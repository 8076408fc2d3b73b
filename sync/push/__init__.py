"""Pushing a site's episodes: the engine's pass (``engine``), its pure decisions (``plan``), the
site's own ledger beside the source (``sidecar``), the agents its episodes name (``agents``) and
the site's claim on its name, one site one source (``claim``)."""
