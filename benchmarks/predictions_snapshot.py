"""Every method's predictions on one fixed task, to compare two versions bit for bit.

    python benchmarks/predictions_snapshot.py OUT [--compare OTHER] [--methods a,b]
                                              [--early-stopping]

Fits each registered method on concrete's training sample at seed 0 (n = 750, N = 1030;
the real data from ``$UDORA_DATA_DIR``) with small fixed budgets, and writes
``OUT/<method>.npz`` (``mean``, ``aleatoric``, ``epistemic`` and ``member_means`` when
present) plus ``OUT/task.npz`` (the training inputs and targets used). With ``--compare``
the training data are read from ``OTHER/task.npz``, so both versions fit on identical
arrays even when the oracle itself moved, and each method prints ``BIT-EQUAL`` or its
largest relative difference. Used for the 0.1.0 -> 0.2.0 refactor (CHANGELOG.md); the
0.1.0 side ran the same loop with its own field names. ``--early-stopping`` trains the
neural-network methods on the schedule before early stopping became optional
(``early_stopping=True`` and, for SWAG, ``swag_burn_in=0``), to compare with a 0.2.0
snapshot.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from udora import methods
from udora.oracle.task import build_task

BUDGETS = {  # small, fixed budgets: a snapshot of behaviour, not of quality
    "nn_ensemble": {"n_epochs": 20},
    "nn_bagging": {"n_epochs": 20},
    "nn_dropout": {"n_epochs": 20},
    "edl": {"n_epochs": 20},
    "deup": {"n_epochs": 20, "n_epochs_excess": 20},
    "laplace": {"n_epochs": 20},
    "fsp_laplace": {"n_epochs": 20},
    "swag": {"n_epochs": 20, "n_checkpoints": 5},
    "dkl": {"n_steps": 40},
    "ngboost_nig": {"n_estimators": 50},
    "ngboost_bag": {"n_estimators": 50, "n_members": 3},
    "catboost_ps": {"n_estimators": 50, "n_members": 3},
    "catboost_kgb": {"n_estimators": 50, "n_prior_estimators": 20, "n_members": 3},
}


def _largest_relative_difference(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> float:
    if set(a) != set(b) or any(a[k].shape != b[k].shape for k in a):
        return float("inf")
    return max(float(np.max(np.abs(a[k] - b[k]) / (np.abs(a[k]) + 1e-300))) for k in a)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--compare", type=Path, default=None)
    parser.add_argument("--methods", default=",".join(methods.list_methods()))
    parser.add_argument(
        "--early-stopping",
        action="store_true",
        help="early_stopping=True and swag_burn_in=0 where a method has them (0.2.0 schedule)",
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    task = build_task("concrete", 0)
    source = args.compare / "task.npz" if args.compare else None
    if source is not None:
        with np.load(source) as ref:
            X_train, y_train, X = ref["X_train"], ref["y_train"], ref["X"]
    else:
        X_train, y_train, X = task.X_train, task.y_train, task.X
    np.savez(args.out / "task.npz", X_train=X_train, y_train=y_train, X=X)
    for name in args.methods.split(","):
        cls = methods.get_method_class(name)
        overrides = dict(BUDGETS.get(name, {}))
        if args.early_stopping:
            legacy = {"early_stopping": True, "swag_burn_in": 0}
            overrides.update({k: v for k, v in legacy.items() if k in cls.Config.model_fields})
        model = methods.get_method(name, **overrides)
        knowledge = task.knowledge(with_prior=cls.uses_task_prior)
        t0 = time.perf_counter()
        pred = model.fit(X_train, y_train, seed=0, knowledge=knowledge).predict(X)
        arrays = {"mean": pred.mean, "aleatoric": pred.aleatoric, "epistemic": pred.epistemic}
        if pred.member_means is not None:
            arrays["member_means"] = pred.member_means
        np.savez(args.out / f"{name}.npz", **arrays)
        line = f"{name:14s} {time.perf_counter() - t0:6.1f} s"
        if args.compare:
            with np.load(args.compare / f"{name}.npz") as other:
                diff = _largest_relative_difference(dict(other), arrays)
            line += "  BIT-EQUAL" if diff == 0 else f"  max relative difference {diff:.3g}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
