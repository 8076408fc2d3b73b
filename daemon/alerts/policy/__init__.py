"""The alerts' pure rules that the settings read: when a warning may go (``quiet_hours``) and the
names of the signals a collaborator may ask for (``signal_names``). They import nothing of the
alerts' I/O, which takes the settings (tests/test_import_graph.py)."""
