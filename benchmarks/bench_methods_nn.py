"""Fit + predict time of edl, deup, swag, laplace, fsp_laplace and dkl on a 1500 x 8 task.

Run: ``python benchmarks/bench_methods_nn.py`` (``--repeats``, ``--methods`` to narrow it,
``--set field=value`` to override a config field of every method run, e.g. ``--methods dkl
--set batch_size=null`` for full-batch DKL training, which at n = 1500 costs about 2 s per
marginal-likelihood step on two CPU cores). Default configs otherwise. Each repeat fits
on the same 1500 training points of :mod:`synthetic` with run seed = repeat index and
predicts at 1500 fresh points. The first repeat includes JIT compilation
(shown as ``first fit s``); the medians over all repeats are printed with the test RMSE
against the noise-free function and the median EU / AU ratio as sanity checks.
"""

from __future__ import annotations

import argparse
import os

import yaml
from synthetic import D, N, time_method

NN_METHODS = ("edl", "deup", "swag", "laplace", "fsp_laplace", "dkl")


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
        r = time_method(name, args.repeats, overrides)
        print(
            f"{name:<13}{r['first_fit_s']:>12.2f}{r['fit_s']:>8.2f}{r['predict_s']:>11.3f}"
            f"{r['rmse']:>8.3f}{r['eu_au']:>9.3g}",
            flush=True,
        )


if __name__ == "__main__":
    main()
