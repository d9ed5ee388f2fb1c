"""Ctrl-C that always stops a grid: a SIGINT handler that records the interrupt, then raises.

SIGTERM (what ``timeout``, docker and SLURM send) is handled the same way, so a terminated
command also records its interrupted runs, stops its workers and prints its summary line;
its exit code is then 143 instead of 130 (:func:`exit_code`).

Python's default handler only raises :class:`KeyboardInterrupt`, which code running inside a
JAX callback (or any ``except BaseException``) can swallow, and then the grid ran on to the
end. Here the interrupt is also remembered in a flag that the grid checks after every run
(:func:`requested`), and while the grid is already stopping further Ctrl-C only add to the
flag, so the cleanup (terminating workers) is never cut short (docs/running.md, "A grid").

An interrupt raised where Python cannot propagate it (JAX's garbage-collection callback,
a ``__del__``) would print "Exception ignored in ..." with a traceback; while the handler
is installed, ``sys.unraisablehook`` drops a :class:`KeyboardInterrupt` silently, since the
flag has recorded it and the grid stops at its next check.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

_state = {
    "count": 0,
    "stopping": False,
    "depth": 0,
    "ignore": False,
    "signal": None,
    "defer": 0,
    "pending": False,
}
SIGNALS = (signal.SIGINT, signal.SIGTERM)


def requested() -> bool:
    """Whether Ctrl-C was pressed since the outermost :func:`catch_interrupts` began."""
    return _state["count"] > 0


def method_failed(err: BaseException) -> str:
    """What a method's exception means for its run: one line for the run's record, or,
    when it stops the command, re-raised as :class:`KeyboardInterrupt`.

    A method's own failure is any :class:`BaseException` (``SystemExit`` from a library
    that calls ``sys.exit``, a ``GeneratorExit``, an error of its own) and is recorded as
    the run's failure while the grid goes on. Ctrl-C or SIGTERM (a
    :class:`KeyboardInterrupt`, or any error raised while one was requested, e.g. inside
    JAX) stops the command."""
    if isinstance(err, KeyboardInterrupt) or requested():
        raise KeyboardInterrupt from err
    return f"{type(err).__name__}: {err}"


def stopping() -> None:
    """From now on Ctrl-C is recorded but raises nothing (the grid is cleaning up)."""
    _state["stopping"] = True


def exit_code() -> int:
    """The exit code of a command stopped by a signal: 128 + the first signal caught by the
    last :func:`catch_interrupts` (130 for Ctrl-C, 143 for SIGTERM; 130 when none was)."""
    return 128 + int(_state["signal"] or signal.SIGINT)


def ignore_from_now() -> None:
    """Ignore SIGINT and SIGTERM for the rest of the process, also after
    :func:`catch_interrupts` ends.

    For the last lines of an interrupted command: a further Ctrl-C while the interpreter
    shuts down would otherwise kill it by the default action (exit -2, not 130).
    """
    _state["ignore"] = True
    if threading.current_thread() is threading.main_thread():
        for signum in SIGNALS:
            signal.signal(signum, signal.SIG_IGN)


def _handler(signum: int, frame: object) -> None:
    _state["count"] += 1
    _state["signal"] = _state["signal"] or signum
    if _state["defer"]:
        _state["pending"] = True
    elif not _state["stopping"]:
        raise KeyboardInterrupt


@contextmanager
def deferred() -> Iterator[None]:
    """Hold an interrupt that arrives inside the block until the block has ended, then
    raise it: for short steps that must not be cut in the middle (writing a run folder,
    whose half-closed archive would otherwise complain at exit)."""
    _state["defer"] += 1
    try:
        yield
    finally:
        _state["defer"] -= 1
        if not _state["defer"] and _state["pending"]:
            _state["pending"] = False
            if not _state["stopping"]:
                raise KeyboardInterrupt


@contextmanager
def spawning() -> Iterator[None]:
    """For a block that starts worker processes: they begin life ignoring SIGINT, and an
    interrupt of this process meanwhile is held until the block has ended.

    A terminal's Ctrl-C goes to every process of its group. A worker still importing
    Python's start-up modules (before its initializer makes it ignore SIGINT) died of it
    with a traceback, and one whose start-up data was half written when the parent was
    interrupted died of EOFError. A process inherits an ignored signal, so SIGINT is
    ignored while the workers are forked; on Linux a signal blocked in the receiving
    thread stays pending even when ignored, so the main thread also blocks it and gets it
    when the block ends. Another thread that does not block it could take a Ctrl-C in
    those milliseconds and lose it, so udora's progress displays start their threads with
    it blocked (:func:`entered_without_signals`).
    """
    main = threading.current_thread() is threading.main_thread()
    if not main:
        yield
        return
    with deferred():
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, handler)
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


@contextmanager
def entered_without_signals(manager: Any) -> Iterator[Any]:
    """Enter ``manager`` (a rich ``Progress``, which starts a refresh thread) with SIGINT
    and SIGTERM blocked in this thread, so that every thread it starts inherits them
    blocked: the kernel then gives a Ctrl-C to the main thread, which handles it, and
    never to such a thread while :func:`spawning` has the disposition set to ignore (a
    Ctrl-C taken by a thread then was lost, measured under load in the grid's start)."""
    if threading.current_thread() is not threading.main_thread():
        with manager as entered:
            yield entered
        return
    stack = ExitStack()
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, set(SIGNALS))
    try:
        entered = stack.enter_context(manager)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    with stack:
        yield entered


def _quiet_unraisable(previous):
    def hook(unraisable) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt) and _state["count"] > 0:
            return  # recorded in the flag; the grid stops at its next check
        previous(unraisable)

    return hook


@contextmanager
def catch_interrupts() -> Iterator[None]:
    """Install the recording handler of SIGINT and SIGTERM for the block (nested uses share
    the outer one).

    Outside the main thread signals cannot be handled, so the block runs unchanged.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    outer = _state["depth"] == 0
    if outer:
        previous = {signum: signal.signal(signum, _handler) for signum in SIGNALS}
        previous_hook = sys.unraisablehook
        sys.unraisablehook = _quiet_unraisable(previous_hook)
        _state.update(count=0, stopping=False, signal=None, pending=False)
    _state["depth"] += 1
    try:
        yield
    finally:
        _state["depth"] -= 1
        if outer:
            for signum, handler in previous.items():
                signal.signal(signum, signal.SIG_IGN if _state["ignore"] else handler)
            sys.unraisablehook = previous_hook
            _state.update(count=0, stopping=False, ignore=False)


def ignore_in_worker() -> None:
    """Worker processes ignore SIGINT: the parent decides and terminates them."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
