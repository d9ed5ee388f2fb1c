"""Progress of a batch of jobs (a grid's runs, diagnoses) in a log: a terminal shows rich's
bar, but a log (CI, SLURM: the console is not a terminal) sees no bar, so
:class:`LogLines` prints one line every :data:`LOG_EVERY` seconds and one at the end."""

from __future__ import annotations

import time

from rich.console import Console

LOG_EVERY = 5.0  # seconds between progress lines when the output is not a terminal


class LogLines:
    """``tick(done, failed)`` after each job of ``total`` (``noun`` in the plural names
    them): on a terminal nothing, in a log ``[  12 s] 3/40 runs done (0 failed)`` at most
    every :data:`LOG_EVERY` seconds, and always for the last job."""

    def __init__(self, console: Console, total: int, noun: str) -> None:
        self.console, self.total, self.noun = console, total, noun
        self.started = time.monotonic()
        self.last = self.started

    def tick(self, done: int, failed: int) -> None:
        if self.console.is_terminal:
            return
        now = time.monotonic()
        if now - self.last >= LOG_EVERY or done == self.total:
            self.last = now
            self.console.print(
                f"[{now - self.started:6.0f} s] {done}/{self.total} {self.noun} done "
                f"({failed} failed)",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
