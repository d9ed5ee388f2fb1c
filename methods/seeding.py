"""Named random streams derived from a run's one integer seed (no global state).

``jax_keys(seed, "init", "shuffle")`` gives one JAX key per name and
``numpy_rng(seed, "split")`` one numpy Generator per name; the same seed and name give the
same stream in every process, and different names give independent streams.
"""

from __future__ import annotations

import zlib

import jax
import numpy as np


def _tag(name: str) -> int:
    # crc32 is stable across processes (unlike hash()).
    return zlib.crc32(name.encode())


def jax_keys(seed: int, *names: str) -> dict[str, jax.Array]:
    """One typed JAX key per name, folded from ``jax.random.key(seed)``."""
    root = jax.random.key(int(seed))
    return {name: jax.random.fold_in(root, _tag(name)) for name in names}


def numpy_rng(seed: int, name: str) -> np.random.Generator:
    """A numpy Generator for stream ``name`` of run ``seed``."""
    return np.random.default_rng([int(seed), _tag(name)])
