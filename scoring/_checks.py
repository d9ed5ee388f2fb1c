"""Shape checks shared by the scoring functions: one clear ValueError per bad argument."""

from __future__ import annotations

import numpy as np


def vector(fn: str, name: str, x: object, n: int | None = None) -> np.ndarray:
    """``x`` as a float64 array of shape (N,), or a ValueError naming ``fn`` and ``name``."""
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 1 or (n is not None and a.shape[0] != n):
        want = "(N,)" if n is None else f"(N,) with N={n}"
        raise ValueError(f"{fn}: `{name}` must have shape {want}, got shape {a.shape}")
    return a


def vectors(fn: str, **arrays: object) -> list[np.ndarray]:
    """Several arrays that must share one shape (N,); N is taken from the first."""
    out: list[np.ndarray] = []
    n: int | None = None
    for name, x in arrays.items():
        a = vector(fn, name, x, n)
        n = a.shape[0]
        out.append(a)
    return out


def members(fn: str, name: str, x: object, n: int) -> np.ndarray:
    """``x`` as a float64 array of shape (K, N), or a ValueError naming ``fn`` and ``name``."""
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2 or a.shape[1] != n:
        raise ValueError(f"{fn}: `{name}` must have shape (K, N) with N={n}, got shape {a.shape}")
    return a


def all_finite(*arrays: np.ndarray) -> bool:
    return all(bool(np.all(np.isfinite(a))) for a in arrays)
