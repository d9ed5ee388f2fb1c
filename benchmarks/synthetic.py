"""The 1500 x 8 synthetic task of the method benchmarks and the timing loop over it.

Eight uniform features on [-1, 1], a smooth function of five of them, and noise whose std
is 0.1 or 0.3 depending on the sign of the sixth feature. Imported by the benchmark
scripts beside it (``python benchmarks/bench_*.py`` puts this folder on ``sys.path``).
"""

from __future__ import annotations

import statistics
import time

import numpy as np

N, D = 1500, 8


def synthetic_task(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Train ``X`` ``(N, D)``, ``y`` ``(N,)``; test ``X`` ``(N, D)`` and noise-free ``f``."""
    rng = np.random.default_rng(seed)
    X, X_test = rng.uniform(-1.0, 1.0, size=(2, N, D))

    def f(Z: np.ndarray) -> np.ndarray:
        return np.sin(2 * Z[:, 0]) + Z[:, 1] * Z[:, 2] + 0.5 * Z[:, 3] - 0.3 * Z[:, 4] ** 2

    noise_sd = 0.1 + 0.2 * (X[:, 5] > 0)
    return X, f(X) + noise_sd * rng.standard_normal(N), X_test, f(X_test)


def time_method(
    name: str, repeats: int, overrides: dict[str, object] | None = None
) -> dict[str, float]:
    """Fit + predict ``name`` ``repeats`` times (run seed = repeat index) on the task.

    Returns the first fit's seconds (it includes compilation) and the medians over the
    repeats of fit, predict and total seconds, the test RMSE against the noise-free
    function, and the ratio of median EU to median AU.
    """
    from udora import methods

    X, y, X_test, f_test = synthetic_task()
    fits, preds, rmses, ratios = [], [], [], []
    for seed in range(repeats):
        method = methods.get_method(name, **(overrides or {}))
        t0 = time.perf_counter()
        method.fit(X, y, seed=seed)
        t1 = time.perf_counter()
        pred = method.predict(X_test)
        t2 = time.perf_counter()
        fits.append(t1 - t0)
        preds.append(t2 - t1)
        rmses.append(float(np.sqrt(np.mean((pred.mean - f_test) ** 2))))
        au = float(np.median(pred.aleatoric))  # 0 for methods without an AU estimate
        ratios.append(float(np.median(pred.epistemic)) / au if au > 0 else float("inf"))
    return {
        "first_fit_s": fits[0],
        "fit_s": statistics.median(fits),
        "predict_s": statistics.median(preds),
        "total_s": statistics.median(f + p for f, p in zip(fits, preds, strict=True)),
        "rmse": statistics.median(rmses),
        "eu_au": statistics.median(ratios),
    }
