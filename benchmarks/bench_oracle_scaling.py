"""The exact oracle's cost on a grid of pool sizes N and training sizes n: time and memory.

For each (N, n) with n <= N, a fresh process builds the task of ``--preset`` with
``pool_size = N`` and ``n_train = n`` (a derived preset; N = the whole table is allowed)
at seed 0 in float64, and reports the build's wall seconds and the process's peak resident
memory. Then fits ``t = c + d N + a n^3 + b N n^2`` (non-negative least squares on
relative errors; c is starting and compiling, d N loading the pool) and, per N, the
log-log slope of t in n between the two largest n, and writes ``scaling.json``,
``scaling.csv``, ``scaling.md`` (a table) and ``scaling.png`` (measured points and the
model) under ``--out``. A point that fails (out of memory, say) is recorded with its
error and the grid goes on. Run it on an idle machine; the largest points take minutes.

    python benchmarks/bench_oracle_scaling.py --preset diamonds --pools 5000,20000,53940 \\
        --trains 1000,2000,5000,10000,20000 --out bench-scaling
    python benchmarks/bench_oracle_scaling.py --pools 2000 --trains 250,500,1000   # minutes
    python benchmarks/bench_oracle_scaling.py --pools 5000 --trains 1000 --merge   # remeasure one
    python benchmarks/bench_oracle_scaling.py --refit --out bench-scaling   # fit and draw again
"""

from __future__ import annotations

import argparse
import json
import resource
import signal
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
        died = (
            f"killed by {signal.Signals(-out.returncode).name}"
            if out.returncode < 0
            else f"exit {out.returncode}"
        )
        tail = (out.stderr.strip().splitlines() or [died])[-1]
        return {"N": pool, "n": train, "error": tail}
    return json.loads(out.stdout.strip().splitlines()[-1])


def fit_model(points: list[dict]) -> dict:
    """``t = c + d N + a n^3 + b N n^2`` (c: starting, compiling; d N: loading the pool, its
    noise model and shift bins) by non-negative least squares on
    relative errors (each point weighted by 1 / t, so seconds and minutes count alike),
    and per N the log-log slope of t in n between its two largest n (the cubic and
    quadratic terms dominate there; a slope over all n is flattened by c)."""
    from scipy.optimize import nnls

    ok = [p for p in points if "seconds" in p]
    A = np.array([[1.0, p["N"], p["n"] ** 3, p["N"] * p["n"] ** 2] for p in ok], dtype=float)
    t = np.array([p["seconds"] for p in ok])
    A, rhs = A / t[:, None], np.ones_like(t)
    scale = A.max(axis=0)
    coef, _ = nnls(A / scale, rhs)
    c, d, a, b = coef / scale
    slopes = {}
    for N in sorted({p["N"] for p in ok}):
        mine = sorted((p["n"], p["seconds"]) for p in ok if p["N"] == N)
        if len(mine) >= 2:
            (n0, t0), (n1, t1) = mine[-2:]
            slopes[N] = float(np.log(t1 / t0) / np.log(n1 / n0))
    return {"c": float(c), "d": float(d), "a": float(a), "b": float(b), "exponent_in_n": slopes}


def markdown_table(points: list[dict], model: dict) -> str:
    """The points as a Markdown table: N, n, seconds, the model's seconds, peak GB."""
    lines = ["| N | n | seconds | model | peak GB |", "|---:|---:|---:|---:|---:|"]
    for p in points:
        if "seconds" not in p:
            lines.append(f"| {p['N']:,} | {p['n']:,} | failed: {p['error']} | | |")
            continue
        fitted = (
            model["c"]
            + model["d"] * p["N"]
            + model["a"] * p["n"] ** 3
            + model["b"] * p["N"] * p["n"] ** 2
        )
        lines.append(
            f"| {p['N']:,} | {p['n']:,} | {p['seconds']:.1f} | {fitted:.1f} | {p['peak_gb']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def figure(points: list[dict], model: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.2))
    for N in sorted({p["N"] for p in points if "seconds" in p}):
        mine = sorted((p["n"], p["seconds"]) for p in points if p["N"] == N and "seconds" in p)
        n = np.array([m[0] for m in mine], dtype=float)
        slope = model["exponent_in_n"].get(N, float("nan"))
        (line,) = ax.loglog(
            n, [m[1] for m in mine], "o", label=f"N = {N:,} (last slope {slope:.2f})"
        )
        grid = np.geomspace(n.min(), n.max(), 50)
        fitted = model["c"] + model["d"] * N + model["a"] * grid**3 + model["b"] * N * grid**2
        ax.loglog(grid, fitted, "-", color=line.get_color(), lw=1)
    ax.set(
        title="Exact oracle build time (float64)\npoints: measured; lines: c + d N + a n³ + b N n²",
        xlabel="training points n",
        ylabel="seconds",
    )
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
        "--refit",
        action="store_true",
        help="Measure nothing: fit and draw the points of --out/scaling.json again.",
    )
    parser.add_argument(
        "--merge",
        action="store_true",
        help="Keep the points of --out/scaling.json not measured again.",
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    points = []
    previous = args.out / "scaling.json"
    merge = args.merge or args.refit
    kept = json.loads(previous.read_text())["points"] if merge and previous.is_file() else []
    for pool in [] if args.refit else map(int, args.pools.split(",")):
        for train in (n for n in map(int, args.trains.split(",")) if n <= pool):
            point = measure(args.preset, pool, train, args.timeout)
            points.append(point)
            shown = (
                f"{point['seconds']:9.1f} s {point['peak_gb']:6.2f} GB"
                if "seconds" in point
                else f"failed: {point['error']}"
            )
            print(f"N = {pool:>6}  n = {train:>6}  {shown}", flush=True)
    measured = {(p["N"], p["n"]) for p in points}
    points = sorted(
        [p for p in kept if (p["N"], p["n"]) not in measured] + points,
        key=lambda p: (p["N"], p["n"]),
    )
    model = fit_model(points)
    print(
        f"model: t = {model['c']:.2f} + {model['d']:.3e} N + {model['a']:.3e} n^3 + "
        f"{model['b']:.3e} N n^2 (s)"
    )
    for N, slope in model["exponent_in_n"].items():
        print(f"N = {N}: log-log slope of t in n between its two largest n {slope:.2f}")
    (args.out / "scaling.json").write_text(json.dumps({"points": points, "model": model}, indent=1))
    rows = ["N,n,seconds,peak_gb,error"] + [
        f"{p['N']},{p['n']},{p.get('seconds', '')},{p.get('peak_gb', '')},{p.get('error', '')}"
        for p in points
    ]
    (args.out / "scaling.csv").write_text("\n".join(rows) + "\n")
    (args.out / "scaling.md").write_text(markdown_table(points, model))
    figure(points, model, args.out / "scaling.png")
    print(f"wrote {args.out}/scaling.json, scaling.csv, scaling.md, scaling.png")


if __name__ == "__main__":
    main()
