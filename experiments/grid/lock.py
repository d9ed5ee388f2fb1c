"""One grid per results folder: an advisory ``flock`` on ``RESULTS/.udora-lock``.

Two ``udora bench`` processes on one folder would both run every missing run (docs/running.md,
"A grid"). The lock file holds the holder's pid, host, start time and command so the second
process can say who it waits for. ``flock`` is released by the kernel when the holder's file
descriptor closes, so a crash or ``kill -9`` never leaves a stale lock; the file itself stays.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from udora.errors import UserError
from udora.oracle import reading

LOCK_NAME = ".udora-lock"


class LockHeldError(UserError):
    """Another process holds the results folder's lock (a user error: one line, exit 2)."""


def holder(path: str | Path) -> dict[str, Any]:
    """What the lock file says about its holder (``{}`` when empty or unreadable)."""
    try:
        info = reading.json_value(path) if Path(path).stat().st_size else {}
    except (OSError, ValueError):  # not JSON (a BadFile is a ValueError)
        return {}
    return info if isinstance(info, dict) else {}


def describe(info: dict[str, Any]) -> str:
    """``pid 123 on host (udora bench ...) since 2025-01-01 12:00:00``."""
    if not info:
        return "another process"
    return (
        f"pid {info.get('pid', '?')} on {info.get('host', '?')} "
        f"({info.get('command', '?')}) since {info.get('since', '?')}"
    )


@contextmanager
def results_lock(out_dir: str | Path, *, wait: bool = False) -> Iterator[dict[str, Any]]:
    """Hold the lock of ``out_dir`` (which must exist) for the ``with`` block.

    Raises :class:`LockHeldError` naming the holder when it is taken, unless ``wait``, which
    blocks until it is free (Ctrl-C still interrupts the wait).
    """
    path = Path(out_dir) / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)  # umask applies, like the run folders
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                raise LockHeldError(
                    f"{out_dir} is in use by {describe(holder(path))}; "
                    "wait for it to finish or pass --wait-lock"
                ) from None
            fcntl.flock(fd, fcntl.LOCK_EX)
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": time.strftime("%Y-%m-%d %H:%M:%S"),
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        try:
            yield info
        finally:
            os.ftruncate(fd, 0)  # a free lock names nobody
    finally:
        os.close(fd)  # releases the flock
