"""Fit and predict time of every classification method on a binary and a multiclass dev
preset (issue: "per-method median fit time").

Run: ``UDORA_DATA_DIR=... python benchmarks/bench_methods_classification.py`` (``--presets``,
``--methods``, ``--repeats``). Each preset's task is built (or read from the task cache,
``UDORA_TASK_CACHE``) once at seed 0, as a run would; each method then fits on the task's
training sample with run seeds 0..repeats-1 at its default config and predicts on the
task's pool. Printed per method: the first fit's seconds (JAX compilation included), the
median fit and predict seconds over the repeats, and two sanity figures of the last
repeat, its accuracy on the pool's realised labels and the Spearman correlation of its EU
with the oracle's mutual information (the run's ``spearman_eu_mi``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
from scipy.stats import spearmanr

PRESETS = ("banknote", "vehicle")


def time_method(task, name: str, repeats: int) -> dict[str, float]:
    """First fit, median fit and predict seconds, accuracy and EU Spearman of ``name``."""
    from udora import methods

    cls = methods.get_method_class(name)
    knowledge = task.knowledge(with_prior=cls.uses_task_prior)
    fits, preds = [], []
    for seed in range(repeats):
        method = methods.get_method(name)
        t0 = time.perf_counter()
        method.fit(task.X_train, task.y_train, seed=seed, knowledge=knowledge)
        t1 = time.perf_counter()
        pred = method.predict(task.X)
        preds.append(time.perf_counter() - t1)
        fits.append(t1 - t0)
    oracle_eu = task.moments.mutual_information
    return {
        "first_fit_s": fits[0],
        "fit_s": statistics.median(fits),
        "predict_s": statistics.median(preds),
        "accuracy": float(np.mean(pred.prob.argmax(axis=1) == task.y)),
        "spearman_mi": float(spearmanr(pred.epistemic, oracle_eu).statistic),
    }


def main() -> None:
    from udora import methods
    from udora.experiments.run.execute import cached_task
    from udora.oracle.preset import load_preset

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", default=list(PRESETS))
    parser.add_argument("--methods", nargs="+", default=None)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    names = args.methods or [
        n for n in methods.list_methods() if "classification" in methods.get_method_class(n).kinds
    ]
    print(f"{os.cpu_count()} CPUs, default configs, median of {args.repeats} fits")
    for preset_name in args.presets:
        t0 = time.perf_counter()
        task = cached_task(load_preset(preset_name), 0)
        C = task.moments.prob.shape[-1]
        print(
            f"\n{preset_name}: C = {C}, n = {task.X_train.shape[0]}, pool = {task.X.shape[0]}, "
            f"task in {time.perf_counter() - t0:.1f} s"
        )
        print(
            f"{'method':<14}{'first fit s':>12}{'fit s':>8}{'predict s':>11}{'acc':>7}{'MI rho':>8}"
        )
        for name in names:
            r = time_method(task, name, args.repeats)
            print(
                f"{name:<14}{r['first_fit_s']:>12.2f}{r['fit_s']:>8.2f}{r['predict_s']:>11.2f}"
                f"{r['accuracy']:>7.3f}{r['spearman_mi']:>8.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
