"""Collect run folders into one table (one row per run) and the summaries built on it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from udora.experiments.aggregate import kendall_w

HEADLINE = ("spearman_mean_f", "spearman_au", "spearman_eu", "spearman_total")


def load_runs(results_dir: str | Path) -> tuple[pd.DataFrame, dict[tuple, dict]]:
    """(table, curves): one row per run with spec, status, timings and metrics.

    ``curves`` maps (preset, method, config_hash, seed) to the run's curve summaries.
    """
    rows, curves = [], {}
    for path in sorted(Path(results_dir).glob("*/*/*/seed-*/result.json")):
        rec = json.loads(path.read_text())
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
    if not rows:
        raise FileNotFoundError(f"{results_dir}: no run folders (*/*/*/seed-*/result.json)")
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
