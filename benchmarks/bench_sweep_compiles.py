"""Which NN methods compile again at every trial of a sweep.

Runs ``--trials`` trials of each method in one process, as one worker of ``udora tune``
does (``udora.experiments.tuning.trials.run_trial``, with the task built once), each at
``--width`` with the other numbers drawn from the method's search space, and prints each
trial's compile seconds (JAX's own compile events, as the trials record them) and the
number of training programs cached. A method that compiles only in its first trial serves
its space with one program per width.

    UDORA_JAX_CACHE=off python benchmarks/bench_sweep_compiles.py --methods edl,nn_bagging,deup
"""

from __future__ import annotations

import argparse
import tempfile

import numpy as np


def draw(spec: dict, rng: np.random.Generator):
    """One value of a W&B sweep-parameter spec."""
    if "values" in spec:
        return spec["values"][rng.integers(len(spec["values"]))]
    lo, hi = spec["min"], spec["max"]
    if spec["distribution"] == "log_uniform_values":
        return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))
    if spec["distribution"] == "int_uniform":
        return int(rng.integers(lo, hi + 1))
    return float(rng.uniform(lo, hi))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--methods",
        default="nn_ensemble,nn_dropout,nn_bagging,edl,deup,deup_unbiased,laplace,fsp_laplace,swag",
    )
    parser.add_argument("--preset", default="concrete")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--width", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=3, help="n_epochs of every trial")
    parser.add_argument("--draw-seed", type=int, default=0, help="of the configs' draws")
    parser.add_argument("--task-seed", type=int, default=100, help="of the task tuned on")
    args = parser.parse_args()

    from udora import methods
    from udora.experiments.tuning.trials import run_trial
    from udora.methods.nn import trainer

    rng = np.random.default_rng(args.draw_seed)
    folder = tempfile.mkdtemp()
    k = 0
    print(f"{'method':<16}{'trial':>6}{'status':>8}{'trial s':>9}{'compile s':>11}{'programs':>10}")
    for name in args.methods.split(","):
        space = methods.get_method_class(name).Config().search_space()
        for t in range(args.trials):
            params = {p: draw(spec, rng) for p, spec in space.items()}
            params.update(width=args.width, n_epochs=args.epochs)
            record = run_trial(
                folder,
                k,
                {"preset": args.preset, "method": name, "seed": args.task_seed, **params},
                None,
            )
            k += 1
            timings = record["timings"]
            print(
                f"{name:<16}{t:>6}{record['status']:>8}{timings['trial']:>9.1f}"
                f"{timings['compile']:>11.1f}{trainer._epoch_program.cache_info().currsize:>10}",
                flush=True,
            )


if __name__ == "__main__":
    main()
