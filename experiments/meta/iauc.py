"""The interval AUC of each config's EU intervals on the oracle's exceedance task, per
cell of :func:`udora.experiments.meta.cells.load_cells`."""

from __future__ import annotations

from typing import Any

import pandas as pd

# Nominal levels of the interval-AUC curves (the 0.5/0.8/0.9/0.95 of the first tables among them).
IAUC_LEVELS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)


def iauc_regions(
    cells: list[Any],
    levels: tuple[float, ...] = IAUC_LEVELS,
    quantile: float = 0.9,
) -> pd.DataFrame:
    """Interval AUC of each config's EU intervals on the oracle's exceedance task, per
    cell (:func:`~udora.experiments.meta.cells.load_cells`) and level, with the exact
    posterior's own intervals as the ``oracle`` row
    (:func:`udora.scoring.interval_auc.exceedance_regions`).

    Returns:
        One row per (preset, seed, config, level): ``above``, ``overlap``, ``below``.
    """
    return iauc_frame(
        [row for k, cell in enumerate(cells) for row in cell_regions(k, cell, levels, quantile)]
    )


def iauc_frame(rows: list[dict]) -> pd.DataFrame:
    """The frame of :func:`iauc_regions` from its rows (of :func:`cell_regions`)."""
    return pd.DataFrame(
        rows, columns=["preset", "seed", "config", "level", "above", "overlap", "below"]
    )


def cell_regions(k: int, cell: Any, levels: tuple[float, ...], quantile: float) -> list[dict]:
    """The rows of :func:`iauc_regions` for one cell."""
    from udora.scoring.interval_auc import exceedance_regions

    del k
    rows = []
    task = cell.task
    for i, (config, pred) in enumerate(zip(cell.runs["config"], cell.predictions, strict=True)):
        out = exceedance_regions(
            task.f,
            pred["mean"],
            pred["epistemic"],
            task.post_mean,
            task.post_var,
            quantile=quantile,
            levels=levels,
        )
        sources = [(config, out["method"])] + ([("oracle", out["oracle"])] if i == 0 else [])
        for name, by_level in sources:
            for level, regions in by_level.items():
                rows.append(
                    {
                        "preset": cell.preset,
                        "seed": cell.seed,
                        "config": name,
                        "level": level,
                        **regions,
                    }
                )
    return rows
