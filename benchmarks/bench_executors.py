"""Throughput of one grid on each executor: in process, the local pool, Ray.

Runs the same ``udora bench`` grid (default: ``--quick``, seed 0) as fresh subprocesses of
the venv's ``udora`` script, into a fresh folder each, with ``--jobs 1``, ``--jobs J`` and
``--executor ray`` (a local Ray the command starts, one CPU per run), and prints per
executor the wall seconds, runs per minute and the ratio to ``--jobs 1``; then checks that
every executor wrote the same metrics: each against ``--jobs 1`` (whose one run may use
every core, so BLAS and XLA may sum in another order), and Ray against ``--jobs J`` (the
same cores per run), as runs with equal metrics and the largest relative difference.
Every command shares the JAX persistent compilation cache under ``--out``, warmed by one
untimed ``--jobs 1`` pass first, so the figures compare executors, not compilers. Run it
on an idle machine.

    python benchmarks/bench_executors.py --jobs 2 --out bench-executors
    python benchmarks/bench_executors.py --presets concrete --methods blr,gp_oracle --seeds 0,1
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

UDORA = str(Path(sys.executable).with_name("udora"))


def grid_args(args: argparse.Namespace) -> list[str]:
    """The grid's options, shared by every executor."""
    out = ["--seeds", args.seeds]
    if args.presets or args.methods:
        out += ["--presets", args.presets or "concrete", "--methods", args.methods or "blr"]
    else:
        out += ["--quick"]
    return out


def timed(argv: list[str], env: dict[str, str], log: Path) -> float:
    """Run ``argv`` (output appended to ``log``); its wall seconds; raises on failure."""
    t0 = time.perf_counter()
    with log.open("a") as fh:
        fh.write(f"$ {' '.join(argv)}\n")
        fh.flush()
        subprocess.run(argv, stdout=fh, stderr=subprocess.STDOUT, env=env, check=True)
    return time.perf_counter() - t0


def metrics(folder: Path) -> dict[str, np.ndarray]:
    """Every ok run's metrics under ``folder``, by run folder, as a float vector."""
    out = {}
    for path in sorted(folder.glob("*/*/*/seed-*/result.json")):
        record = json.loads(path.read_text())
        if record["status"] == "ok":
            values = [np.nan if v is None else v for _, v in sorted(record["metrics"].items())]
            out[str(path.parent.relative_to(folder))] = np.array(values, dtype=float)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--presets", default=None)
    parser.add_argument("--methods", default=None)
    parser.add_argument("--out", type=Path, default=Path("bench-executors"))
    parser.add_argument("--no-ray", action="store_true", help="Skip the Ray executor.")
    args = parser.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    env = {**os.environ, "UDORA_JAX_CACHE": str((args.out / "jax-cache").resolve())}
    log = args.out / "commands.log"
    common = [UDORA, "bench", *grid_args(args)]
    timed([*common, "--out", str(args.out / "warm-up")], env, log)
    variants = {"jobs 1": ["--jobs", "1"], f"jobs {args.jobs}": ["--jobs", str(args.jobs)]}
    if not args.no_ray:
        variants["ray"] = ["--executor", "ray", "--cpus-per-run", "1"]
    seconds, found = {}, {}
    for name, extra in variants.items():
        folder = args.out / name.replace(" ", "-")
        seconds[name] = timed([*common, *extra, "--out", str(folder)], env, log)
        found[name] = metrics(folder)
    runs = len(found["jobs 1"])
    print(f"{runs} ok runs per executor ({' '.join(grid_args(args))}); {os.cpu_count()} cores")
    print(f"{'executor':<10} {'wall s':>8} {'runs/min':>9} {'speed-up':>9}")
    for name, s in seconds.items():
        print(f"{name:<10} {s:8.1f} {60 * runs / s:9.1f} {seconds['jobs 1'] / s:9.2f}")
    pairs = [(name, "jobs 1") for name in found if name != "jobs 1"]
    if "ray" in found:  # the same cores per run (one): the files should agree exactly
        pairs.append(("ray", f"jobs {args.jobs}"))
    for name, ref in pairs:
        other, base = found[name], found[ref]
        same = sorted(other) == sorted(base)
        gaps = [
            np.abs(other[k] - base[k]) / np.maximum(np.abs(base[k]), 1e-12)
            for k in base
            if k in other
        ]
        worst = max((float(np.nanmax(g, initial=0.0)) for g in gaps), default=float("nan"))
        equal = sum(np.array_equal(other[k], base[k], equal_nan=True) for k in base if k in other)
        print(
            f"{name} vs {ref}: same runs {same}; {equal} of {len(base)} runs with equal "
            f"metrics; largest relative metric difference {worst:.2e}"
        )


if __name__ == "__main__":
    main()
