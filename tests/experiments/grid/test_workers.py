"""Executors: a worker that dies fails its call only; the others finish (executors.py)."""

import signal
from pathlib import Path

import pytest
from processes import times_ten_or_die, where_am_i

from udora.experiments.grid.executors import run_all
from udora.experiments.grid.local import InProcess, LocalPool
from udora.experiments.grid.workers import crash_reason


def test_a_call_whose_worker_segfaults_is_reported_and_the_others_finish(tmp_path):
    results, crashes = {}, {}
    calls = [(x, 2) for x in range(6)]
    pool = LocalPool(2, 1, tmp_path / "inflight")
    run_all(
        pool,
        calls,
        times_ten_or_die,
        lambda a, v: results.setdefault(a[0], v),
        lambda a, why: crashes.setdefault(a[0], why),
    )
    assert results == {x: 10 * x for x in (0, 1, 3, 4, 5)}
    assert crashes == {2: "the worker process running it died of SIGSEGV (a native crash)"}
    assert not list((tmp_path / "inflight").glob(".inflight-*"))


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (-signal.SIGKILL, "died of SIGKILL (killed: out of memory, or kill -9)"),
        (-signal.SIGABRT, "died of SIGABRT (a native abort)"),
        (-signal.SIGUSR1, "died of SIGUSR1"),
        (3, "exited with code 3"),
    ],
)
def test_crash_reasons_name_the_signal(code, reason):
    assert crash_reason(code) == f"the worker process running it {reason}"


def test_in_process_runs_in_order():
    seen = []
    run_all(
        InProcess(),
        [(x, -1, 0) for x in range(4)],
        times_ten_or_die,
        lambda a, v: seen.append(v),
        lambda a, why: seen.append(why),
    )
    assert seen == [0, 10, 20, 30]


@pytest.mark.slow
def test_crowded_mappings_are_released():
    """Compiled programs hold memory mappings until their caches drop them (the cause of
    'LLVM ERROR: Unable to allocate section memory' after a few hundred runs)."""
    import functools

    import jax
    import jax.numpy as jnp

    from udora.experiments.grid import workers

    held = functools.lru_cache(maxsize=None)(lambda i: jax.jit(lambda x: jnp.sin(x) * i))
    workers.held_for_test = held  # a udora module's cache, as methods.nn.trainer's
    try:
        assert not workers.release_if_crowded(limit=1.0)
        before = workers.mappings_share()
        for i in range(80):
            held(i)(jnp.ones(i + 1)).block_until_ready()
        grown = workers.mappings_share()
        assert workers.release_if_crowded(limit=0.0)
        after = workers.mappings_share()
    finally:
        del workers.held_for_test
    limit = int(Path("/proc/sys/vm/max_map_count").read_text())
    print(f"mappings {before * limit:.0f} -> {grown * limit:.0f} -> {after * limit:.0f}")
    assert (grown - before) * limit > 300  # a few mappings per compiled program
    assert held.cache_info().currsize == 0
    assert after - before < 0.2 * (grown - before)


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_an_idle_worker_that_dies_fails_nothing(tmp_path):
    """The pool breaks and terminates the busy worker too; its call reruns, not fails."""
    import os
    import time

    pool = LocalPool(2, 1, tmp_path / "inflight")
    pool.submit(times_ten_or_die, (1, -1, 0.0))
    pool.submit(times_ten_or_die, (2, -1, 0.0))
    assert sorted(t for t, _ in pool.wait() + pool.wait()) == [0, 1]  # both workers up
    pool.submit(times_ten_or_die, (3, -1, 3.0))
    markers = pool.marker_dir
    deadline = time.monotonic() + 30
    while not [m for m in markers.glob("*") if m.read_text()] and time.monotonic() < deadline:
        time.sleep(0.05)
    busy = int(next(markers.glob("*")).read_text())
    idle = next(pid for pid in pool._procs if pid != busy)
    os.kill(idle, signal.SIGKILL)
    ended = pool.wait()
    pool.close()
    assert [(o.value, o.crash) for _, o in ended] == [(30, None)]


def test_local_workers_are_pinned_to_their_own_cores(tmp_path):
    import os

    cores = sorted(os.sched_getaffinity(0))
    seen = {}
    run_all(
        LocalPool(2, 1, tmp_path / "inflight"),
        [(k,) for k in range(8)],
        where_am_i,
        lambda a, v: seen.setdefault(v[0], v[1:]),
        lambda a, why: None,
    )
    pinned = [v[0] for v in seen.values()]
    assert all(len(c) == 1 for c in pinned)
    assert len(seen) == 2
    if len(cores) >= 2:  # two workers, two different cores
        assert pinned[0] != pinned[1]
    for _, omp, xla, blas in seen.values():
        assert omp == "1" and "--xla_cpu_multi_thread_eigen=false" in xla
        assert all(n == 1 for n in blas)


def test_a_worker_that_dies_between_calls_does_not_end_the_pool(tmp_path):
    """A worker killed while the parent is between wait() and submit(): submit finds the
    pool broken; the call is sent again on a fresh pool, nothing fails."""
    import os
    import time

    pool = LocalPool(2, 1, tmp_path)
    pool.submit(times_ten_or_die, (1, -1, 0.0))
    pool.submit(times_ten_or_die, (2, -1, 0.0))
    assert len(pool.wait() + pool.wait()) == 2
    os.kill(next(iter(pool._procs)), signal.SIGKILL)
    time.sleep(1.0)  # the pool notices and marks itself broken
    pool.submit(times_ten_or_die, (3, -1, 0.0))
    assert pool._broken  # submit found the pool broken and kept the call
    ended = pool.wait()
    pool.close()
    assert [(o.value, o.crash) for _, o in ended] == [(30, None)]
