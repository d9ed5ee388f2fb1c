"""The exact oracle's cost on a grid of pool sizes N and training sizes n: time and memory.

For each (N, n) with n <= N, a fresh process builds the task of ``--preset`` with
``pool_size = N`` and ``n_train = n`` (a derived preset; N = the whole table is allowed)
at seed 0 in float64, and reports the build's wall seconds and the process's peak resident
memory. Then fits ``t = c + a n^3 + b N n^2`` (non-negative least squares; c is loading
and compiling) and, per N, the log-log exponent of t in n, and writes ``scaling.json``,
``scaling.csv`` and ``scaling.png`` (measured points and the model) under ``--out``. A
point that fails (out of memory, say) is recorded with its error and the grid goes on.
Run it on an idle machine; the largest points take minutes.

    python benchmarks/bench_oracle_scaling.py --preset diamonds --pools 5000,20000,53940 \\
        --trains 1000,2000,5000,10000,20000 --out bench-scaling
    python benchmarks/bench_oracle_scaling.py --pools 2000 --trains 250,500,1000   # minutes
    python benchmarks/bench_oracle_scaling.py --pools 5000 --trains 1000 --merge   # remeasure one
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np


def worker(preset: str, pool: int, train: int) -> dict:
    """In a fresh process: build the derived task; seconds and peak RSS (GB)."""
    from udora.oracle.preset import load_preset
    from udora.oracle.task import build_task

    derived = load_preset(preset).with_overrides({"pool_size": pool, "n_train": train})
    t0 = time.perf_counter()
    task = build_task(derived, 0)
    seconds = time.perf_counter() - t0
    assert task.X.shape[0] == pool and task.X_train.shape[0] == train
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"N": pool, "n": train, "seconds": seconds, "peak_gb": peak_kb / 2**20}


def measure(preset: str, pool: int, train: int, timeout: float) -> dict:
    """One grid point in a subprocess; its record, or the error it died with."""
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import bench_oracle_scaling "
        "as b; print(json.dumps(b.worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))))"
    )
    argv = [sys.executable, "-c", code, str(Path(__file__).parent), preset, str(pool), str(train)]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"N": pool, "n": train, "error": f"timed out after {timeout:.0f} s"}
    if out.returncode != 0:
        tail = (out.stderr.strip().splitlines() or [f"exit {out.returncode}"])[-1]
        return {"N": pool, "n": train, "error": tail}
    return json.loads(out.stdout.strip().splitlines()[-1])


def fit_model(points: list[dict]) -> dict:
    """``t = c + a n^3 + b N n^2`` (c: loading, compiling) by non-negative least squares,
    and per-N log-log slopes of t in n."""
    from scipy.optimize import nnls

    ok = [p for p in points if "seconds" in p]
    A = np.array([[1.0, p["n"] ** 3, p["N"] * p["n"] ** 2] for p in ok], dtype=float)
    t = np.array([p["seconds"] for p in ok])
    scale = A.max(axis=0)
    coef, _ = nnls(A / scale, t)
    c, a, b = coef / scale
    slopes = {}
    for N in sorted({p["N"] for p in ok}):
        mine = sorted((p["n"], p["seconds"]) for p in ok if p["N"] == N)
        if len(mine) >= 2:
            x, y = np.log([m[0] for m in mine]), np.log([m[1] for m in mine])
            slopes[N] = float(np.polyfit(x, y, 1)[0])
    return {"c": float(c), "a": float(a), "b": float(b), "exponent_in_n": slopes}


def figure(points: list[dict], model: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.2))
    for N in sorted({p["N"] for p in points if "seconds" in p}):
        mine = sorted((p["n"], p["seconds"]) for p in points if p["N"] == N and "seconds" in p)
        n = np.array([m[0] for m in mine], dtype=float)
        slope = model["exponent_in_n"].get(N, float("nan"))
        (line,) = ax.loglog(n, [m[1] for m in mine], "o", label=f"N = {N:,} (slope {slope:.2f})")
        grid = np.geomspace(n.min(), n.max(), 50)
        ax.loglog(grid, model["c"] + model["a"] * grid**3 + model["b"] * N * grid**2, "-",
                  color=line.get_color(), lw=1)  # fmt: skip
    ax.set(title="Exact oracle build time (float64)\npoints: measured; lines: c + a n³ + b N n²",
           xlabel="training points n", ylabel="seconds")  # fmt: skip
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=150)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="diamonds")
    parser.add_argument("--pools", default="2000")
    parser.add_argument("--trains", default="250,500,1000")
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--out", type=Path, default=Path("bench-scaling"))
    parser.add_argument(
        "--merge",
        action="store_true",
        help="Keep the points of --out/scaling.json not measured again.",
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    points = []
    previous = args.out / "scaling.json"
    kept = json.loads(previous.read_text())["points"] if args.merge and previous.is_file() else []
    for pool in map(int, args.pools.split(",")):
        for train in (n for n in map(int, args.trains.split(",")) if n <= pool):
            point = measure(args.preset, pool, train, args.timeout)
            points.append(point)
            shown = (f"{point['seconds']:9.1f} s {point['peak_gb']:6.2f} GB" if "seconds"
                     in point else f"failed: {point['error']}")  # fmt: skip
            print(f"N = {pool:>6}  n = {train:>6}  {shown}", flush=True)
    measured = {(p["N"], p["n"]) for p in points}
    points = sorted([p for p in kept if (p["N"], p["n"]) not in measured] + points,
                    key=lambda p: (p["N"], p["n"]))  # fmt: skip
    model = fit_model(points)
    print(f"model: t = {model['c']:.2f} + {model['a']:.3e} n^3 + {model['b']:.3e} N n^2 (s)")
    for N, slope in model["exponent_in_n"].items():
        print(f"N = {N}: log-log exponent of t in n {slope:.2f}")
    (args.out / "scaling.json").write_text(json.dumps({"points": points, "model": model},
                                                      indent=1))  # fmt: skip
    rows = ["N,n,seconds,peak_gb,error"] + [
        f"{p['N']},{p['n']},{p.get('seconds', '')},{p.get('peak_gb', '')},{p.get('error', '')}"
        for p in points
    ]
    (args.out / "scaling.csv").write_text("\n".join(rows) + "\n")
    figure(points, model, args.out / "scaling.png")
    print(f"wrote {args.out}/scaling.json, scaling.csv, scaling.png")


if __name__ == "__main__":
    main()
