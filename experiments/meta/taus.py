"""Which observable metrics rank UQ methods the way the oracle does (meta-evaluation).

A practitioner ranks methods by what held-out noisy targets show: NLL, CRPS, coverage,
calibration, realised utilities, ensemble spread scores. udora also knows each method's
agreement with the exact targets. For every (preset, seed) cell of a results folder with
at least ``min_methods`` ok configs (each config one "method", keyed as the report keys
them), every observable metric and every oracle metric rank the configs, and Kendall's
tau-b compares the two rankings (:func:`cell_taus`). :func:`pooled_taus` averages a pair's
tau over the seeds of a preset, then over presets, with a percentile bootstrap interval
that resamples presets.

Each metric is first turned into a *goodness* (higher is better, :data:`OBSERVABLE`,
:data:`ORACLE`; :meth:`udora.scoring.declaration.Metric.goodness`): scores and losses are
negated, a coverage becomes minus its distance to the nominal level, a spread-skill ratio
minus the absolute log of it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from udora.experiments.results.aggregate import kendall_tau, kendall_tau_rows
from udora.scoring import registry
from udora.scoring.declaration import Metric, Role

# the columns of the by-size rows (``meta_by_size.csv``), either kind's subsample_taus
SIZE_COLUMNS = ("preset", "seed", "observable", "size", "points", "tau")


def _goodness(m: Metric) -> Callable[[pd.DataFrame], pd.Series]:
    return lambda table: m.goodness(table[m.name])


def _side(role: Role, kind: str = "regression") -> dict[str, Callable[[pd.DataFrame], pd.Series]]:
    """{goodness name: goodness of a table's column} of ``kind``'s metrics with ``role``."""
    metrics = registry.metrics(task=kind, role=role)
    return {m.goodness_name or m.name: _goodness(m) for m in metrics}


# The two sides, each metric's goodness as :mod:`udora.scoring.registry` declares it. The
# block scores (energy, variogram) are not in result.json (they need the covariates):
# :mod:`udora.experiments.meta.cells` computes them.
OBSERVABLE = _side("observable")
ORACLE = _side("oracle")


def sides(kind: str = "regression") -> tuple[dict[str, Callable], dict[str, Callable]]:
    """(observable side, oracle side) of a task kind's metrics: for classification the log
    loss, Brier score, ECE and accuracy against the oracle's EU, AU and total rankings."""
    if kind == "regression":
        return OBSERVABLE, ORACLE
    return _side("observable", kind), _side("oracle", kind)


def goodness(table: pd.DataFrame, metrics: dict[str, Callable]) -> pd.DataFrame:
    """One column per metric of ``metrics`` that ``table`` can compute, higher is better;
    rows as ``table``'s. Metrics whose columns are missing are left out."""
    out = {}
    for name, fn in metrics.items():
        try:
            out[name] = fn(table).astype(float)
        except KeyError:
            continue
    return pd.DataFrame(out, index=table.index)


def cell_taus(table: pd.DataFrame, min_methods: int = 4, kind: str = "regression") -> pd.DataFrame:
    """Kendall's tau-b between every observable and every oracle ranking, per cell.

    Args:
        table: one row per run with ``preset``, ``seed``, ``config``, ``status`` and metric
            columns (:func:`udora.experiments.results.store.load_runs`).
        min_methods: the fewest configs with both metrics finite for a tau to be computed.
        kind: the task kind of the runs, whose metrics make the two sides (:func:`sides`).

    Returns:
        One row per (preset, seed, observable, oracle) with ``tau`` and ``methods`` (the
        configs ranked); pairs with too few finite configs are left out.
    """
    ok = table[table["status"] == "ok"]
    rows = []
    for (preset, seed), cell in ok.groupby(["preset", "seed"], sort=True):
        if cell["config"].duplicated().any():
            raise ValueError(f"{preset}, seed {seed}: a config appears twice; one run each")
        observable, oracle = sides(kind)
        seen, truth = goodness(cell, observable), goodness(cell, oracle)
        S, T = seen.to_numpy(np.float64), truth.to_numpy(np.float64)  # (configs, metrics)
        whole = np.all(np.isfinite(S), axis=0)
        # the observables finite for every config: each oracle's taus in one pass
        fast = {
            j: iter(kendall_tau_rows(S[:, whole].T, T[:, j]))
            for j in range(T.shape[1])
            if np.all(np.isfinite(T[:, j]))
        }
        for i, obs in enumerate(seen):
            for j, orc in enumerate(truth):
                both = np.isfinite(S[:, i]) & np.isfinite(T[:, j])
                if both.sum() < min_methods:
                    continue
                tau = (
                    next(fast[j]) if whole[i] and j in fast else kendall_tau(S[both, i], T[both, j])
                )
                rows.append(
                    {
                        "preset": preset,
                        "seed": seed,
                        "observable": obs,
                        "oracle": orc,
                        "tau": tau,
                        "methods": int(both.sum()),
                    }
                )
    return pd.DataFrame(rows, columns=["preset", "seed", "observable", "oracle", "tau", "methods"])


def pooled_taus(cells: pd.DataFrame, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Per (observable, oracle): tau averaged over each preset's seeds, then over presets;
    a 95% percentile bootstrap interval resampling presets (``n_boot`` resamples from the
    Generator of ``seed``); the number of presets and cells.

    Returns:
        One row per pair: ``observable``, ``oracle``, ``tau``, ``low``, ``high``,
        ``presets``, ``cells``; NaN taus (a constant ranking) are left out.
    """
    rows = []
    valid = cells[np.isfinite(cells["tau"])]
    for (obs, orc), part in valid.groupby(["observable", "oracle"], sort=True):
        per_preset = part.groupby("preset")["tau"].mean().to_numpy()
        rng = np.random.default_rng(seed)  # per pair: an interval never depends on the others
        draws = rng.integers(0, per_preset.size, size=(n_boot, per_preset.size))
        boot = per_preset[draws].mean(axis=1)
        rows.append(
            {
                "observable": obs,
                "oracle": orc,
                "tau": float(per_preset.mean()),
                "low": float(np.quantile(boot, 0.025)),
                "high": float(np.quantile(boot, 0.975)),
                "presets": int(per_preset.size),
                "cells": len(part),
            }
        )
    return pd.DataFrame(
        rows, columns=["observable", "oracle", "tau", "low", "high", "presets", "cells"]
    )
