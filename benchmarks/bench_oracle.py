"""Oracle performance: task build, posterior at 100k / 1M points, joint sampling.

Run: ``python benchmarks/bench_oracle.py`` (add ``--quick`` to skip the 1M case). Each
posterior size runs in a fresh process so its peak resident memory is its own. Prints
medians over repeats, after a first call that includes compilation.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

D, N_POOL, N_TRAIN = 8, 5000, 1500
KERNEL = [{"type": "matern32", "variance": 1.1, "lengthscale": list(np.linspace(2.0, 6.5, D))}]


def _synthetic_preset(folder: Path):
    from udora.oracle.preset import parse_preset

    rng = np.random.default_rng(0)
    X = rng.uniform(-1.5, 1.5, size=(N_POOL, D))
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(D)]).assign(
        target=rng.normal(size=N_POOL)
    )
    frame.to_csv(folder / "bench.csv.gz", index=False)
    return parse_preset(
        {
            "name": "bench",
            "suite": "test",
            "source": {"file": "bench.csv.gz"},
            "features": [f"x{j}" for j in range(D)],
            "pool_size": N_POOL,
            "n_train": N_TRAIN,
            "kernel": KERNEL,
            "noise": {"std_min": 0.05, "std_max": 0.15},
            "shift": [0.5, 0.3, 0.15, 0.05, 0.0],
        }
    )


def bench_build(repeats: int = 3) -> dict:
    from udora.oracle.task import build_task

    with tempfile.TemporaryDirectory() as tmp:
        preset = _synthetic_preset(Path(tmp))
        t0 = time.perf_counter()
        build_task(preset, 0, data_dir=tmp)
        first = time.perf_counter() - t0
        times, joint = [], []
        for seed in range(1, repeats + 1):
            t0 = time.perf_counter()
            task = build_task(preset, seed, data_dir=tmp)
            times.append(time.perf_counter() - t0)
            joint.append(task.meta["seconds_sampling"])
    return {
        "build_first_s": first,
        "build_median_s": statistics.median(times),
        "joint_sampling_part_median_s": statistics.median(joint),
    }


def bench_joint(repeats: int = 3) -> dict:
    import jax

    from udora.oracle.gp import sample_joint
    from udora.oracle.kernels import build_kernel

    rng = np.random.default_rng(1)
    Z = rng.normal(size=(N_POOL, D))
    with jax.enable_x64(True):
        kernel = build_kernel(KERNEL, D)
    sample_joint(kernel, Z, 0.0, rng.standard_normal(N_POOL))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        sample_joint(kernel, Z, 0.0, rng.standard_normal(N_POOL))
        times.append(time.perf_counter() - t0)
    return {"joint_sampling_N5000_median_s": statistics.median(times)}


def posterior_worker(m: int) -> dict:
    """Posterior mean/variance at m synthetic points, conditioned on n=1500 (own process)."""
    import jax

    from udora.oracle.gp import Conditioner
    from udora.oracle.kernels import build_kernel

    rng = np.random.default_rng(2)
    Z_S = rng.normal(size=(N_TRAIN, D))
    with jax.enable_x64(True):
        kernel = build_kernel(KERNEL, D)
    cond = Conditioner.fit(kernel, Z_S, rng.normal(size=N_TRAIN), np.full(N_TRAIN, 0.01), 0.0)
    cond.predict(rng.normal(size=(10, D)))  # compile the chunk program once
    Z = rng.normal(size=(m, D))
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    mu, var = cond.predict(Z)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert mu.shape == (m,) and np.all(var >= 0)
    return {
        "points": m,
        "seconds": seconds,
        "peak_rss_mb": peak / 1024,
        "rss_before_mb": base / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="skip the 1M-point posterior")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(posterior_worker(args.worker)))
        return
    print(json.dumps(bench_build()))
    print(json.dumps(bench_joint()))
    for m in (100_000,) if args.quick else (100_000, 1_000_000):
        out = subprocess.run(
            [sys.executable, __file__, "--worker", str(m)],
            check=True,
            capture_output=True,
            text=True,
        )
        print(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
