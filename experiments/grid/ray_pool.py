"""The Ray executor of ``--executor ray`` (docs/scaling.md): each call is a Ray task.

Same interface as :class:`udora.experiments.grid.local.LocalPool`: ``submit``, ``wait``
(returning :class:`~udora.experiments.grid.workers.Outcome`), ``outstanding``, ``close``.
Ray isolates tasks, so a killed worker fails its task alone; tasks never retry, so a crash
is reported, not hidden. Imported only when Ray is chosen.
"""

from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import Callable
from typing import Any

from udora.experiments.grid.workers import Outcome, cap_threads, release_if_crowded, thread_env
from udora.experiments.run.checks import UsageError


def _ray_call(fn: Callable[..., Any], args: tuple, cpus: int) -> Any:
    """In a Ray worker: threads capped at ``cpus`` and the JAX cache, then ``fn(*args)``."""
    from udora.experiments.run.jax_cache import configure_compilation_cache

    cap_threads(cpus)
    configure_compilation_cache()
    try:
        return fn(*args)
    finally:
        release_if_crowded()


class RayPool:
    """Calls as Ray tasks (``num_cpus = cpus_per_run``, no retries), at most ``jobs`` in
    flight (the rest wait here); on the cluster at ``address`` ("auto", "HOST:PORT") or a
    local Ray started here on this process's usable cores and stopped by :meth:`close`.
    ``jobs=None``: as many as the cluster's CPUs hold."""

    def __init__(self, jobs: int | None, address: str | None, cpus_per_run: int) -> None:
        import ray

        self.cpus_per_run = cpus_per_run
        self._started = not ray.is_initialized()
        if self._started:
            env = {"env_vars": thread_env(cpus_per_run)}
            cores = len(os.sched_getaffinity(0))
            kw: dict[str, Any] = {"address": address} if address else {"num_cpus": cores}
            try:
                ray.init(
                    **kw,
                    runtime_env=env,
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                )
            except (ConnectionError, RuntimeError, ValueError) as err:
                raise UsageError(
                    f"--address {address}: cannot reach a Ray cluster: {err}"
                ) from None
        biggest = max(
            (n.get("Resources", {}).get("CPU", 0) for n in ray.nodes() if n.get("Alive")), default=0
        )
        if cpus_per_run > biggest:
            self.close()
            raise UsageError(
                f"--cpus-per-run {cpus_per_run}: the largest Ray node has "
                f"{biggest:g} CPUs; no run could start"
            )
        self._task = ray.remote(max_retries=0, num_cpus=cpus_per_run)(_ray_call)
        cluster = max(1, int(ray.cluster_resources().get("CPU", 1)) // cpus_per_run)
        self.capacity = jobs or cluster
        self._refs: dict[Any, int] = {}
        self._queue: deque[tuple[int, Callable[..., Any], tuple]] = deque()
        self._tickets = itertools.count()

    def submit(self, fn: Callable[..., Any], args: tuple) -> int:
        ticket = next(self._tickets)
        self._queue.append((ticket, fn, args))
        self._fill()
        return ticket

    def _fill(self) -> None:
        while self._queue and len(self._refs) < self.capacity:
            ticket, fn, args = self._queue.popleft()
            self._refs[self._task.remote(fn, args, self.cpus_per_run)] = ticket

    @property
    def outstanding(self) -> int:
        return len(self._refs) + len(self._queue)

    def wait(self) -> list[tuple[int, Outcome]]:
        import ray
        from ray.exceptions import RayError, RayTaskError

        self._fill()
        if not self._refs:
            return []
        done, _ = ray.wait(list(self._refs), num_returns=1)
        out = []
        for ref in done:
            ticket = self._refs.pop(ref)
            try:
                out.append((ticket, Outcome(ray.get(ref))))
            except RayTaskError as err:  # the call itself raised: a bug, not a crash
                raise err.as_instanceof_cause() from None
            except RayError as err:  # its worker (or node) died
                out.append(
                    (
                        ticket,
                        Outcome(crash=f"the Ray worker running it died ({type(err).__name__})"),
                    )
                )
        self._fill()
        return out

    def close(self, now: bool = False) -> None:
        import ray

        if now:
            for ref in self._refs:
                ray.cancel(ref, force=True)
        self._refs.clear()
        self._queue.clear()
        if self._started and ray.is_initialized():
            ray.shutdown()
