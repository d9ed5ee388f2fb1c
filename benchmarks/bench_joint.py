"""Cost of the joint and acquisition oracles: per preset, the median seconds (over
``--repeat`` builds in fresh objects) of the task itself, of its joint batches and the
posterior covariance over them (:func:`udora.oracle.joint.joint_batches`, built with every
run), and of the acquisition oracle (:func:`udora.oracle.acquisition.acquisition_oracle`
and the two greedy batches of 50, built only when asked for). ``--pool`` overrides the
presets' pool size (e.g. 5000).

    UDORA_DATA_DIR=../shared/data python benchmarks/bench_joint.py
    UDORA_DATA_DIR=../shared/data python benchmarks/bench_joint.py --presets protein --pool 5000
"""

from __future__ import annotations

import argparse
import statistics
import time

from udora.oracle.acquisition import acquisition_oracle, greedy_batch
from udora.oracle.joint import joint_batches
from udora.oracle.preset import load_preset
from udora.oracle.task import build_task

PRESETS = "concrete,abalone,kin8nm,protein,sarcos"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", default=PRESETS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pool", type=int, default=None)
    args = parser.parse_args()
    print("preset  N  n  task_s  joint_s  acquisition_s  joint/task  acquisition/task")
    for name in args.presets.split(","):
        preset = load_preset(name)
        if args.pool:
            preset = preset.model_copy(update={"pool_size": args.pool})
        times: dict[str, list[float]] = {"task": [], "joint": [], "acq": []}
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            task = build_task(preset, args.seed)
            t1 = time.perf_counter()
            joint_batches(task)
            t2 = time.perf_counter()
            oracle = acquisition_oracle(task)
            for value in ("bald", "variance_reduction"):
                greedy_batch(oracle, 50, value)
            t3 = time.perf_counter()
            for key, dt in (("task", t1 - t0), ("joint", t2 - t1), ("acq", t3 - t2)):
                times[key].append(dt)
        a, b, c = (statistics.median(times[k]) for k in ("task", "joint", "acq"))
        N, n = task.X.shape[0], task.train_idx.shape[0]
        print(f"{name}  {N}  {n}  {a:.2f}  {b:.2f}  {c:.2f}  {b / a:.2f}  {c / a:.2f}", flush=True)


if __name__ == "__main__":
    main()
