"""The cold archive: old episodes' bodies in compressed JSON Lines, one file per site and week."""
