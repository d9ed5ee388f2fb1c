"""Fit + predict time of edl, deup, swag, laplace, fsp_laplace and dkl on a 1500 x 8 task.

Run: ``python benchmarks/bench_methods_nn.py`` (``--repeats``, ``--methods`` to narrow it,
``--set field=value`` to override a config field of every method run, e.g. ``--methods dkl
--set batch_size=null`` for full-batch DKL training, which at n = 1500 costs about 2 s per
marginal-likelihood step on two CPU cores). Default configs otherwise. Each repeat fits on the same 1500 training
points (8 uniform features, a smooth function plus heteroscedastic noise) with run seed =
repeat index and predicts at 1500 fresh points. The first repeat includes JIT compilation
(shown as ``first fit s``); the medians over all repeats are printed with the test RMSE
against the noise-free function and the median EU / AU ratio as sanity checks.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import yaml

N, D = 1500, 8
NN_METHODS = ("edl", "deup", "swag", "laplace", "fsp_laplace", "dkl")


def synthetic_task(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Train ``X`` ``(N, D)``, ``y`` ``(N,)``; test ``X`` ``(N, D)`` and noise-free ``f``."""
    rng = np.random.default_rng(seed)
    X, X_test = rng.uniform(-1.0, 1.0, size=(2, N, D))

    def f(Z: np.ndarray) -> np.ndarray:
        return np.sin(2 * Z[:, 0]) + Z[:, 1] * Z[:, 2] + 0.5 * Z[:, 3] - 0.3 * Z[:, 4] ** 2

    noise_sd = 0.1 + 0.2 * (X[:, 5] > 0)
    return X, f(X) + noise_sd * rng.standard_normal(N), X_test, f(X_test)


def bench(name: str, repeats: int, overrides: dict[str, object]) -> dict[str, float]:
    import methods

    X, y, X_test, f_test = synthetic_task()
    fits, preds, rmses, ratios = [], [], [], []
    for seed in range(repeats):
        method = methods.get_method(name, **overrides)
        t0 = time.perf_counter()
        method.fit(X, y, seed=seed)
        t1 = time.perf_counter()
        pred = method.predict(X_test)
        t2 = time.perf_counter()
        fits.append(t1 - t0)
        preds.append(t2 - t1)
        rmses.append(float(np.sqrt(np.mean((pred.mean - f_test) ** 2))))
        ratios.append(float(np.median(pred.epistemic) / np.median(pred.aleatoric)))
    return {
        "first_fit_s": fits[0],
        "fit_s": statistics.median(fits),
        "predict_s": statistics.median(preds),
        "rmse": statistics.median(rmses),
        "eu_au": statistics.median(ratios),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--methods", nargs="+", default=list(NN_METHODS))
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE")
    args = parser.parse_args()
    overrides = {k: yaml.safe_load(v) for k, v in (item.split("=", 1) for item in args.set)}
    configs = f"overrides {overrides}" if overrides else "default configs"
    print(f"{N} x {D} training points, {N} test points, {os.cpu_count()} CPUs, {configs}")
    print(f"median of {args.repeats} runs (first fit compiles)")
    print(f"{'method':<13}{'first fit s':>12}{'fit s':>8}{'predict s':>11}{'rmse':>8}{'EU/AU':>9}")
    for name in args.methods:
        r = bench(name, args.repeats, overrides)
        print(
            f"{name:<13}{r['first_fit_s']:>12.2f}{r['fit_s']:>8.2f}{r['predict_s']:>11.3f}"
            f"{r['rmse']:>8.3f}{r['eu_au']:>9.3g}",
            flush=True,
        )


if __name__ == "__main__":
    main()
