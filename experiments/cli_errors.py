"""One user error, one line: what every ``udora`` command prints instead of a traceback."""

from __future__ import annotations

import typer
from rich.console import Console


def usage_error(err: Exception | str) -> None:
    """Print a user error as one unwrapped line on stderr and exit 2 (no traceback)."""
    Console(stderr=True).print(f"error: {err}", highlight=False, markup=False, soft_wrap=True)
    raise typer.Exit(2)
