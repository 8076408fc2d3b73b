"""Telegram: the bot that sends alerts and approval requests with buttons, and hears the presses;
who hears what and who may decide is its ``policy``."""
