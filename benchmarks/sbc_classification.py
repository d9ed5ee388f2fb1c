"""Simulation-based calibration of the classification sampler at a preset's size.

Run: ``python benchmarks/sbc_classification.py [--n-rep 100] [--u 750] [--d 5]
[--classes 2] [--seed 0]``. The same check as the slow test
(tests/oracle/classification/test_cls_sbc.py, 1000 replications at 20 inputs), here with
fewer replications at the size of a preset's training sample: ``u`` inputs in ``d``
dimensions (RBF, variance 2, lengthscale 1 per dimension), one label each, 300 warm-up
steps and 99 draws thinned by 4 per replication. Prints each statistic's chi-squared
p-value on 20 bins (alpha = 0.001 per statistic; with 100 replications the test has
little power against small miscalibration, so it is a check that nothing is grossly
wrong at scale, beside the 1000-replication test at small n) and the wall seconds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests/oracle/classification"))

import sbc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-rep", type=int, default=100)
    parser.add_argument("--u", type=int, default=750)
    parser.add_argument("--d", type=int, default=5)
    parser.add_argument("--classes", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    t0 = time.perf_counter()
    ranks = sbc.run(
        args.n_rep, args.classes, seed=args.seed, u=args.u, d=args.d, labels_per_input=1
    )
    seconds = time.perf_counter() - t0
    p = sbc.p_values(ranks)
    print(f"SBC: {args.n_rep} replications, u = {args.u}, d = {args.d}, C = {args.classes}")
    for name, value in p.items():
        print(f"  {name:10s} p = {value:.4f}")
    print(f"  smallest p {min(p.values()):.4f} (alpha 0.001); {seconds:.0f} s")


if __name__ == "__main__":
    main()
