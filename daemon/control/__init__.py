"""How other processes reach a site's running daemon: the site lock says which process holds the
site (``lock.py``), the control socket asks it (``server.py`` serves, ``client.py`` asks,
``browse_client.py`` asks for ``recent`` and ``episode`` from light code)."""
