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
(:func:`udora.experiments.run.processes.build_single_threaded`): a sampled posterior's
draws follow every rounding of its sums, and how those are split over threads depends on
the caller (a bench worker on one core, a command with both), so built in the caller the
same task drew other samples. Built this way the same task gives the same arrays on the
same kind of CPU with the same libraries.
"""

from __future__ import annotations

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
