"""Worker processes of a grid or a sweep pool: how they start and how they are stopped.

Workers are spawned (``multiprocessing`` "spawn"), ignore Ctrl-C (the parent decides and
terminates them), end on their own when the parent dies, and share JAX's persistent
compilation cache (docs/running.md, "A grid").
"""

from __future__ import annotations

import concurrent.futures as cf
import time

from udora.experiments import interrupts


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


def init_worker() -> None:
    """Pool workers ignore Ctrl-C (the parent terminates them), end when the parent dies,
    and share the JAX cache."""
    import os

    from udora.experiments.jax_cache import configure_compilation_cache

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
