"""Helpers for tests that drive a real ``udora`` process: its children, waiting, output."""

import os
import sys
import time
from pathlib import Path

import psutil

EXE = str(Path(sys.executable).with_name("udora"))
ENV = {**os.environ, "UDORA_JAX_CACHE": "off"}


def children(pid):
    """Every descendant process of ``pid`` (workers, the resource tracker)."""
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def alive(procs):
    """Those of ``procs`` still running (zombies count as gone)."""
    out = []
    for proc in procs:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                out.append(proc)
        except psutil.NoSuchProcess:
            pass
    return out


def wait_for(predicate, timeout=60.0):
    """Poll ``predicate`` every 50 ms until true (True) or ``timeout`` seconds (False)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def last_line(text):
    """The last non-empty line of ``text``, whitespace collapsed."""
    return " ".join([line for line in text.splitlines() if line.strip()][-1].split())


def times_ten_or_die(x, die_on, sleep=0.2):
    """For pool tests, run in a worker: ``10 * x``, or death by SIGSEGV when ``x == die_on``."""
    import signal

    time.sleep(sleep)
    if x == die_on:
        os.kill(os.getpid(), signal.SIGSEGV)
    return 10 * x


def where_am_i(_):
    """For pool tests, run in a worker: its pid, cores, thread caps and BLAS threads."""
    import threadpoolctl

    time.sleep(0.2)  # long enough for both workers of a pool to take calls
    blas = [lib["num_threads"] for lib in threadpoolctl.threadpool_info()]
    return (
        os.getpid(),
        sorted(os.sched_getaffinity(0)),
        os.environ.get("OMP_NUM_THREADS"),
        os.environ.get("XLA_FLAGS", ""),
        blas,
    )


def kill_a_worker_in_flight(folder, timeout=120.0, young=2.0):
    """SIGKILL the worker of a call in flight under ``folder``; its pid.

    The call is a pool's marker file that names a pid, is 0.3 to ``young`` seconds old and
    still there: a call that has just started, not one that is ending (a worker killed
    after it sent its result, while a busy parent has not yet removed the marker, fails no
    call, and the test would see none failed)."""
    import signal

    deadline = time.time() + timeout
    while time.time() < deadline:
        found = sorted(Path(folder).glob(".inflight-*/*")) if Path(folder).is_dir() else []
        for marker in found:
            try:
                age = time.time() - marker.stat().st_mtime
                pid = marker.read_text()
            except FileNotFoundError:  # the call ended meanwhile
                continue
            if pid and 0.3 <= age <= young and marker.exists():
                os.kill(int(pid), signal.SIGKILL)
                return int(pid)
        time.sleep(0.05)
    raise AssertionError(f"no call was ever in flight under {folder}")


def compute_of_worker(_):
    """For pool tests, run in a worker: what :func:`provenance.compute` records there."""
    from udora.experiments.run import provenance

    time.sleep(0.2)  # long enough for both workers of a pool to take calls
    return os.getpid(), provenance.compute()
