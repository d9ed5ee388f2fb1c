"""Worker processes of a grid or a sweep pool: how they start, stop, and die.

Workers are spawned (``multiprocessing`` "spawn"), ignore Ctrl-C (the parent decides and
terminates them), end on their own when the parent dies, and share JAX's persistent
compilation cache (docs/running.md, "A grid").

A worker may die mid-call (a segfault in native code, the out-of-memory killer, ``kill
-9``); ``concurrent.futures`` then breaks the whole pool and fails every outstanding call
alike. So each call marks itself in flight (:func:`tracked`: a file named by its ticket,
holding the worker's pid); after the break, the workers' exit codes say which one died
first (the others were terminated by the pool, SIGTERM), and
:class:`udora.experiments.grid.local.LocalPool` reports that call crashed
(:func:`crash_reason`) and resubmits the others to a fresh pool.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from udora.experiments.run import interrupts
from udora.experiments.run.processes import (  # noqa: F401 (the pools import them from here)
    cap_threads,
    crash_reason,
    exit_with_parent,
    stop_broken_pool,
    stop_pool,
    thread_env,
)


@dataclass(frozen=True)
class Outcome:
    """How a call ended: ``value`` it returned, or ``crash``, why its worker died first."""

    value: Any = None
    crash: str | None = None


# A break with no run to blame (a worker died idle or starting up) this many times in a row
# is not a run's fault: give up with an error instead of respawning forever.
MAX_EMPTY_BREAKS = 3


def init_worker(cores: list[int] | None = None, per_run: int = 0, slot: Any = None) -> None:
    """Pool workers ignore Ctrl-C (the parent terminates them), end when the parent dies,
    and share the JAX cache. With ``cores`` (the parent's usable cores), ``per_run`` and a
    shared counter ``slot``, the k-th worker of a pool is pinned to ``per_run`` cores of
    its own (``cores[k * per_run:]``, wrapping) and its thread pools are capped to match
    (:func:`thread_env`); XLA sizes its pool by the cores a process may use."""
    if cores and per_run and slot is not None:
        with slot.get_lock():
            k = slot.value
            slot.value += 1
        mine = {cores[(k * per_run + i) % len(cores)] for i in range(per_run)}
        os.sched_setaffinity(0, mine)
        cap_threads(per_run)
    from udora.experiments.run.jax_cache import configure_compilation_cache

    exit_with_parent(os.getppid())
    interrupts.ignore_in_worker()
    configure_compilation_cache()


def tracked(fn: Callable[..., Any], marker_dir: str, index: int, args: tuple) -> Any:
    """In a worker: ``fn(*args)``, with the file ``marker_dir/index`` (our pid) meanwhile;
    then :func:`release_if_crowded`."""
    marker = Path(marker_dir) / str(index)
    marker.write_text(str(os.getpid()))
    try:
        return fn(*args)
    finally:
        marker.unlink(missing_ok=True)
        release_if_crowded()


def mappings_share() -> float | None:
    """This process's memory mappings as a share of the kernel's per-process limit
    (``vm.max_map_count``); None where that cannot be read (not Linux)."""
    try:
        limit = int(Path("/proc/sys/vm/max_map_count").read_text())
        with open("/proc/self/maps", "rb") as maps:
            return sum(1 for _ in maps) / limit
    except (OSError, ValueError):
        return None


def release_if_crowded(limit: float = 0.5) -> bool:
    """Drop compiled programs once mappings pass ``limit`` of ``vm.max_map_count``.

    Every program XLA compiles keeps a few memory mappings of machine code for as long as a
    cache holds it; a worker that has run a few hundred runs of different shapes and
    architectures reaches the kernel's limit (65,530 by default), and the next compile
    fails ("LLVM ERROR: Unable to allocate section memory") or segfaults. So: clear every
    ``functools`` cache of udora's modules (compiled training programs, networks, oracle
    tasks), then JAX's own caches, and collect. Returns whether it cleared. Rebuilding
    costs a compile per program (often a read of the persistent compilation cache).
    """
    import gc
    import sys

    share = mappings_share()
    if share is None or share < limit:
        return False
    for name, module in list(sys.modules.items()):
        if name.startswith("udora.") and module is not None:
            for obj in list(vars(module).values()):
                if callable(getattr(obj, "cache_clear", None)):
                    obj.cache_clear()
    if "jax" in sys.modules:
        sys.modules["jax"].clear_caches()
    gc.collect()
    return True
