"""Collect run folders into one table (one row per run) and the summaries built on it."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from udora.experiments.aggregate import kendall_w
from udora.experiments.legacy import RESULT_GLOB, is_current, legacy_note

HEADLINE = ("spearman_mean_f", "spearman_au", "spearman_eu", "spearman_total")


class LegacyRunsWarning(UserWarning):
    """Run folders of udora 0.1.0 were found and left out (:mod:`udora.experiments.legacy`)."""


def load_runs(results_dir: str | Path) -> tuple[pd.DataFrame, dict[tuple, dict]]:
    """(table, curves): one row per run with spec, status, timings and metrics.

    ``curves`` maps (preset, method, config_hash, seed) to the run's curve summaries.
    Runs written by udora 0.1.0 (no ``"schema": 2``) are left out with a
    :class:`LegacyRunsWarning` that says how many.
    """
    rows, curves, legacy = [], {}, 0
    for path in sorted(Path(results_dir).glob(RESULT_GLOB)):
        rec = json.loads(path.read_text())
        if not is_current(rec):
            legacy += 1
            continue
        row = {
            "preset": rec["preset"],
            "method": rec["method"],
            "config_hash": rec["config_hash"],
            "seed": rec["seed"],
            "status": rec["status"],
            "error": rec.get("error"),
            "run_dir": str(path.parent),
        }
        row.update({f"time_{k}": v for k, v in rec.get("timings", {}).items()})
        row.update({k: (np.nan if v is None else v) for k, v in rec["metrics"].items()})
        rows.append(row)
        curves[(rec["preset"], rec["method"], rec["config_hash"], rec["seed"])] = rec["curves"]
    if legacy:
        warnings.warn(
            f"report excludes {legacy_note(results_dir, legacy)}", LegacyRunsWarning, stacklevel=2
        )
    if not rows:
        old = f"; {legacy} of udora 0.1.0 excluded" if legacy else ""
        raise FileNotFoundError(f"{results_dir}: no run folders ({RESULT_GLOB}){old}")
    return pd.DataFrame(rows), curves


def per_dataset(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Preset x method means over seeds of ``metric`` (ok runs only)."""
    ok = table[table["status"] == "ok"]
    return ok.pivot_table(index="preset", columns="method", values=metric, aggfunc="mean")


def method_summary(table: pd.DataFrame, metrics=HEADLINE) -> pd.DataFrame:
    """Per method: mean and sd over datasets (of per-dataset seed means) of each metric."""
    out = {}
    for m in metrics:
        if m not in table:
            continue
        pivot = per_dataset(table, m)
        out[f"{m} mean"] = pivot.mean(axis=0)
        out[f"{m} sd"] = pivot.std(axis=0, ddof=1)
    summary = pd.DataFrame(out)
    counts = table.groupby("method")["status"].agg(
        runs="size", failed=lambda s: int((s != "ok").sum())
    )
    return summary.join(counts, how="outer")


def ranking_agreement(table: pd.DataFrame, metric: str = "spearman_eu") -> dict[str, float]:
    """Kendall's W of the method rankings by ``metric`` across presets (presets = raters)."""
    pivot = per_dataset(table, metric).dropna(axis=1, how="any")
    if pivot.shape[0] < 2 or pivot.shape[1] < 2:
        return {"kendall_w": float("nan"), "presets": pivot.shape[0], "methods": pivot.shape[1]}
    w = float(kendall_w(pivot.to_numpy()))  # ranks each preset's row itself
    return {"kendall_w": w, "presets": pivot.shape[0], "methods": pivot.shape[1]}
