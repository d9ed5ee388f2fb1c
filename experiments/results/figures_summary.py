"""The report's summary figures: each config's score per dataset and its mean (matplotlib).

A reader should see at a glance which configs rank uncertainty best and how much that
varies between datasets: configs are grouped by method family (:data:`udora.methods.base.
FAMILIES`; the GP references, which know the generating kernel, in a block of their own at
the bottom), ordered within a family by the plotted score, one bar per config (the mean over
datasets of per-dataset seed means) with one point per dataset over it. Colours are the
Okabe-Ito palette, which stays distinct under the common colour-vision deficiencies.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from udora.experiments.results.summaries import configs, per_dataset
from udora.methods.base import FAMILIES

FAMILY_COLOURS = {
    "NN": "#0072B2",
    "Bayesian NN": "#CC79A7",
    "trees": "#009E73",
    "linear & kernel": "#E69F00",
    "other": "#D55E00",
    "GP reference": "#999999",
    "external": "#56B4E9",
}
REFERENCE = "GP reference"


def families(table: pd.DataFrame) -> dict[str, str]:
    """Config label -> its method's family (``udora methods``; "other" when unknown;
    "external" for runs scored from a predictions file)."""
    from udora.methods.registry import method_infos

    of_method = {info.name: info.family for info in method_infos()}
    external = table["external"] if "external" in table else pd.Series(False, table.index)
    pairs = table.assign(external=external)[["method", "config", "external"]].drop_duplicates()
    return {
        c: "external" if e else of_method.get(m, "other")
        for m, c, e in pairs.itertuples(index=False)
    }


def ordered(table: pd.DataFrame, metric: str) -> list[str]:
    """Config labels grouped by family (in :data:`FAMILIES` order, the GP references last),
    best mean ``metric`` over datasets first within a family; configs without it last in
    their family."""
    fam = families(table)
    pivot = per_dataset(table, metric)
    mean = pivot.mean() if not pivot.empty else pd.Series(dtype=float)
    rank = {f: i for i, f in enumerate(FAMILIES)}

    def key(label: str) -> tuple:
        value = mean.get(label, np.nan)
        return (
            rank.get(fam[label], len(FAMILIES)),
            np.isnan(value),
            -value if np.isfinite(value) else 0.0,
            label,
        )

    return sorted(configs(table), key=key)


def score_panels(
    table: pd.DataFrame,
    panels: tuple[tuple[str, str], ...],
    *,
    title: str,
    xlabel: str = "Spearman's rho with the oracle target (higher is better)",
    order_by: str | None = None,
    xlim: tuple[float, float] | None = (-1.0, 1.0),
    by: str = "preset",
):
    """One panel per ``(metric, label)`` of ``panels``: a horizontal bar per config (mean
    over datasets of per-dataset seed means) coloured by family, one dot per dataset.

    Each panel orders the configs by its own metric (:func:`ordered`), or all panels by
    ``order_by``. With ``by="seed"`` (one preset's page) a dot is a seed. Returns the figure.
    """
    unit = {"preset": "dataset", "seed": "seed"}[by]
    if by == "seed":  # per_dataset pivots on "preset": make each seed its own row
        table = table.assign(preset=table["seed"].map(lambda s: f"seed {s}"))
    n = len(configs(table))
    presets = table.loc[table["status"] == "ok", "preset"].nunique()
    width = 4.6 if len(panels) < 3 else 3.3  # three panels stay legible on a page
    fig, axes = plt.subplots(
        1, len(panels), figsize=(width * len(panels) + 0.6, 1.6 + 0.3 * n), squeeze=False
    )
    fam = families(table)
    rng = np.random.default_rng(0)  # jitter of the dots only
    for ax, (metric, label) in zip(axes[0], panels, strict=True):
        order = ordered(table, order_by or metric)
        pivot = per_dataset(table, metric).reindex(columns=order)
        y = np.arange(len(order))[::-1].astype(float)  # first config at the top
        mean = pivot.mean() if not pivot.empty else pd.Series(np.nan, index=order)
        colours = [FAMILY_COLOURS.get(fam[c], FAMILY_COLOURS["other"]) for c in order]
        hatch = ["//" if fam[c] == REFERENCE else "" for c in order]
        ax.barh(
            y,
            mean.reindex(order).to_numpy(),
            color=colours,
            hatch=hatch,
            alpha=0.85,
            edgecolor="white",
            height=0.7,
        )
        for j, config in enumerate(order):
            values = pivot[config].dropna().to_numpy() if config in pivot else np.array([])
            if values.size == 0:  # e.g. a constant AU estimate has no Spearman
                ax.text(
                    0.02,
                    y[j],
                    "n/a",
                    va="center",
                    fontsize=7,
                    color="#555555",
                    transform=ax.get_yaxis_transform(),
                )
            jitter = rng.uniform(-0.22, 0.22, size=values.size)
            ax.scatter(values, y[j] + jitter, s=10, color="black", alpha=0.65, lw=0, zorder=3)
        ax.set_yticks(y, order, fontsize=8)
        for tick, config in zip(ax.get_yticklabels(), order, strict=True):
            if fam[config] == REFERENCE:
                tick.set_color("#555555")
        refs = [j for j, c in enumerate(order) if fam[c] == REFERENCE]
        if refs and len(refs) < len(order):
            ax.axhline(y[refs[0]] + 0.5, color="#555555", lw=0.8, ls="--")
        ax.axvline(0.0, color="black", lw=0.6)
        if xlim is not None:
            ax.set_xlim(*xlim)
        ax.set_ylim(-0.6, len(order) - 0.4)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_title(label, fontsize=10)
        ax.grid(axis="x", color="#dddddd", lw=0.6)
        ax.set_axisbelow(True)
    shown = [f for f in FAMILIES if f in set(fam.values())]
    handles = [
        Patch(
            facecolor=FAMILY_COLOURS[f],
            hatch="//" if f == REFERENCE else "",
            label=f + (" (knows the kernel)" if f == REFERENCE else ""),
        )
        for f in shown
    ]
    handles.append(
        Line2D(
            [],
            [],
            marker="o",
            ls="",
            color="black",
            alpha=0.65,
            ms=4,
            label="one dataset (mean over seeds)" if by == "preset" else "one seed",
        )
    )
    handles.append(Patch(facecolor="#cccccc", label=f"bar: mean over {unit}s"))
    fig.legend(
        handles=handles,
        loc="lower center",
        ncol=min(len(handles), 4),
        fontsize=7,
        frameon=False,
        bbox_to_anchor=(0.5, 0.0),
    )
    fig.suptitle(f"{title} ({presets} {unit}{'s' if presets != 1 else ''})", fontsize=11)
    fig.tight_layout(rect=(0, 0.06 + 0.25 / max(n, 4), 1, 1))
    return fig


def spearman_summary(table: pd.DataFrame, by: str = "preset"):
    """EU and AU Spearman with the oracle per config (the paper's Fig. 2, by family)."""
    return score_panels(
        table,
        (("spearman_eu", "Epistemic (EU)"), ("spearman_au", "Aleatoric (AU)")),
        title="Do methods rank uncertainty like the oracle?",
        by=by,
    )


def eu_parts(table: pd.DataFrame, by: str = "preset"):
    """Spearman of the EU estimate with the EU target and with its two parts, posterior
    variance and squared bias, in the order of the EU target's."""
    return score_panels(
        table,
        (
            ("spearman_eu", "EU target (variance + bias^2)"),
            ("spearman_eu_var", "posterior variance"),
            ("spearman_eu_bias", "squared bias"),
        ),
        title="What the EU estimate tracks",
        order_by="spearman_eu",
        xlabel="Spearman's rho of the EU estimate",
        by=by,
    )
