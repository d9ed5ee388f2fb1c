"""The cost of ``udora diagnose``: seconds per posterior draw and the scaling in M and K.

For each method, diagnoses one preset at seed 0 in this process (library calls, so the
oracle task is built once): with the smallest M at every K of ``--scales``, and with the
smallest K at every M of ``--draws``. Prints per (method, M, K) the seconds of the
method's own fit, of the M posterior draws and of the M reference fits (total; the first
one, which compiles programs for a new sample size; the median of the later ones), then
per method the log-log slope of the later reference fits' seconds in K (1 for a method
linear in its sample size, up to 3 for an exact GP) and of the total in M (1: the draws
are independent fits). The smallest M must be at least 2. Writes ``bench_diagnose.json``
under ``--out``. Run it on an idle machine.

    python benchmarks/bench_diagnose.py --preset concrete --methods blr,gp_linear,gp_oracle
    python benchmarks/bench_diagnose.py --methods nn_ensemble --draws 3,6 --scales 1,2,4
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np


def measure(preset: str, method: str, draws: int, scale: int, quick: bool) -> dict:
    """One diagnosis in this process; its timings and normalised pool means."""
    from udora.experiments.diagnostics.diagnose import Diagnosis, diagnose
    from udora.experiments.grid.bench import make_grid

    (run,) = make_grid([preset], [method], [0], quick=quick)
    t0 = time.perf_counter()
    record, _ = diagnose(Diagnosis(run, draws, scale))
    wall = time.perf_counter() - t0
    if record["status"] != "ok":
        raise RuntimeError(f"{method} M={draws} K={scale}: {record['error']}")
    t = record["timings"]
    each = record["reference_seconds"]
    return {
        "method": method,
        "draws": draws,
        "scale": scale,
        "wall": wall,
        "fit": t["fit"],
        "posterior_draws": t["draws"],
        "references": t["references"],
        "first": each[0],
        "per_draw": float(np.median(each[1:])),
        "normalised": record["normalised"],
    }


def slope(x: list[float], y: list[float]) -> float:
    return float(np.polyfit(np.log(x), np.log(y), 1)[0]) if len(x) > 1 else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="concrete")
    parser.add_argument("--methods", default="blr,gp_linear,gp_oracle")
    parser.add_argument("--draws", default="3,6,12")
    parser.add_argument("--scales", default="1,2,4,8")
    parser.add_argument("--quick", action="store_true", help="Each method's quick budget.")
    parser.add_argument("--out", type=Path, default=Path("bench-diagnose"))
    args = parser.parse_args()
    draws = sorted(map(int, args.draws.split(",")))
    scales = sorted(map(int, args.scales.split(",")))
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    print(
        f"{'method':<14} {'M':>3} {'K':>3} {'fit s':>7} {'draws s':>8} {'refs s':>8} "
        f"{'first s':>8} {'later s':>8}"
    )
    for method in args.methods.split(","):
        grid = [(draws[0], k) for k in scales] + [(m, scales[0]) for m in draws[1:]]
        for m, k in grid:
            r = measure(args.preset, method, m, k, args.quick)
            rows.append(r)
            print(
                f"{method:<14} {m:>3} {k:>3} {r['fit']:7.2f} {r['posterior_draws']:8.2f} "
                f"{r['references']:8.2f} {r['first']:8.2f} {r['per_draw']:8.2f}",
                flush=True,
            )
    for method in args.methods.split(","):
        in_k = [r for r in rows if r["method"] == method and r["draws"] == draws[0]]
        in_m = [r for r in rows if r["method"] == method and r["scale"] == scales[0]]
        sk = slope([r["scale"] for r in in_k], [r["per_draw"] for r in in_k])
        sm = slope([r["draws"] for r in in_m], [r["references"] for r in in_m])
        print(f"{method}: per-draw seconds ~ K^{sk:.2f}; reference seconds ~ M^{sm:.2f}")
    (args.out / "bench_diagnose.json").write_text(json.dumps(rows, indent=1))
    print(f"wrote {args.out}/bench_diagnose.json")


if __name__ == "__main__":
    main()
