"""Telegram: the bot that sends alerts and approval requests with buttons, and hears the presses."""
