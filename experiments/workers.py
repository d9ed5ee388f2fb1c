"""Worker processes of a grid or a sweep pool: how they start, stop, and die.

Workers are spawned (``multiprocessing`` "spawn"), ignore Ctrl-C (the parent decides and
terminates them), end on their own when the parent dies, and share JAX's persistent
compilation cache (docs/running.md, "A grid").

:func:`run_pool` survives a worker that dies mid-call (a segfault in native code, the
out-of-memory killer, ``kill -9``). ``concurrent.futures`` then breaks the whole pool and
fails every outstanding call alike, so each call marks itself in flight with a file named
by its index holding the worker's pid; after the break, the workers' exit codes say which
one died first (the others were terminated by the pool, SIGTERM). That call is reported
crashed; every other unfinished call runs again on a fresh pool.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import shutil
import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from udora.experiments import interrupts

# A break with no call in flight (a worker died starting up) this many times in a row is
# not a run's fault: give up with an error instead of respawning forever.
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


def crash_reason(exitcode: int | None) -> str:
    """Why a run failed when the worker process running it died, from its exit code."""
    if exitcode is None:
        return ("a worker process ended abruptly while this run or one beside it was "
                "running (which one is unknown); rerun to retry it")  # fmt: skip
    if exitcode < 0:
        name = signal.Signals(-exitcode).name if -exitcode in signal.valid_signals() else ""
        hint = {"SIGKILL": " (killed: out of memory, or kill -9)",
                "SIGSEGV": " (a native crash)", "SIGBUS": " (a native crash)",
                "SIGABRT": " (a native abort)"}.get(name, "")  # fmt: skip
        return f"the worker process running it died of {name or -exitcode}{hint}"
    return f"the worker process running it exited with code {exitcode}"


def _tracked(fn: Callable[..., Any], marker_dir: str, index: int, args: tuple) -> Any:
    """In a worker: ``fn(*args)``, with the file ``marker_dir/index`` (our pid) meanwhile."""
    marker = Path(marker_dir) / str(index)
    marker.write_text(str(os.getpid()))
    try:
        return fn(*args)
    finally:
        marker.unlink(missing_ok=True)


def run_pool(
    calls: Sequence[tuple],
    jobs: int,
    fn: Callable[..., Any],
    on_result: Callable[[tuple, Any], None],
    on_crash: Callable[[tuple, str], None],
    marker_dir: str | Path,
) -> None:
    """Call ``fn(*args)`` for every ``args`` of ``calls`` on ``jobs`` spawned workers.

    ``on_result(args, value)`` gets each return value as it comes, in the parent.
    A call whose worker process died gets ``on_crash(args, reason)`` instead (see the
    module doc); the others run on. ``marker_dir`` (created, emptied, removed) holds the
    in-flight markers. On any other exit (Ctrl-C, an error in a callback) the workers are
    stopped at once and the exception propagates.
    """
    marker_dir = Path(marker_dir)
    todo = dict(enumerate(calls))
    empty_breaks = 0
    while todo:
        shutil.rmtree(marker_dir, ignore_errors=True)
        marker_dir.mkdir(parents=True)
        crashed = _one_pool(todo, jobs, fn, on_result, marker_dir)
        if crashed is None:
            break
        empty_breaks = 0 if crashed else empty_breaks + 1
        if empty_breaks >= MAX_EMPTY_BREAKS:
            raise RuntimeError(f"worker processes died {MAX_EMPTY_BREAKS} times in a row "
                               "with no run in flight; is the environment broken?")  # fmt: skip
        # the workers the pool terminated itself died of SIGTERM; the first to die did not
        culprits = {i: code for i, code in crashed.items() if code != -signal.SIGTERM}
        for index, code in (culprits or dict.fromkeys(crashed)).items():
            on_crash(todo.pop(index), crash_reason(code))
    shutil.rmtree(marker_dir, ignore_errors=True)


def _one_pool(
    todo: dict[int, tuple],
    jobs: int,
    fn: Callable[..., Any],
    on_result: Callable[[tuple, Any], None],
    marker_dir: Path,
) -> dict[int, int | None] | None:
    """One pool over ``todo`` (finished calls are popped). ``None`` when every call finished;
    after a break, the exit code of the worker of each call that was in flight."""
    ctx = multiprocessing.get_context("spawn")
    pool = cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=init_worker)
    procs: dict[int, Any] = {}
    try:
        futures = {pool.submit(_tracked, fn, str(marker_dir), i, args): i
                   for i, args in todo.items()}  # fmt: skip
        procs.update(getattr(pool, "_processes", None) or {})
        for fut in cf.as_completed(futures):
            procs.update(getattr(pool, "_processes", None) or {})
            if isinstance(fut.exception(), cf.process.BrokenProcessPool):
                break
            on_result(todo.pop(futures[fut]), fut.result())
        else:
            pool.shutdown(wait=True)
            return None
    except BaseException:
        interrupts.stopping()  # a second Ctrl-C must not cut the cleanup short
        stop_pool(pool)
        raise
    stop_pool(pool)
    for proc in procs.values():  # joined, so their exit codes are known
        proc.join(timeout=5)
    for fut, index in futures.items():  # finished before the break, not yet reported
        if index in todo and fut.done() and fut.exception() is None:
            on_result(todo.pop(index), fut.result())
    codes = {proc.pid: proc.exitcode for proc in procs.values()}
    crashed: dict[int, int | None] = {}
    for marker in marker_dir.iterdir():
        index, pid = int(marker.name), int(marker.read_text() or 0)
        if index in todo:
            crashed[index] = codes.get(pid)
    return crashed
