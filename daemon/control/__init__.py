"""How other processes reach a site's running daemon: the site lock says which process holds the
site (``lock.py``), the control socket asks it (``server.py`` serves; ``client.py``'s
``ControlClient`` asks, one typed method per op, light enough for the hooks' paths)."""
