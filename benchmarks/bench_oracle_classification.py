"""Classification oracle performance: the sampled task of a binary and a multiclass preset.

Run: ``python benchmarks/bench_oracle_classification.py [PRESET ...]`` (default:
banknote and vehicle, whose tables ship with udora; add e.g. ``letter`` for the 26-class
case with ``UDORA_DATA_DIR`` set). Each preset is built twice at seed 0 in one process:
the first build includes JAX's compilation, the second reuses it, so their difference is
the compile time. Prints per preset: wall seconds (compile included and apart), the
sampler's seconds for warm-up and first draws, draws per chain, the minimum per-point bulk
and tail ESS and the ESS per second of the second build, the median relative Monte Carlo
error of each target, and whether the diagnostics passed. Goals on 2 cores with the other
idle: binary under 30 s, multiclass (at most 10 classes) under 3 minutes.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np


def _relative(value: np.ndarray, se: np.ndarray) -> float:
    return float(np.median(se / np.maximum(np.abs(value), 1e-12)))


def bench(name: str) -> dict:
    from udora.oracle.classification.task import build_task
    from udora.oracle.preset import load_preset

    preset = load_preset(name)
    t0 = time.perf_counter()
    build_task(preset, 0)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    task = build_task(preset, 0)
    second = time.perf_counter() - t0
    arrays, diag = task.to_arrays(), task.meta["diagnostics"]
    point = diag["per_point"]
    mi = task.moments.mutual_information
    return {
        "preset": name,
        "classes": preset.n_classes,
        "pool": int(task.X.shape[0]),
        "unique_train": task.meta["n_unique_train"],
        "seconds_first_build (compile included)": round(first, 1),
        "seconds_second_build (compile apart)": round(second, 1),
        "seconds_compile (difference)": round(first - second, 1),
        "seconds_sampler_warmup_and_draws": round(diag["seconds_warmup_and_first_draws"], 1),
        "draws_per_chain": diag["draws_per_chain"],
        "min_ess_bulk": round(point["min_ess_bulk"]),
        "min_ess_tail": round(point["min_ess_tail"]),
        "min_ess_bulk_per_second": round(point["min_ess_bulk"] / second, 1),
        "max_rhat": round(point["max_rhat"], 4),
        "median_relative_se": {
            "prob": _relative(arrays["prob"], arrays["prob_se"]),
            "entropy (AU)": _relative(arrays["entropy"], arrays["entropy_se"]),
            "1 - square (Brier AU)": _relative(1 - arrays["square"], arrays["square_se"]),
        },
        "median_mutual_information": float(np.median(mi)),
        "diagnostics_passed": not diag["failures"],
    }


if __name__ == "__main__":
    for name in sys.argv[1:] or ["banknote", "vehicle"]:
        print(json.dumps(bench(name), indent=1), flush=True)
