"""The commands that run memsync and wire it in: the daemon (``run``) and its ``service``, the
agents' ``hooks``, ``capture`` and ``mcp`` server, the ``telegram`` bot, the ``demo``, and the
guides and references installed with it (``docs``)."""
