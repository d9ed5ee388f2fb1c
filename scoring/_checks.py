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


def members(fn: str, name: str, x: object, n: int | tuple[int, ...]) -> np.ndarray:
    """``x`` as a float64 array of shape (K, N) (``n`` = N), or (K, R, N) for ``n`` =
    (R, N); else a ValueError naming ``fn`` and ``name``."""
    a = np.asarray(x, dtype=np.float64)
    shape = (n,) if isinstance(n, int) else tuple(n)
    if a.ndim != 1 + len(shape) or a.shape[1:] != shape:
        want = (
            f"(K, N) with N={shape[0]}" if len(shape) == 1 else f"(K, {', '.join(map(str, shape))})"
        )
        raise ValueError(f"{fn}: `{name}` must have shape {want}, got shape {a.shape}")
    return a


def all_finite(*arrays: np.ndarray) -> bool:
    return all(bool(np.all(np.isfinite(a))) for a in arrays)


def rows(fn: str, **arrays: object) -> list[np.ndarray]:
    """Several float64 arrays that must share one shape, (N,) or (R, N): a metric of one
    prediction, or of R at once (R subsets of points, ``udora meta``), reduced over the
    last axis. The shape is taken from the first."""
    out: list[np.ndarray] = []
    shape: tuple[int, ...] | None = None
    for name, x in arrays.items():
        a = np.asarray(x, dtype=np.float64)
        if a.ndim not in (1, 2) or (shape is not None and a.shape != shape):
            want = "(N,) or (R, N)" if shape is None else f"{shape}"
            raise ValueError(f"{fn}: `{name}` must have shape {want}, got shape {a.shape}")
        shape = a.shape
        out.append(a)
    return out


def finite_rows(*arrays: np.ndarray) -> np.ndarray:
    """Whether every value of each row (last axis) is finite in all ``arrays``: shape ()
    for (N,) inputs, (R,) for (R, N)."""
    return np.logical_and.reduce([np.all(np.isfinite(a), axis=-1) for a in arrays])


def scalar(x: np.ndarray | float) -> float | np.ndarray:
    """A 0-d result as a float (a metric of one prediction); (R,) results unchanged."""
    return float(x) if np.ndim(x) == 0 else np.asarray(x, np.float64)
