"""Counts in messages: ``1 run``, ``2 runs``."""

from __future__ import annotations


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``"<count> <noun>"``, with ``many`` (default ``noun + "s"``) unless count is 1."""
    return f"{count} {noun if count == 1 else (many or noun + 's')}"
