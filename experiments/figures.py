"""Report figures (matplotlib, Agg): each function draws one figure and returns it."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from udora.experiments.results import per_dataset


def spearman_bars(table: pd.DataFrame):
    """AU and EU Spearman per method, mean over datasets with sd error bars (paper Fig. 2)."""
    fig, ax = plt.subplots(figsize=(max(5, 0.9 * table["method"].nunique() + 2), 3.5))
    methods = sorted(table["method"].unique())
    x = np.arange(len(methods))
    for i, (metric, label) in enumerate((("spearman_au", "AU"), ("spearman_eu", "EU"))):
        pivot = per_dataset(table, metric).reindex(columns=methods)
        ax.bar(x + (i - 0.5) * 0.38, pivot.mean(), 0.38, yerr=pivot.std(ddof=1).fillna(0),
               capsize=3, label=label)  # fmt: skip
    ax.set_xticks(x, methods, rotation=30, ha="right")
    ax.axhline(0, color="k", lw=0.5)
    ax.set(ylabel="Spearman with oracle target", ylim=(-1, 1))
    ax.legend()
    fig.tight_layout()
    return fig


def risk_coverage(curves: dict, preset: str):
    """Retained mean EU target vs coverage per method on one preset (first seed).

    Solid: ordered by the method's epistemic estimate; dashed: ordered by its own EU
    target (the oracle order; each method has its own target through its bias).
    """
    fig, ax = plt.subplots(figsize=(5, 3.5))
    seen = set()
    for (p, method, _, _seed), c in sorted(curves.items()):
        if p != preset or "rc_eu" not in c or method in seen:
            continue
        seen.add(method)
        (line,) = ax.plot(c["rc_coverage"], c["rc_eu"], label=method)
        if "rc_eu_oracle" in c:
            ax.plot(c["rc_coverage"], c["rc_eu_oracle"], "--", lw=0.8, color=line.get_color())
    ax.set(
        xlabel="coverage",
        ylabel="retained mean EU target",
        title=f"{preset} (dashed: oracle order)",
    )
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def calibration(curves: dict, kind: str):
    """Binned mean estimate vs mean oracle target (log-log), one line per method and preset."""
    fig, ax = plt.subplots(figsize=(5, 4))
    lo, hi = np.inf, -np.inf
    for (preset, method, _, _), c in sorted(curves.items()):
        est, tgt = c.get(f"calib_{kind}_estimate"), c.get(f"calib_{kind}_target")
        if not est or not tgt or None in est or None in tgt:
            continue
        est, tgt = np.asarray(est), np.asarray(tgt)
        keep = (est > 0) & (tgt > 0)
        if keep.any():
            ax.loglog(est[keep], tgt[keep], ".-", lw=0.8, label=f"{method} / {preset}")
            lo, hi = (
                min(lo, est[keep].min(), tgt[keep].min()),
                max(hi, est[keep].max(), tgt[keep].max()),
            )
    if np.isfinite(lo):
        ax.plot([lo, hi], [lo, hi], "k:", lw=1)
    ax.set(xlabel=f"mean {kind.upper()} estimate", ylabel=f"mean {kind.upper()} target",
           title=f"{kind.upper()} calibration")  # fmt: skip
    ax.legend(fontsize=5, ncol=2)
    fig.tight_layout()
    return fig


def eu_decomposition(table: pd.DataFrame):
    """Spearman of the EU estimate with the full EU target, posterior variance and bias^2."""
    parts = (("spearman_eu", "EU target"), ("spearman_eu_var", "posterior variance"),
             ("spearman_eu_bias", "squared bias"))  # fmt: skip
    methods = sorted(table["method"].unique())
    fig, ax = plt.subplots(figsize=(max(5, 1.1 * len(methods) + 2), 3.5))
    x = np.arange(len(methods))
    for i, (metric, label) in enumerate(parts):
        if metric in table:
            pivot = per_dataset(table, metric).reindex(columns=methods)
            ax.bar(x + (i - 1) * 0.27, pivot.mean(), 0.27, yerr=pivot.std(ddof=1).fillna(0),
                   capsize=2, label=label)  # fmt: skip
    ax.set_xticks(x, methods, rotation=30, ha="right")
    ax.axhline(0, color="k", lw=0.5)
    ax.set(ylabel="Spearman of epistemic estimate", ylim=(-1, 1))
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
