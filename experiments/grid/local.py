"""The executors of this machine: :class:`InProcess` (``--jobs 1``) and :class:`LocalPool`
(``--jobs J``), as :mod:`udora.experiments.grid.executors` describes them."""

from __future__ import annotations

import concurrent.futures as cf
import itertools
import multiprocessing
import os
import shutil
import signal
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from udora.experiments.grid.workers import (
    MAX_EMPTY_BREAKS,
    Outcome,
    crash_reason,
    init_worker,
    release_if_crowded,
    stop_broken_pool,
    stop_pool,
    tracked,
)
from udora.experiments.run import interrupts


class InProcess:
    """Calls run one at a time in this process, when ``wait`` asks for the next."""

    def __init__(self) -> None:
        from udora.experiments.run.jax_cache import configure_compilation_cache

        configure_compilation_cache()
        self.capacity = 1
        self._queue: deque[tuple[int, Callable[..., Any], tuple]] = deque()
        self._tickets = itertools.count()

    def submit(self, fn: Callable[..., Any], args: tuple) -> int:
        ticket = next(self._tickets)
        self._queue.append((ticket, fn, args))
        return ticket

    @property
    def outstanding(self) -> int:
        return len(self._queue)

    def wait(self) -> list[tuple[int, Outcome]]:
        """Run the oldest queued call; ``[]`` when none is queued."""
        if not self._queue:
            return []
        ticket, fn, args = self._queue.popleft()
        try:
            return [(ticket, Outcome(fn(*args)))]
        finally:
            release_if_crowded()

    def close(self, now: bool = False) -> None:
        self._queue.clear()


class LocalPool:
    """``jobs`` spawned workers pinned to ``cpus_per_run`` cores each; survives a dying
    worker (module doc). Each pool's in-flight markers live in a fresh folder
    ``.inflight-*`` under ``marker_parent`` (so two commands sharing a folder never mix
    them), removed with the pool."""

    def __init__(
        self, jobs: int, cpus_per_run: int, marker_parent: str | Path, timeout: float | None = None
    ) -> None:
        self.capacity, self.cpus_per_run, self.timeout = jobs, cpus_per_run, timeout
        self._timed_out: set[int] = set()  # tickets whose worker was killed for the time limit
        self.marker_parent = Path(marker_parent)
        self.marker_dir = self.marker_parent / ".inflight-unused"
        self._calls: dict[int, tuple[Callable[..., Any], tuple]] = {}
        self._futures: dict[cf.Future, int] = {}
        self._tickets = itertools.count()
        self._pool: cf.ProcessPoolExecutor | None = None
        self._procs: dict[int, Any] = {}
        self._empty_breaks = 0
        self._broken = False  # the pool broke while a call was being submitted

    def _start(self) -> cf.ProcessPoolExecutor:
        if self._pool is None:
            import tempfile

            shutil.rmtree(self.marker_dir, ignore_errors=True)
            self.marker_parent.mkdir(parents=True, exist_ok=True)
            self.marker_dir = Path(tempfile.mkdtemp(prefix=".inflight-", dir=self.marker_parent))
            ctx = multiprocessing.get_context("spawn")
            cores = sorted(os.sched_getaffinity(0))
            slot = ctx.Value("i", 0)  # each worker of this pool takes the next core slot
            self._pool = cf.ProcessPoolExecutor(
                self.capacity,
                mp_context=ctx,
                initializer=init_worker,
                initargs=(cores, self.cpus_per_run, slot),
            )
            self._procs = {}
        return self._pool

    def submit(self, fn: Callable[..., Any], args: tuple) -> int:
        ticket = next(self._tickets)
        self._calls[ticket] = (fn, args)
        self._send(ticket)
        return ticket

    def _send(self, ticket: int) -> None:
        fn, args = self._calls[ticket]
        with interrupts.spawning():  # _start and the first submit start processes
            pool = self._start()
            try:
                future = pool.submit(tracked, fn, str(self.marker_dir), ticket, args)
            except (cf.process.BrokenProcessPool, RuntimeError):  # a worker died meanwhile
                self._broken = True  # the call stays in _calls; wait() recovers and resends it
                return
            self._futures[future] = ticket
            self._procs.update(getattr(pool, "_processes", None) or {})

    @property
    def outstanding(self) -> int:
        return len(self._calls)

    def wait(self) -> list[tuple[int, Outcome]]:
        """Block until at least one outstanding call ended; ``[]`` when none is left."""
        while self._calls:
            if self._futures:
                poll = None if self.timeout is None else min(1.0, self.timeout / 4)
                done, _ = cf.wait(self._futures, timeout=poll, return_when=cf.FIRST_COMPLETED)
                if not done and self._kill_overdue():
                    continue  # the killed worker breaks the pool: the next wait sees it
                if not done:
                    continue
            else:
                done = set()
            self._procs.update(getattr(self._pool, "_processes", None) or {})
            broken = any(isinstance(f.exception(), cf.process.BrokenProcessPool) for f in done)
            if broken or self._broken or not self._futures:
                out = self._recover()
            else:
                out = [self._pop(f) for f in done]
            if out:
                return out
        return []

    def _kill_overdue(self) -> bool:
        """Kill (SIGKILL: a hang in native code ignores anything milder) the worker of
        every call running longer than ``timeout``, from its in-flight marker's age;
        whether one was killed."""
        import time

        killed = False
        now = time.time()
        for marker in list(self.marker_dir.iterdir()):
            try:
                ticket, pid = int(marker.name), int(marker.read_text() or 0)
                started = marker.stat().st_mtime
            except (OSError, ValueError):  # the call ended meanwhile
                continue
            overdue = ticket in self._calls and pid and now - started > self.timeout
            if overdue and ticket not in self._timed_out:
                self._timed_out.add(ticket)
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed = True
                except ProcessLookupError:
                    pass
        return killed

    def _pop(self, fut: cf.Future) -> tuple[int, Outcome]:
        ticket = self._futures.pop(fut)
        del self._calls[ticket]
        self._empty_breaks = 0  # a call finished: the pool works
        return ticket, Outcome(fut.result())

    def _recover(self) -> list[tuple[int, Outcome]]:
        """After a worker died: finished calls, the crashed ones, the rest resubmitted."""
        pool, self._pool, self._broken = self._pool, None, False
        if pool is not None:  # else a killed worker's exit code could read as None
            stop_broken_pool(pool)  # and its call would be rerun instead of failed
        for proc in self._procs.values():  # joined, so their exit codes are known
            proc.join(timeout=5)
        broken = cf.process.BrokenProcessPool
        out = [
            self._pop(f)
            for f in list(self._futures)
            if f.done() and not isinstance(f.exception(), broken)
        ]
        codes = {proc.pid: proc.exitcode for proc in self._procs.values()}
        crashed: dict[int, int | None] = {}
        for marker in self.marker_dir.iterdir():
            ticket, pid = int(marker.name), int(marker.read_text() or 0)
            if ticket in self._calls:
                crashed[ticket] = codes.get(pid)
        # the workers the pool terminated itself died of SIGTERM; the first to die did not.
        # None of them: the worker that died was idle, so every call here reruns.
        culprits = {t: code for t, code in crashed.items() if code not in (-signal.SIGTERM, None)}
        self._empty_breaks = 0 if culprits else self._empty_breaks + 1
        if self._empty_breaks >= MAX_EMPTY_BREAKS:
            raise RuntimeError(
                f"worker processes died {MAX_EMPTY_BREAKS} times in a row "
                "with no run to blame; is the environment broken?"
            )
        for ticket, code in culprits.items():
            del self._calls[ticket]
            if ticket in self._timed_out:
                why = f"timed out: still running after {self.timeout:g} s (--timeout), killed"
            else:
                why = crash_reason(code)
            out.append((ticket, Outcome(crash=why)))
        self._futures = {}
        for ticket in sorted(self._calls):
            self._send(ticket)
        return out

    def close(self, now: bool = False) -> None:
        """Stop the workers (``now``: cancel queued calls and terminate running ones)."""
        if self._pool is not None:
            stop_pool(self._pool) if now else self._pool.shutdown(wait=True)
            self._pool = None
        shutil.rmtree(self.marker_dir, ignore_errors=True)
        self._calls.clear()
