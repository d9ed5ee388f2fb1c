"""One user error, one line: what every ``udora`` command prints instead of a traceback."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.console import Console


def usage_error(err: Exception | str) -> None:
    """Print a user error as one unwrapped line on stderr and exit 2 (no traceback)."""
    Console(stderr=True).print(f"error: {err}", highlight=False, markup=False, soft_wrap=True)
    raise typer.Exit(2)


def os_error_line(err: OSError) -> tuple[int, str]:
    """(exit code, one line) for a file-system error reaching the command line: 2 for a
    path the user chose that cannot be used (not a folder, no permission, exists), 1 for
    the machine's (a full disk, an I/O error)."""
    import errno

    where = f"{err.filename}: " if err.filename else ""
    what = err.strerror or str(err)
    theirs = (
        errno.EACCES,
        errno.EPERM,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.EEXIST,
        errno.EROFS,
        errno.ENOENT,
    )
    mine = err.errno is None  # raised by udora with its own message (a folder with no runs)
    return (2 if mine or err.errno in theirs else 1), f"error: {where}{what}"


@contextmanager
def user_errors(console: Console, interrupted: str = "interrupted") -> Iterator[None]:
    """The body of a command: a bad argument, unknown name or held lock (``ValueError``,
    ``KeyError``, ``LockHeldError``) is one line and exit 2; a Ctrl-C that reaches here
    (a grid handles its own first) prints ``interrupted`` and exits 130."""
    from udora.experiments.grid.lock import LockHeldError
    from udora.experiments.run import interrupts

    try:
        yield
    except (ValueError, KeyError, LockHeldError) as err:
        usage_error(err.args[0] if isinstance(err, KeyError) and err.args else err)
    except OSError as err:
        code, line = os_error_line(err)
        Console(stderr=True).print(line, highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(code) from None
    except KeyboardInterrupt:
        interrupts.ignore_from_now()
        console.print(interrupted, highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(interrupts.exit_code()) from None
