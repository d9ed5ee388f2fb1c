"""Report figures (matplotlib, Agg): each function draws one figure and returns it.

Every (method, config) is its own entry with one colour (and marker) of
:func:`config_styles`, the same in every figure, and one legend entry
(docs/running.md, "The report"). The summary figures grouped by method family are in
:mod:`udora.experiments.results.figures_summary`.
"""

from __future__ import annotations

import itertools
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from udora.experiments.results.summaries import natural_key
from udora.oracle.atomic import write_figure

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
# Okabe & Ito (2008), "Color Universal Design": eight colours told apart by most readers.
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")


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
        write_figure(path, fig, dpi=150)
    plt.close(fig)
    return paths


def config_styles(labels: list[str]) -> dict[str, dict]:
    """A distinct ``color`` and ``marker`` per config label, colour-blind-safe.

    Colours are the eight of the Okabe-Ito palette; markers cycle over :data:`MARKERS` once
    the colours are used up, so every (colour, marker) pair stays distinct for up to 64
    labels (beyond that, pairs repeat).
    """
    pairs = itertools.cycle(itertools.product(MARKERS, OKABE_ITO))  # markers outer
    return {label: {"color": c, "marker": m} for label, (m, c) in zip(labels, pairs, strict=False)}


def _curve_configs(curves: dict) -> list[str]:
    """Config labels of the curve keys (preset, method, config, seed), sorted like the table."""
    pairs = {(k[1], k[2]) for k in curves}
    return [c for _, c in sorted(pairs, key=lambda p: (p[0], natural_key(p[1])))]


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
            ax.loglog(
                est[keep],
                tgt[keep],
                "-",
                lw=0.8,
                ms=3,
                **style,
                label=config if config not in labelled else "_nolegend_",
            )
            labelled.add(config)
            lo = min(lo, est[keep].min(), tgt[keep].min())
            hi = max(hi, est[keep].max(), tgt[keep].max())
    if np.isfinite(lo):
        ax.plot([lo, hi], [lo, hi], "k:", lw=1)
    ax.set(
        xlabel=f"mean {kind.upper()} estimate",
        ylabel=f"mean {kind.upper()} target",
        title=f"{kind.upper()} calibration (one line per config and preset)",
    )
    _legend(ax, len(labelled))
    fig.tight_layout()
    return fig
