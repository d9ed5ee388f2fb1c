"""Whether a task's dense GP matrices fit in memory, asked before any is allocated.

The oracle's largest arrays are square float64 matrices over M points
(:mod:`oracle.gp`): the prior Gram of the whole pool and its Cholesky factor when f is
drawn jointly on the pool (``pool_size <= joint_limit``), else those of the training
sample (the joint draw at its unique points, and ``A = K_SS + diag(noise)`` of the
posterior over all ``n_train`` points, repeats included; ``n_train <= pool_size``). At
the peak of a factorisation (:func:`oracle.gp.cholesky_with_jitter`) four of them are
alive: the Gram, its copy handed to XLA, the jitter-shifted input and the factor, as
measured (docs/scaling.md: 12.4 GB at n = 20,000, where one matrix is 3.2 GB). So

    bytes = 4 * 8 * M^2,    M = pool_size if pool_size <= joint_limit else n_train.

The ``features`` ground truth forms no such matrix and is not checked. The estimate is
compared with the memory the machine has available (:func:`available_memory`); a task that
does not fit is refused with one :class:`~udora.errors.UserError` naming the preset field,
where XLA would abort the process (or the kernel kill it) partway through the build.
"""

from __future__ import annotations

import os
from pathlib import Path

from udora.errors import UserError
from udora.oracle.preset import Preset

DENSE_COPIES = 4  # M x M matrices alive at the peak (module doc)
_FLOAT64 = 8  # bytes


def dense_gp_bytes(pool_size: int, n_train: int, joint_limit: int) -> int:
    """Bytes of the oracle's dense GP matrices at their peak: ``4 * 8 * M^2`` with
    ``M = pool_size`` if ``pool_size <= joint_limit`` else ``n_train`` (module doc).

    Args:
        pool_size: N, the pool's points; n_train: n, the training sample's (with repeats).
        joint_limit: the largest pool drawn jointly (``build_task``'s ``joint_limit``).
    """
    m = pool_size if pool_size <= joint_limit else n_train
    return DENSE_COPIES * _FLOAT64 * m * m


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation: ``MemAvailable`` of /proc/meminfo
    (free memory plus the page cache the kernel can drop), else the free physical pages
    (``os.sysconf``); None where the platform says neither."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024  # the file's kB are KiB
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):  # a name this platform does not define (macOS)
        return None


def check_memory(preset: Preset, joint_limit: int) -> None:
    """Refuse ``preset`` when its dense GP matrices (:func:`dense_gp_bytes`) need more
    memory than is available (:func:`available_memory`); nothing is allocated before.

    Raises:
        UserError: naming the preset field to lower, the estimate and the memory available.
    """
    if preset.truth.family == "features":
        return
    need = dense_gp_bytes(preset.pool_size, preset.n_train, joint_limit)
    have = available_memory()
    if have is None or need <= have:
        return
    if preset.pool_size <= joint_limit:
        m, field = preset.pool_size, "preset.pool_size"
        why = f"{field} = {m}, drawn jointly up to {joint_limit} points"
    else:
        m, field = preset.n_train, "preset.n_train"
        why = f"{field} = {m}, as preset.pool_size = {preset.pool_size} is above {joint_limit}"
    raise UserError(
        f"preset {preset.name!r}: the oracle's dense GP matrices need about {_size(need)} "
        f"({DENSE_COPIES} float64 matrices of {m} x {m}: {why}) but {_size(have)} of memory "
        f"is available; lower {field}"
    )


def _size(nbytes: float) -> str:
    """``nbytes`` in GB, MB or kB (powers of 1000), one decimal."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes / 1e3:.1f} kB"
