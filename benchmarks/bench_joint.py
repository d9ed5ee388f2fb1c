"""Cost of the joint oracle: seconds to build a task's joint batches and the posterior
covariance over them (:func:`udora.oracle.joint.joint_batches`), against the seconds of
the task itself, per preset, median of ``--repeat`` builds in fresh objects.

    UDORA_DATA_DIR=../shared/data python benchmarks/bench_joint.py
    python benchmarks/bench_joint.py --presets concrete,kin8nm --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import time

from udora.oracle.joint import joint_batches
from udora.oracle.task import build_task

PRESETS = "concrete,abalone,kin8nm,protein,sarcos"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", default=PRESETS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("preset  N  n  task_s  joint_s  ratio")
    for name in args.presets.split(","):
        task_s, joint_s = [], []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            task = build_task(name, args.seed)
            t1 = time.perf_counter()
            joint_batches(task)
            joint_s.append(time.perf_counter() - t1)
            task_s.append(t1 - t0)
        a, b = statistics.median(task_s), statistics.median(joint_s)
        N, n = task.X.shape[0], task.train_idx.shape[0]
        print(f"{name}  {N}  {n}  {a:.2f}  {b:.2f}  {b / a:.2f}", flush=True)


if __name__ == "__main__":
    main()
