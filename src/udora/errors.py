"""The user-error type: bad input, told apart from a bug by its type.

Every layer raises :class:`UserError` (or a subclass) for input a user can fix: an unknown
name, a bad value, a file that is not what it should be. The command line prints it as
one line and exits 2; any other exception that reaches it is a bug, reported with its
traceback in a file (docs/running.md, "Exit codes").
"""

from __future__ import annotations


class UserError(ValueError):
    """Bad input; its message says what was wrong and, where it helps, what is valid.

    A ``ValueError``, so code that catches ``ValueError`` for a bad value keeps working.
    """


class UnknownNameError(UserError, KeyError):
    """A name that is not registered (a method, a preset); the message lists the valid ones.

    Also a ``KeyError``: looking a name up is what failed.
    """

    def __str__(self) -> str:
        # KeyError would quote its message (repr); a user error prints as written
        return str(self.args[0]) if self.args else ""
