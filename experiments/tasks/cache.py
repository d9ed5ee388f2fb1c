"""Tasks whose build is expensive, kept on disk by task hash.

A task kind that sets ``cache_on_disk`` (:class:`udora.oracle.kinds.TaskKind`; a sampled
posterior takes minutes) has its built tasks stored under
``<cache>/<kind>-v<version>/oracle/<task_hash>.npz`` and ``.json`` (the format of
:mod:`udora.experiments.tasks.arrays`, with its SHA-256), and every later build of
the same task on this machine reads them instead. The task hash covers the preset fields,
the data table's checksum and the seed; the kind's ``version`` covers the builder, so a
new builder never reads an old builder's arrays. ``UDORA_TASK_CACHE`` picks the folder;
``off`` (or ``0``, ``none``, empty) turns the disk cache off. Default:
``$XDG_CACHE_HOME/udora/tasks`` (``~/.cache/udora/tasks``).

Kinds without ``cache_on_disk`` (regression: seconds) are built every time.

A kind that sets ``single_threaded`` (classification) has its tasks built in a process
of their own on one core, with XLA's and BLAS's threads capped at one
(:func:`build_single_threaded`): a sampled posterior's draws follow every rounding of its
sums, and how those are split over threads depends on the caller (a bench worker on one
core, a command with both), so built in the caller the same task drew other samples.
Built this way the same task gives the same arrays on the same kind of CPU with the same
libraries.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from udora.caches import cache_folder
from udora.experiments.tasks import arrays as oracle_arrays
from udora.oracle.kinds import get_kind

ENV = "UDORA_TASK_CACHE"


def cache_root() -> Path | None:
    """The disk cache's folder, or None when ``UDORA_TASK_CACHE`` turns it off."""
    return cache_folder(os.environ.get(ENV), "tasks")


def load_or_build(preset: Any, seed: int, task_hash: str, build: Callable[[], Any]) -> Any:
    """The task ``task_hash`` (of ``preset`` at ``seed``): read from the disk cache when
    its kind keeps one and it is there, else ``build()`` (then stored when it keeps one).

    Raises:
        ValueError: naming the file, when a cached copy is damaged (its checksum fails).
    """
    kind = get_kind(preset.kind)
    root = cache_root() if kind.cache_on_disk else None
    if root is None:
        return build()
    folder = root / f"{kind.name}-v{kind.version}"
    found = oracle_arrays.load_arrays(folder, task_hash)
    if found is not None:
        entry, arrays = found
        return kind.load(preset, int(seed), arrays, entry.get("meta", {}))
    task = build()
    oracle_arrays.store(folder, task_hash, task, task.to_arrays())
    return task


def build(preset: Any, seed: int, data_dir: str | Path | None = None) -> Any:
    """The task of ``preset`` at ``seed``, built as its kind says: in a single-threaded
    process of its own for a ``single_threaded`` kind, else here."""
    if get_kind(preset.kind).single_threaded:
        return build_single_threaded(preset, seed, data_dir)
    from udora.oracle import kinds as oracle_kinds

    return oracle_kinds.build(preset, seed, data_dir=data_dir)


def build_single_threaded(preset: Any, seed: int, data_dir: str | Path | None = None) -> Any:
    """The task of ``preset`` at ``seed`` (a kind with ``cache_on_disk``), built in a
    spawned process pinned to one of this process's cores with XLA's and BLAS's threads
    capped at one (:func:`udora.experiments.grid.workers.init_worker`, as a bench worker
    on one core runs), then read back from its stored arrays as the disk cache reads it.
    An error in the build is raised here; Ctrl-C ends the build's process at once."""
    import concurrent.futures as cf
    import multiprocessing as mp
    import tempfile

    from udora.experiments.grid.workers import init_worker, stop_pool

    kind = get_kind(preset.kind)
    affinity = getattr(os, "sched_getaffinity", None)
    cores = sorted(affinity(0))[:1] if affinity is not None else None
    ctx = mp.get_context("spawn")
    text = preset.model_dump_json()
    folder = tempfile.mkdtemp(prefix="udora-task-")
    try:
        pool = cf.ProcessPoolExecutor(
            1, mp_context=ctx, initializer=init_worker, initargs=(cores, 1, ctx.Value("i", 0))
        )
        try:
            pool.submit(_build_and_store, text, int(seed), data_dir, folder).result()
        finally:
            stop_pool(pool)
        found = oracle_arrays.load_arrays(folder, _NAME)
        if found is None:  # the build returned without storing: never silently rebuilt
            raise RuntimeError(f"the build of {preset.name} seed {seed} stored no arrays")
        entry, arrays = found
        return kind.load(preset, int(seed), arrays, entry.get("meta", {}))
    finally:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


_NAME = "task"  # the stored arrays' name in the build's scratch folder


def _build_and_store(preset_json: str, seed: int, data_dir: str | Path | None, folder: str) -> None:
    """In the build's process: build the task and store its arrays in ``folder``."""
    from udora.oracle import kinds as oracle_kinds
    from udora.oracle.preset import parse_preset

    preset = parse_preset(json.loads(preset_json), "the task's preset")
    task = oracle_kinds.build(preset, seed, data_dir=data_dir)
    oracle_arrays.store(folder, _NAME, task, task.to_arrays())
