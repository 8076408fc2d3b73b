"""The search index's process wiring in the daemon: the worker process that runs the index
(``worker``), the host that starts it when there is work (``host``), the settings made into the
index's parts (``wiring``, ``files``), what the worker answers on the control socket
(``handlers``), a search or reindex routed to the worker or run in this process (``recall``), and
``memsync adopt-collection`` (``adopt``). The index itself is ``sync.search``.
"""
