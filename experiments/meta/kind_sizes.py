"""How many evaluation points a classification observable needs to rank like the oracle:
the observable scores (log loss, Brier, ECE, accuracy) of each run's stored class
probabilities rescored on random subsets of the pool, ranked against the ``oracle``
metric's ranking on the whole pool (as stored). The regression kind's counterpart, with
its block scores, is :func:`udora.experiments.meta.cells.subsample_taus`.
"""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd

from udora.experiments.meta.taus import SIZE_COLUMNS, goodness, sides
from udora.experiments.results.aggregate import kendall_tau
from udora.experiments.run.records import finished_run, load_predictions
from udora.experiments.tasks import arrays as oracle_arrays


def _pool_labels(run_dir: str, task_hash: str) -> np.ndarray:
    """The realised pool labels ``y`` (N,) of the task stored beside ``run_dir``."""
    from udora.errors import UserError

    root = oracle_arrays.results_root(run_dir)
    found = oracle_arrays.load_arrays(root, task_hash)
    if found is None:
        raise UserError(f"{run_dir}: its task {task_hash} is not stored under {root}/oracle")
    return np.asarray(found[1]["y"]).astype(np.int64)


def subsample_taus(
    table: pd.DataFrame,
    kind: str,
    sizes: tuple[int, ...] = (50, 200, 1000),
    repeats: int = 20,
    seed: int = 0,
    oracle: str = "spearman_eu",
    min_methods: int = 4,
) -> pd.DataFrame:
    """One row per (preset, seed, observable, size): the mean over ``repeats`` subsets of
    Kendall's tau-b between the configs ranked by the observable on the subset and by
    ``oracle`` on the whole pool; ``points`` the subset size used (a size at least N is
    the whole pool, once). Subsets are drawn from the Generator of ``[seed, CRC-32 of the
    preset's name, the task seed, size]``: a cell's rows do not depend on the other cells
    of the table, so a release's rows can be computed preset by preset (its parts)."""
    from udora.scoring.classification import observed_scores

    observable, oracle_side = sides(kind)
    rows: list[dict] = []
    ok = table[table["status"] == "ok"]
    for (preset, run_seed), runs in ok.groupby(["preset", "seed"], sort=True):
        truth = oracle_side[oracle](runs).to_numpy(np.float64)
        runs = runs[np.isfinite(truth)]
        truth = truth[np.isfinite(truth)]
        if len(runs) < min_methods:
            continue
        checked = [finished_run(d) for d in runs["run_dir"]]
        probs = [load_predictions(f)["prob"] for f in checked]
        y = _pool_labels(str(runs["run_dir"].iloc[0]), str(checked[0].record.task_hash))
        N = y.shape[0]
        for size in sizes:
            rng = np.random.default_rng([seed, zlib.crc32(str(preset).encode()), run_seed, size])
            subsets = (
                [np.arange(N)]
                if size >= N
                else [rng.choice(N, size=size, replace=False) for _ in range(repeats)]
            )
            taus: dict[str, list[float]] = {}
            for idx in subsets:
                scored = pd.DataFrame([observed_scores(q[idx], y[idx]) for q in probs])
                seen = goodness(scored, observable)
                for obs in seen:
                    values = seen[obs].to_numpy()
                    fine = np.isfinite(values)
                    if fine.sum() >= min_methods:
                        taus.setdefault(obs, []).append(kendall_tau(values[fine], truth[fine]))
            for obs, values in taus.items():
                rows.append(
                    {
                        "preset": preset,
                        "seed": int(run_seed),
                        "observable": obs,
                        "size": size,
                        "points": min(size, N),
                        "tau": float(np.nanmean(values)),
                    }
                )
    return pd.DataFrame(rows, columns=list(SIZE_COLUMNS))
