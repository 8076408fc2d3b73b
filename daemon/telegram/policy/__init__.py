"""Telegram's pure rules that the settings read: which chats hear what, and who may decide an
approval (``routing``). Import-free of the bot's I/O, which takes the settings
(tests/test_import_graph.py)."""
