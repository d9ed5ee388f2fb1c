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

from synthetic import D, N, time_method

TREE_METHODS = ("ngboost_nig", "ngboost_bag", "catboost_ps", "catboost_kgb")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--methods", nargs="+", default=list(TREE_METHODS))
    args = parser.parse_args()
    print(f"{N} x {D} training points, {N} test points, {os.cpu_count()} CPUs, default configs")
    print(f"median of {args.repeats} runs")
    print(f"{'method':<14}{'fit s':>9}{'predict s':>11}{'total s':>9}{'rmse':>8}")
    for name in args.methods:
        r = time_method(name, args.repeats)
        print(
            f"{name:<14}{r['fit_s']:>9.2f}{r['predict_s']:>11.3f}{r['total_s']:>9.2f}"
            f"{r['rmse']:>8.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
