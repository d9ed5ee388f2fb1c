"""A process's threads and lifetime (what a grid's workers use; its pools import them from
:mod:`udora.experiments.grid.workers`), and building a task as its kind says: a
``single_threaded`` kind (a sampled posterior, whose draws follow how its sums are split
over threads) in a spawned process of its own on one core with one OpenMP, BLAS and XLA
thread, so the same task gives the same arrays whoever asks (a bench worker, ``udora
run``, ``udora oracle build``); any other kind here (docs/design.md, "Cached and
reproducible")."""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from udora.experiments.run import interrupts
from udora.experiments.tasks import arrays as oracle_arrays
from udora.oracle.kinds import get_kind


def exit_with_parent(parent: int, every: float = 1.0) -> None:
    """End this worker soon after its parent process is gone (killed, say, by SIGKILL,
    which gives the parent no chance to terminate its pool): a daemon thread polls the
    parent pid and calls ``os._exit(1)`` once this process has been re-parented."""
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


def stop_broken_pool(pool: cf.ProcessPoolExecutor) -> None:
    """:func:`stop_pool` for a pool one of whose processes died, returning once the pool's
    manager thread has ended, so that the dead processes' exit codes are known.

    That thread reaps the dead processes too: a status it has taken from the kernel but
    not yet stored (it waits for the GIL) reads as None from another thread, and a process
    killed by a signal would look alive. ``shutdown()`` drops the pool's reference to the
    thread, so it is taken first.
    """
    manager = getattr(pool, "_executor_manager_thread", None)
    stop_pool(pool)
    if manager is not None:
        manager.join(timeout=10)


def crash_reason(exitcode: int, who: str = "the worker process running it") -> str:
    """Why a call failed when ``who``, the process running it, died, from its exit code."""
    if exitcode < 0:
        name = signal.Signals(-exitcode).name if -exitcode in signal.valid_signals() else ""
        hint = {
            "SIGKILL": " (killed: out of memory, or kill -9)",
            "SIGSEGV": " (a native crash)",
            "SIGBUS": " (a native crash)",
            "SIGABRT": " (a native abort)",
        }.get(name, "")
        return f"{who} died of {name or -exitcode}{hint}"
    return f"{who} exited with code {exitcode}"


def build(preset: Any, seed: int, data_dir: str | Path | None = None) -> Any:
    """The task of ``preset`` at ``seed``, built as its kind says: in a single-threaded
    process of its own for a ``single_threaded`` kind, else here."""
    if get_kind(preset.kind).single_threaded:
        return build_single_threaded(preset, seed, data_dir)
    from udora.oracle import kinds as oracle_kinds

    return oracle_kinds.build(preset, seed, data_dir=data_dir)


def build_single_threaded(preset: Any, seed: int, data_dir: str | Path | None = None) -> Any:
    """The task of ``preset`` at ``seed`` (a kind with ``cache_on_disk``), built in a
    spawned process on the CPU with one thread (:func:`_init_build`), which sends back its
    arrays and record as they would be stored (:func:`oracle_arrays.packed`; no file, so
    nothing is left behind when either process is killed), read here as the disk cache
    reads them. An error in the build is raised here; Ctrl-C ends the build's process at
    once. A script calling this (through a run) needs the ``if __name__ == "__main__":``
    guard that spawned processes need."""
    import multiprocessing as mp

    kind = get_kind(preset.kind)
    affinity = getattr(os, "sched_getaffinity", None)
    core = min(affinity(0)) if affinity is not None else None
    text = preset.model_dump_json()
    with interrupts.spawning():  # a Ctrl-C while it starts waits for the block's end
        pool = cf.ProcessPoolExecutor(
            1, mp_context=mp.get_context("spawn"), initializer=_init_build, initargs=(core,)
        )
        future = pool.submit(_build_packed, text, int(seed), data_dir)
    builder = next(iter((getattr(pool, "_processes", None) or {}).values()), None)
    try:
        record, blob = future.result()
    except cf.process.BrokenProcessPool:  # the build's process died: say how
        stop_broken_pool(pool)
        if builder is not None:
            builder.join(timeout=5)
        code = builder.exitcode if builder is not None else None
        if code is None:
            why = "its process died"
        elif code == 0:  # it ended before the call ran: its start-up failed
            why = "its process exited before building (its error is in the log above)"
        else:
            why = crash_reason(code, "the process building it")
        raise RuntimeError(f"the build of {preset.name} seed {seed} failed: {why}") from None
    finally:
        stop_pool(pool)
    entry, arrays = oracle_arrays.unpacked(record, blob, f"the build of {preset.name} seed {seed}")
    return kind.load(preset, int(seed), arrays, entry.get("meta", {}))


def _init_build(core: int | None) -> None:
    """The build's process, before it imports JAX: pinned to ``core`` where the platform
    pins, one OpenMP, BLAS and XLA thread (XLA's flag set over an inherited one), JAX on
    the CPU, Ctrl-C left to the caller, ended when the caller dies, the shared JAX cache."""
    from udora.experiments.run.jax_cache import configure_compilation_cache

    if core is not None:
        os.sched_setaffinity(0, {core})
    kept = [f for f in os.environ.get("XLA_FLAGS", "").split() if "multi_thread_eigen" not in f]
    os.environ["XLA_FLAGS"] = " ".join([*kept, "--xla_cpu_multi_thread_eigen=false"])
    os.environ["JAX_PLATFORMS"] = "cpu"
    cap_threads(1)
    exit_with_parent(os.getppid())
    interrupts.ignore_in_worker()
    configure_compilation_cache()


def _build_packed(preset_json: str, seed: int, data_dir: str | Path | None) -> tuple[str, bytes]:
    """In the build's process: build the task; its record and arrays, packed."""
    from udora.oracle import kinds as oracle_kinds
    from udora.oracle.preset import parse_preset

    preset = parse_preset(json.loads(preset_json), "the task's preset")
    task = oracle_kinds.build(preset, seed, data_dir=data_dir)
    return oracle_arrays.packed(task, task.to_arrays())
