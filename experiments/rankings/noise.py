"""The noise floor: how much of a score moves with the method's own seed on a fixed task
(docs/rankings.md, "The noise floor").

Runs set ``--set method_seed=M`` to draw the method's randomness (initialisation,
bootstrap, minibatches) from ``M`` while the task seed keeps the data. For each config
(``config_base``: its label without ``method_seed``), preset and task seed, the spread of
a metric over the distinct fit seeds (``method_seed``, or the task seed for a run without
it) is the method's own noise; beside it, the spread over task seeds of the runs whose
fit seed is their task seed (data and method randomness together).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from udora.experiments.rankings.blocks import LABELS, RANKED
from udora.experiments.run.overrides import METHOD_SEED


def noise_floor(table: pd.DataFrame, metrics=tuple(m for m, _ in RANKED)) -> pd.DataFrame:
    """Per (config_base, metric): ``fixed_task_sd``, the median over (preset, task seed) of
    the sd (ddof 1) over fit seeds, with ``tasks`` such groups of at least 2 fit seeds and
    ``fit_seeds`` their median size; ``task_seed_sd``, the median over presets of the sd
    over task seeds of the runs fitted at their task seed; and their ratio; ``metric`` is
    the metric's label, ``metric_key`` its column. Empty when no ok run sets
    ``method_seed``."""
    if {METHOD_SEED, "config_base"} - set(table) or table[METHOD_SEED].isna().all():
        return pd.DataFrame()
    ok = table[table["status"] == "ok"].copy()
    ok["fit_seed"] = ok[METHOD_SEED].fillna(ok["seed"]).astype(int)
    ok = ok.drop_duplicates(["config_base", "preset", "seed", "fit_seed"])
    varied = set(ok.loc[ok[METHOD_SEED].notna(), "config_base"])
    rows = []
    for base in sorted(varied):
        part = ok[ok["config_base"] == base]
        at_task = part[part["fit_seed"] == part["seed"]]
        for metric in metrics:
            if metric not in part or part[metric].isna().all():
                continue
            fixed = part.groupby(["preset", "seed"])[metric].agg(["std", "count"])
            fixed = fixed[fixed["count"] >= 2]
            across = at_task.groupby("preset")[metric].agg(["std", "count"])
            across = across[across["count"] >= 2]
            own = float(fixed["std"].median()) if len(fixed) else np.nan
            data = float(across["std"].median()) if len(across) else np.nan
            rows.append(
                {
                    "config": base,
                    "metric": LABELS.get(metric, metric),
                    "metric_key": metric,
                    "fixed_task_sd": own,
                    "tasks": len(fixed),
                    "fit_seeds": float(fixed["count"].median()) if len(fixed) else np.nan,
                    "task_seed_sd": data,
                    "ratio": own / data if data > 0 else np.nan,
                }
            )
    return pd.DataFrame(rows)


def noise_lines(table: pd.DataFrame, markdown) -> list[str]:
    """The report's "Noise floor" part; [] when no run sets ``method_seed``."""
    floor = noise_floor(table)
    if floor.empty:
        return []
    return [
        "## The noise floor: the method's own seed on a fixed task",
        "",
        "`fixed_task_sd`: the median over (preset, task seed) of the sd over fit seeds "
        "(`--set method_seed=M`; a run without it is fitted at its task seed); "
        "`task_seed_sd`: the median over presets of the sd over task seeds (data and "
        "method randomness together). A difference between two configs smaller than "
        "`fixed_task_sd` is within what the method's own seed moves.",
        "",
        markdown(floor.drop(columns="metric_key").set_index(["config", "metric"]), 4),
        "",
    ]
