"""Summaries of a results table (:func:`udora.experiments.results.store.load_runs`): configs in
reading order, preset x config means, the per-config summary over presets, and how well the
presets agree on the ranking.

Every summary averages the seeds of one config only, never over configs; a preset's mean
is over its seeds, and a config's mean and sd are over presets (docs/running.md, "The
report").
"""

from __future__ import annotations

import re

import pandas as pd

from udora.experiments.results.aggregate import kendall_w
from udora.scoring.registry import names

# The metrics of report.md's headline tables.
HEADLINE = names(role="headline")


def natural_key(label: str) -> tuple:
    """Sort key that orders numbers in a label by value: ``width=16`` before ``width=128``."""
    parts = re.split(r"(-?\d+(?:\.\d+)?(?:[eE]-?\d+)?)", label)
    return tuple((0, float(p), "") if i % 2 else (1, 0.0, p) for i, p in enumerate(parts))


def configs(table: pd.DataFrame) -> list[str]:
    """The config labels of ``table`` by method, then numbers by value: every entry's order."""
    pairs = table[["method", "config"]].drop_duplicates()
    ordered = sorted(
        pairs.itertuples(index=False, name=None), key=lambda p: (p[0], natural_key(p[1]))
    )
    return [c for _, c in ordered]


def per_dataset(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Preset x config means over seeds of ``metric`` (ok runs only); columns are labels.

    Returns shape (presets, configs); an empty frame when no run has ``metric``.
    """
    ok = table[table["status"] == "ok"]
    if metric not in ok or ok[metric].notna().sum() == 0:
        return pd.DataFrame(index=pd.Index([], name="preset"))
    pivot = ok.pivot_table(index="preset", columns="config", values=metric, aggfunc="mean")
    pivot = pivot.reindex(columns=[c for c in configs(table) if c in pivot.columns])
    pivot.columns.name = "config"
    return pivot


def method_summary(table: pd.DataFrame, metrics=HEADLINE) -> pd.DataFrame:
    """Per (method, config): mean and sd over datasets of per-dataset seed means; counts.

    ``presets`` counts the presets the config has an ok run on (what its means are over,
    where a metric is finite on all of them; an sd needs 2); ``runs`` and ``failed`` count
    that config's runs only. Index: (method, config).
    """
    order = configs(table)
    method_of = table.drop_duplicates("config").set_index("config")["method"]
    out = {}
    for m in metrics:
        pivot = per_dataset(table, m)
        if pivot.empty:
            continue
        out[f"{m} mean"] = pivot.mean(axis=0)
        out[f"{m} sd"] = pivot.std(axis=0, ddof=1)
    summary = pd.DataFrame(out, index=pd.Index(order, name="config"))
    counts = table.groupby("config")["status"].agg(
        runs="size", failed=lambda s: int((s != "ok").sum())
    )
    ok = table[table["status"] == "ok"]
    presets = ok.groupby("config")["preset"].nunique().reindex(summary.index, fill_value=0)
    summary = summary.assign(presets=presets.astype(int)).join(counts, how="left")
    summary.insert(0, "method", method_of.reindex(summary.index).to_numpy())
    return summary.reset_index().set_index(["method", "config"])


def ranking_agreement(table: pd.DataFrame, metric: str = "spearman_eu") -> dict[str, float]:
    """Kendall's W of the config rankings by ``metric`` across presets (presets = raters).

    Each (method, config) is its own ranked item; ``methods`` counts those items.
    """
    pivot = per_dataset(table, metric).dropna(axis=1, how="any")
    if pivot.shape[0] < 2 or pivot.shape[1] < 2:
        return {"kendall_w": float("nan"), "presets": pivot.shape[0], "methods": pivot.shape[1]}
    w = float(kendall_w(pivot.to_numpy()))  # ranks each preset's row itself
    return {"kendall_w": w, "presets": pivot.shape[0], "methods": pivot.shape[1]}
