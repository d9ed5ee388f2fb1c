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

import concurrent.futures as cf
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from udora.experiments.run import interrupts


@dataclass(frozen=True)
class Outcome:
    """How a call ended: ``value`` it returned, or ``crash``, why its worker died first."""

    value: Any = None
    crash: str | None = None


# A break with no run to blame (a worker died idle or starting up) this many times in a row
# is not a run's fault: give up with an error instead of respawning forever.
MAX_EMPTY_BREAKS = 3


def exit_with_parent(parent: int, every: float = 1.0) -> None:
    """End this worker soon after its parent process is gone (killed, say, by SIGKILL,
    which gives the parent no chance to terminate its pool): a daemon thread polls the
    parent pid and calls ``os._exit(1)`` once this process has been re-parented."""
    import os
    import threading

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        os._exit(1)

    threading.Thread(target=watch, name="udora-parent-watch", daemon=True).start()


def thread_env(cpus: int) -> dict[str, str]:
    """Environment that caps a run's OpenMP, BLAS and (for one core) XLA threads at
    ``cpus``; set before JAX or numpy start their thread pools. CatBoost's threads are a
    method config field (``thread_count``, default 1)."""
    env = {
        name: str(cpus) for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
    }
    if cpus == 1:
        flags = os.environ.get("XLA_FLAGS", "")
        if "xla_cpu_multi_thread_eigen" not in flags:
            env["XLA_FLAGS"] = f"{flags} --xla_cpu_multi_thread_eigen=false".strip()
    return env


def cap_threads(cpus: int) -> None:
    """Cap this process's threads at ``cpus``: the environment of :func:`thread_env` for
    libraries not loaded yet, and ``threadpoolctl`` for BLAS/OpenMP already loaded (the
    spawned worker may have imported numpy with the parent's main module)."""
    from threadpoolctl import threadpool_limits

    os.environ.update(thread_env(cpus))
    threadpool_limits(cpus)


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


def stop_pool(pool: cf.ProcessPoolExecutor, grace: float = 2.0) -> None:
    """Cancel queued runs and end the pool's processes now: SIGTERM, then SIGKILL.

    ``ProcessPoolExecutor.shutdown`` waits for running calls, and its exit hook joins the
    manager thread, which hung on a second Ctrl-C; terminating the workers first lets that
    thread see them gone and return.
    """
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    deadline = time.monotonic() + grace
    for proc in procs:
        proc.join(timeout=max(0.0, deadline - time.monotonic()))
        if proc.is_alive():
            proc.kill()
            proc.join(timeout=grace)


def crash_reason(exitcode: int) -> str:
    """Why a run failed when the worker process running it died, from its exit code."""
    if exitcode < 0:
        name = signal.Signals(-exitcode).name if -exitcode in signal.valid_signals() else ""
        hint = {
            "SIGKILL": " (killed: out of memory, or kill -9)",
            "SIGSEGV": " (a native crash)",
            "SIGBUS": " (a native crash)",
            "SIGABRT": " (a native abort)",
        }.get(name, "")
        return f"the worker process running it died of {name or -exitcode}{hint}"
    return f"the worker process running it exited with code {exitcode}"


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
