"""Ablation figures (matplotlib, Agg): each function draws one figure and returns it.

The inputs are the frames of :mod:`udora.experiments.studies.analysis`; a method keeps the colour
and marker of :func:`udora.experiments.results.figures.config_styles` in every figure. Heatmaps
use a diverging map with symmetric limits, so white is 0 and red is a drop.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from udora.experiments.results.figures import config_styles
from udora.oracle.atomic import write_figure


def save(fig: Figure, out, stem: str) -> str:
    """Write ``fig`` as ``stem``.png and .pdf into the folder ``out``, close it; the PNG name."""
    for ext in ("png", "pdf"):
        write_figure(out / f"{stem}.{ext}", fig, dpi=130)
    plt.close(fig)
    return f"{stem}.png"


def level_label(level) -> str:
    """A level as tick text: 20.0 -> "20"."""
    if isinstance(level, float) and level.is_integer():
        return str(int(level))
    return str(level)


def _heatmap(frame: pd.DataFrame, title: str, xlabel: str, ylabel: str, bar: str) -> Figure:
    """Annotated rows x columns heatmap of ``frame`` (shape (R, C)), diverging about 0."""
    values = frame.to_numpy(dtype=float)
    finite = np.abs(values[np.isfinite(values)])
    lim = max(float(finite.max()) if finite.size else 0.0, 1e-9)
    rows, cols = values.shape
    width = max(6.0, 0.9 * cols + 3.5, 0.11 * len(title) + 1.0)
    fig, ax = plt.subplots(figsize=(width, max(3.0, 0.45 * rows + 2.0)), layout="constrained")
    ax.set(xlabel=xlabel, ylabel=ylabel)
    ax.set_title(title, wrap=True)
    if values.size == 0:  # e.g. a metric undefined for every run
        ax.text(0.5, 0.5, "no finite values", ha="center", va="center", transform=ax.transAxes)
        return fig
    image = ax.imshow(np.ma.masked_invalid(values), cmap="RdBu", vmin=-lim, vmax=lim, aspect="auto")
    for (i, j), v in np.ndenumerate(values):
        text = f"{v:.2f}" if np.isfinite(v) else "n/a"
        dark = np.isfinite(v) and abs(v) > 0.6 * lim
        ax.text(
            j, i, text, ha="center", va="center", fontsize=7, color="white" if dark else "black"
        )
    ax.set_xticks(range(cols), [level_label(c) for c in frame.columns], rotation=30, ha="right")
    ax.set_yticks(range(rows), [str(r) for r in frame.index])
    fig.colorbar(image, ax=ax, label=bar, shrink=0.9)
    return fig


def slope_heatmap(slopes: pd.DataFrame, metric: str, xname: str) -> Figure:
    """OLS slope per method x preset (:func:`~udora.experiments.studies.analysis.slopes`, index
    (method, preset), column ``slope``), annotated with 2 decimals."""
    grid = slopes["slope"].astype(float).unstack("preset")
    return _heatmap(grid, f"Slope of {metric} per unit of {xname}", "preset", "method", "slope")


def shift_heatmap(shifts: pd.DataFrame, metric: str, factor: str) -> Figure:
    """Mean shift from the cell's mean over levels per method x level
    (:func:`~udora.experiments.studies.analysis.method_shifts`, shape (methods, L))."""
    return _heatmap(
        shifts, f"{metric}: shift from the mean over {factor} levels", factor, "method", "shift"
    )


def level_curves(
    runs: pd.DataFrame, levels: Sequence, pos: dict, metric: str, factor: str
) -> Figure:
    """Median over presets and seeds of ``metric`` per level, one line per method.

    ``runs``: :func:`~udora.experiments.studies.analysis.runs` (columns ``method``, ``level``,
    ``value``; NaN values are skipped); ``pos`` maps a level to its x. The band spans the
    25th to 75th percentile.
    """
    methods = sorted(runs["method"].unique())
    styles = config_styles(methods)
    x = np.array([pos[level] for level in levels])
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for method in methods:
        mine = runs[runs["method"] == method]
        q = np.full((3, len(levels)), np.nan)
        for j, level in enumerate(levels):
            v = mine.loc[mine["level"] == level, "value"].dropna().to_numpy()
            if v.size:
                q[:, j] = np.quantile(v, [0.25, 0.5, 0.75])
        ax.plot(x, q[1], label=method, **styles[method])
        ax.fill_between(x, q[0], q[2], color=styles[method]["color"], alpha=0.15, lw=0)
    ax.set_xticks(x, [level_label(level) for level in levels])
    ax.set(
        title=f"{metric} by {factor}\n(median and 25-75% band over presets and seeds)",
        xlabel=factor,
        ylabel=metric,
    )
    if methods:
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def paired_scatter(cells: pd.DataFrame, first, second, metric: str, factor: str) -> Figure:
    """One point per (method, preset): seed mean at ``first`` (x) against ``second`` (y).

    ``cells``: the ``cells`` frame of :func:`~udora.experiments.studies.analysis.paired` (index
    (method, preset), columns ``first``, ``second``). Points above the diagonal gain.
    """
    methods = sorted(cells.index.unique("method")) if len(cells) else []
    styles = config_styles(methods)
    fig, ax = plt.subplots(figsize=(4.8, 4.4))
    for method in methods:
        mine = cells.xs(method, level="method")
        ax.scatter(mine["first"], mine["second"], label=method, s=22, **styles[method])
    both = cells[["first", "second"]].to_numpy(dtype=float)
    lo, hi = (float(both.min()), float(both.max())) if both.size else (-1.0, 1.0)
    ax.plot([lo, hi], [lo, hi], "k:", lw=1, label="no change")
    first, second = level_label(first), level_label(second)
    ax.set(
        title=f"{metric}: {factor} = {first} vs {second}",
        xlabel=f"{metric}, {first}",
        ylabel=f"{metric}, {second}",
    )
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def study_figures(
    r: dict, runs: pd.DataFrame, levels: Sequence, pos: dict, metric: str, factor: str, xname: str
) -> dict[str, Figure]:
    """Every figure of one metric's :func:`~udora.experiments.studies.analysis.summarise` entry
    ``r``, by name: ``slopes``, ``by_level``, ``shifts`` and, for two levels, ``paired``.
    ``runs`` is :func:`~udora.experiments.studies.analysis.runs` of the metric, ``pos`` maps a
    level to its x and ``xname`` names the slope's x."""
    drawn = {
        "slopes": slope_heatmap(r["slopes"], metric, xname),
        "by_level": level_curves(runs, levels, pos, metric, factor),
        "shifts": shift_heatmap(r["shifts"], metric, factor),
    }
    if (p := r["paired"]) is not None:
        drawn["paired"] = paired_scatter(p["cells"], p["first"], p["second"], metric, factor)
    return drawn
