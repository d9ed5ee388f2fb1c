"""Report figures (matplotlib, Agg): each function draws one figure and returns it.

Every (method, config) is its own entry with one colour (and marker) of
:func:`config_styles`, the same in every figure, and one legend entry
(docs/running.md, "The report").
"""

from __future__ import annotations

import itertools
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from udora.experiments.results import configs, natural_key, per_dataset

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def save_figure(fig, stem: Path) -> list[Path]:
    """Lay ``fig`` out, write ``stem``.png (150 dpi) and ``stem``.pdf, close it; the paths.

    tight_layout's notes about labels it cannot fit are silenced: the figure is written
    either way.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fig.tight_layout()
    paths = [stem.with_suffix(".png"), stem.with_suffix(".pdf")]
    for path in paths:
        fig.savefig(path, dpi=150)
    plt.close(fig)
    return paths


def config_styles(labels: list[str]) -> dict[str, dict]:
    """A distinct ``color`` and ``marker`` per config label (colour-blind-safe palettes).

    Up to 10 labels take tab10, up to 20 tab20; beyond that tab20 colours cycle with
    :data:`MARKERS`, so every (colour, marker) pair stays distinct for up to 160 labels.
    """
    palette = matplotlib.colormaps["tab10" if len(labels) <= 10 else "tab20"].colors
    pairs = itertools.product(MARKERS, palette)  # markers outer: colours first
    return {label: {"color": c, "marker": m} for label, (m, c) in zip(labels, pairs, strict=False)}


def _curve_configs(curves: dict) -> list[str]:
    """Config labels of the curve keys (preset, method, config, seed), sorted like the table."""
    pairs = {(k[1], k[2]) for k in curves}
    return [c for _, c in sorted(pairs, key=lambda p: (p[0], natural_key(p[1])))]


def _bars(table: pd.DataFrame, parts, ylabel: str, fontsize: int = 8):
    """Grouped bars per config of the metrics in ``parts``; mean over datasets with sd bars."""
    labels = configs(table)
    shown = [(m, label) for m, label in parts if m in table]
    width = 0.8 / max(len(shown), 1)
    fig, ax = plt.subplots(figsize=(max(5, 0.9 * len(labels) + 2), 3.8))
    x = np.arange(len(labels))
    for i, (metric, label) in enumerate(shown):
        pivot = per_dataset(table, metric).reindex(columns=labels)
        mean = pivot.mean() if not pivot.empty else pd.Series(np.nan, index=labels)
        sd = pivot.std(ddof=1).fillna(0) if not pivot.empty else 0
        ax.bar(x + (i - (len(shown) - 1) / 2) * width, mean, width, yerr=sd, capsize=2,
               label=label)  # fmt: skip
    ax.set_xticks(x, labels, rotation=30, ha="right", fontsize=fontsize)
    styles = config_styles(labels)
    for tick, label in zip(ax.get_xticklabels(), labels, strict=True):
        tick.set_color(styles[label]["color"])  # the config's colour in the curve figures
    ax.axhline(0, color="k", lw=0.5)
    ax.set(ylabel=ylabel, ylim=(-1, 1))
    if shown:
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def spearman_bars(table: pd.DataFrame):
    """AU and EU Spearman per config, mean over datasets with sd error bars (paper Fig. 2)."""
    parts = (("spearman_au", "AU"), ("spearman_eu", "EU"))
    return _bars(table, parts, "Spearman with oracle target")


def eu_decomposition(table: pd.DataFrame):
    """Spearman of the EU estimate with the full EU target, posterior variance and bias^2."""
    parts = (("spearman_eu", "EU target"), ("spearman_eu_var", "posterior variance"),
             ("spearman_eu_bias", "squared bias"))  # fmt: skip
    return _bars(table, parts, "Spearman of epistemic estimate")


def _in_order(curves: dict, labels: list[str]) -> list:
    """Curve items ordered by config (as in ``labels``), then preset and seed."""
    rank = {label: i for i, label in enumerate(labels)}
    return sorted(curves.items(), key=lambda kv: (rank[kv[0][2]], str(kv[0][0]), kv[0][3]))


def _legend(ax, n: int) -> None:
    if n:
        ax.legend(fontsize=7 if n <= 8 else 5, ncol=1 if n <= 12 else 2)


def risk_coverage(curves: dict, preset: str):
    """Retained mean EU target vs coverage per config on one preset (first seed).

    ``curves`` maps (preset, method, config, seed) to curve summaries of length (P,).
    Solid: ordered by the config's epistemic estimate; dashed: ordered by its own EU
    target (the oracle order; each config has its own target through its bias).
    """
    labels = _curve_configs(curves)
    styles = config_styles(labels)
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    seen = set()
    for (p, _method, config, _seed), c in _in_order(curves, labels):
        if p != preset or "rc_eu" not in c or config in seen:
            continue
        seen.add(config)
        color = styles[config]["color"]
        ax.plot(c["rc_coverage"], c["rc_eu"], label=config, color=color)
        if "rc_eu_oracle" in c:
            ax.plot(c["rc_coverage"], c["rc_eu_oracle"], "--", lw=0.8, color=color)
    ax.set(
        xlabel="coverage",
        ylabel="retained mean EU target",
        title=f"{preset} (dashed: oracle order)",
    )
    _legend(ax, len(seen))
    fig.tight_layout()
    return fig


def calibration(curves: dict, kind: str):
    """Binned mean estimate vs mean oracle target (log-log), per config and preset.

    ``curves`` maps (preset, method, config, seed) to curve summaries; the first seed of
    each (preset, config) is drawn, bins of shape (B,). One colour and marker and one
    legend entry per config; its presets share them.
    """
    labels = _curve_configs(curves)
    styles = config_styles(labels)
    fig, ax = plt.subplots(figsize=(5.5, 4.2))
    lo, hi = np.inf, -np.inf
    drawn, labelled = set(), set()
    for (preset, _method, config, _), c in _in_order(curves, labels):
        est, tgt = c.get(f"calib_{kind}_estimate"), c.get(f"calib_{kind}_target")
        if (preset, config) in drawn or not est or not tgt or None in est or None in tgt:
            continue
        est, tgt = np.asarray(est, dtype=float), np.asarray(tgt, dtype=float)
        keep = (est > 0) & (tgt > 0)
        if keep.any():
            drawn.add((preset, config))
            style = styles[config]
            ax.loglog(est[keep], tgt[keep], "-", lw=0.8, ms=3, **style,
                      label=config if config not in labelled else "_nolegend_")  # fmt: skip
            labelled.add(config)
            lo = min(lo, est[keep].min(), tgt[keep].min())
            hi = max(hi, est[keep].max(), tgt[keep].max())
    if np.isfinite(lo):
        ax.plot([lo, hi], [lo, hi], "k:", lw=1)
    ax.set(xlabel=f"mean {kind.upper()} estimate", ylabel=f"mean {kind.upper()} target",
           title=f"{kind.upper()} calibration (one line per config and preset)")  # fmt: skip
    _legend(ax, len(labelled))
    fig.tight_layout()
    return fig
