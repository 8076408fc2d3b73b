"""The fleet's use of its memories, from where a site notes it to the backbone: ``spool`` (noted off the
hot path, standard library only) and ``fold`` (the daemon sends it on)."""
