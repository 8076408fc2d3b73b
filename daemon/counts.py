"""A count and its noun, singular or plural as the count asks ("1 episode", "2 episodes")."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, the noun made plural (``plural``, else an ``s``) unless ``n`` is 1."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


__all__ = ["counted"]
