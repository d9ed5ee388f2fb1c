"""Tree-method performance: fit + predict time with default configs on a 1500 x 8 task.

Run: ``python benchmarks/bench_trees.py`` (``--repeats``, ``--methods`` to narrow it).
Each run fits on 1500 synthetic training points (8 uniform features, a smooth function
plus heteroscedastic noise) with run seed = repeat index, then predicts at 1500 fresh
points; prints the median fit, predict and total wall time per method and the test RMSE
against the noise-free function as a sanity check.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

N, D = 1500, 8
TREE_METHODS = ("ngboost_nig", "ngboost_bag", "catboost_ps", "catboost_kgb")


def _task(seed: int = 0) -> tuple[np.ndarray, ...]:
    """Training ``(N, D)``, ``(N,)`` and test ``(N, D)``, noise-free ``(N,)`` arrays."""
    rng = np.random.default_rng(seed)

    def f(X: np.ndarray) -> np.ndarray:
        return np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * X[:, 3] - 0.3 * X[:, 4] ** 2

    X, X_test = rng.uniform(-1.0, 1.0, size=(2, N, D))
    noise_sd = 0.1 + 0.2 * (X[:, 5] > 0)
    return X, f(X) + noise_sd * rng.standard_normal(N), X_test, f(X_test)


def bench(name: str, repeats: int) -> dict[str, float]:
    import methods

    X, y, X_test, f_test = _task()
    fits, preds, rmses = [], [], []
    for seed in range(repeats):
        method = methods.get_method(name)
        t0 = time.perf_counter()
        method.fit(X, y, seed=seed)
        t1 = time.perf_counter()
        pred = method.predict(X_test)
        t2 = time.perf_counter()
        fits.append(t1 - t0)
        preds.append(t2 - t1)
        rmses.append(float(np.sqrt(np.mean((pred.mean - f_test) ** 2))))
    return {
        "fit_s": statistics.median(fits),
        "predict_s": statistics.median(preds),
        "total_s": statistics.median(f + p for f, p in zip(fits, preds, strict=True)),
        "rmse": statistics.median(rmses),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--methods", nargs="+", default=list(TREE_METHODS))
    args = parser.parse_args()
    print(f"{N} x {D} training points, {N} test points, {os.cpu_count()} CPUs, default configs")
    print(f"median of {args.repeats} runs")
    print(f"{'method':<14}{'fit s':>9}{'predict s':>11}{'total s':>9}{'rmse':>8}")
    for name in args.methods:
        r = bench(name, args.repeats)
        print(
            f"{name:<14}{r['fit_s']:>9.2f}{r['predict_s']:>11.3f}{r['total_s']:>9.2f}"
            f"{r['rmse']:>8.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
