"""The long steps of ``udora report`` and ``udora meta`` as they happen: a rich progress line
(spinner, step, elapsed time) on a terminal; in a log (not a terminal), one line per step,
at most one every few seconds (none in the first few), so a long report still shows it is
alive and a short one prints nothing extra."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from udora.experiments.run import interrupts


@contextmanager
def steps(console: Console, what: str, every: float = 3.0) -> Iterator[Callable[[str], None]]:
    """A ``progress(step)`` callback for the block: each call names the step now running."""
    if console.is_terminal:
        columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
        shown = Progress(*columns, console=console, transient=True)
        with interrupts.entered_without_signals(shown) as bar:
            task = bar.add_task(what, total=None)
            yield lambda step: bar.update(task, description=f"{what}: {step}")
        return
    start, last = time.monotonic(), [0.0]  # a command done within ``every`` s says nothing

    def say(step: str) -> None:
        now = time.monotonic() - start
        if now - last[0] >= every:
            last[0] = now
            console.print(
                f"[{now:5.0f} s] {what}: {step}", highlight=False, markup=False, soft_wrap=True
            )

    yield say
