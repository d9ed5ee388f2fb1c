"""How a ``udora`` command ends on an error: one line, and an exit code that says whose.

- A user error, :class:`udora.errors.UserError` (the library's type for bad input), prints
  ``error: <message>`` and exits 2.
- A file-system fault prints ``error: <path>: <reason>`` and exits 2 for a path the user
  chose that cannot be used, 1 for the machine's (a full disk).
- Anything else is a bug in udora: one line ``bug: udora <version> ...`` naming a file
  that holds the traceback, and exit 3 (:data:`BUG_EXIT`).

docs/running.md, "Exit codes", lists them with 0, 1 (a run failed) and 130/143.
"""

from __future__ import annotations

import sys
import tempfile
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.console import Console

from udora.errors import UserError

USER_EXIT = 2
BUG_EXIT = 3  # not 1 ("a run failed") nor 2 ("your input")


LONGEST = 2000  # characters of a printed error line; the rest is left out, saying so


def one_line(text: str) -> str:
    """``text`` as one line (its lines joined by "; ") of at most :data:`LONGEST`
    characters: a message that quotes a damaged file (a multi-megabyte column name)
    stays one readable line."""
    text = "; ".join(part.strip() for part in str(text).splitlines() if part.strip())
    if len(text) > LONGEST:
        text = f"{text[: LONGEST - 40]}... ({len(text) - LONGEST + 40} more characters)"
    return text


def print_line(text: str) -> None:
    """``text`` on stderr as one unwrapped line: an error must stay greppable in logs."""
    Console(stderr=True).print(one_line(text), highlight=False, markup=False, soft_wrap=True)


def usage_error(err: Exception | str) -> None:
    """Print a user error as one unwrapped line on stderr and exit 2 (no traceback)."""
    print_line(f"error: {err}")
    raise typer.Exit(USER_EXIT)


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
    return (USER_EXIT if mine or err.errno in theirs else 1), f"error: {where}{what}"


def write_traceback(err: BaseException, folder: str | Path | None = None) -> Path:
    """Write ``err``'s traceback, with udora's version and the command line, to a new file
    ``udora-bug-*.txt`` in ``folder`` (default: the temporary folder, ``$TMPDIR`` or
    ``/tmp``) and return its path."""
    from udora import __version__

    folder = Path(folder) if folder is not None else Path(tempfile.gettempdir())
    text = "".join(traceback.format_exception(err))
    with tempfile.NamedTemporaryFile(
        "w", prefix="udora-bug-", suffix=".txt", dir=folder, delete=False, encoding="utf-8"
    ) as f:
        f.write(f"udora {__version__}, Python {sys.version.split()[0]}\n")
        f.write(f"command: {' '.join(sys.argv)}\n\n{text}")
    return Path(f.name)


def bug_line(err: BaseException, where: Path | None) -> str:
    """The one line a bug prints: what was raised, udora's version, where the traceback is."""
    from udora import __version__

    what = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    what = " ".join(what.split())  # one line, whatever the message holds
    tail = f"the traceback is in {where}" if where else "its traceback follows"
    return f"bug: udora {__version__} failed with {what}; {tail}; please report it"


def report_bug(err: BaseException) -> int:
    """Print the bug line for ``err`` (the traceback in a file it names; on stderr after
    the line when no file can be written) and return :data:`BUG_EXIT`."""
    try:
        where = write_traceback(err)
    except OSError:
        print_line(bug_line(err, None))
        traceback.print_exception(err, file=sys.stderr)
        return BUG_EXIT
    print_line(bug_line(err, where))
    return BUG_EXIT


@contextmanager
def user_errors(console: Console, interrupted: str = "interrupted") -> Iterator[None]:
    """The body of a command: a user error (:class:`UserError`) is one line and exit 2,
    a file-system fault one line naming the path; a Ctrl-C that reaches here (a grid
    handles its own first) prints ``interrupted`` and exits 130. Anything else is a bug and
    goes on to :func:`udora.experiments.cli.main.main`."""
    from udora.experiments.run import interrupts

    try:
        yield
    except UserError as err:
        usage_error(err)
    except OSError as err:
        code, line = os_error_line(err)
        print_line(line)
        raise typer.Exit(code) from None
    except KeyboardInterrupt:
        interrupts.ignore_from_now()
        console.print(interrupted, highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(interrupts.exit_code()) from None
