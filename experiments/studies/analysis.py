"""Ablation studies: how a metric moves when one factor varies over a list of levels.

A study varies one override column of :func:`udora.experiments.results.store.load_runs`'s table
(``width``, ``activation``) over ``levels``; an empty cell ran at ``default_level``. Pass
the study's runs only. A *cell* is one (method, preset); its runs at a level must share one
config hash, so only seeds are averaged (docs/design.md, "The life of a run"). Only ok runs
count, and a non-finite metric (AU Spearman of a constant AU) enters no statistic. The
statistics are the paper's (Appendix E): OLS slopes, shifts from the cell's mean over
levels, Kendall's W across levels and across presets, paired differences for two levels.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats

from udora.experiments.results.aggregate import kendall_w, ols_slope
from udora.scoring.registry import names

Scale = Literal["log2", "linear", "ordinal"]
SCALES = ("log2", "linear", "ordinal")
METRICS = names(role="ablation")  # what a study summarises unless it names its metrics
CELL = ["method", "preset"]


def factor_values(table: pd.DataFrame, factor: str, levels: Sequence, default_level=None):
    """The level of every row of ``table``: its ``factor`` cell, empty cells as the default.

    Numeric cells match numeric levels by value (64.0 is level 64); text cells match a
    level's text. Returns a Series of shape (rows,), index of ``table``, whose values are
    elements of ``levels``. Raises ValueError naming the value and the valid levels for a
    value (or default) that is not a level, and when a cell is empty without a default.
    """
    lookup = {str(level): level for level in levels} | {level: level for level in levels}
    raw = table[factor] if factor in table else pd.Series(None, index=table.index, dtype=object)
    out = []
    for value in raw:
        empty = value is None or (not isinstance(value, str) and bool(pd.isna(value)))
        if empty and default_level is None:
            raise ValueError(f"runs leave {factor!r} unset and no default_level was given")
        v = default_level if empty else value
        level = lookup.get(v, lookup.get(str(v)))
        if level is None:
            via = " (the default_level, for runs that leave it unset)" if empty else ""
            raise ValueError(f"{factor} = {v!r}{via} is not one of the levels {list(levels)}")
        out.append(level)
    return pd.Series(out, index=table.index, name=factor, dtype=object)


def positions(levels: Sequence, scale: Scale) -> dict[Any, float]:
    """x of each level in the slope fits: log2 of the level, the level, or its index.

    ``"log2"`` (widths, sizes) and ``"linear"`` need numeric levels, log2 positive ones;
    ``"ordinal"`` gives 0, 1, ... in the order of ``levels`` (activation, optimizer).
    """
    if scale not in SCALES:
        raise ValueError(f"scale {scale!r} is not one of {list(SCALES)}")
    if len(set(map(str, levels))) != len(levels):
        raise ValueError(f"levels {list(levels)} repeat a value")
    if scale == "ordinal":
        return {level: float(i) for i, level in enumerate(levels)}
    try:
        x = np.array([float(level) for level in levels])
    except (TypeError, ValueError):
        raise ValueError(
            f"scale {scale!r} needs numeric levels, got {list(levels)}; "
            "use 'ordinal' for categories"
        ) from None
    if scale == "log2":
        if np.any(x <= 0):
            raise ValueError(f"scale 'log2' needs positive levels, got {list(levels)}")
        x = np.log2(x)
    return dict(zip(levels, x.tolist(), strict=True))


def runs(table, factor, levels, metric, default_level=None, scale: Scale = "ordinal"):
    """The study's ok runs, one row each: shape (runs, 6), columns ``method``, ``preset``,
    ``seed``, ``level``, ``x`` (:func:`positions` under ``scale``) and ``value`` (the metric,
    NaN where not finite). Raises ValueError when a cell's runs at one level have several
    config hashes (only seeds may be averaged)."""
    if metric not in table:
        raise ValueError(f"metric {metric!r} is not a column of the table")
    ok = table[table["status"] == "ok"]
    level = factor_values(ok, factor, levels, default_level)
    x = positions(levels, scale)
    value = pd.to_numeric(ok[metric], errors="coerce").astype(float)
    frame = pd.DataFrame(
        {
            "method": ok["method"],
            "preset": ok["preset"],
            "seed": ok["seed"],
            "level": level,
            "x": [x[v] for v in level],
            "value": value.where(np.isfinite(value)),
        }
    )
    if "config_hash" in ok:
        hashes = ok.groupby([ok["method"], ok["preset"], frame["x"]])["config_hash"].nunique()
        if (hashes > 1).any():
            method, preset, at = hashes[hashes > 1].index[0]
            bad = next(k for k, v in x.items() if v == at)
            raise ValueError(
                f"{method} on {preset} at {factor} = {bad!r} has runs of several "
                "config hashes; pass one config per level"
            )
    return frame


def cell_means(table, factor, levels, metric, default_level=None) -> pd.DataFrame:
    """Seed means of ``metric`` per cell and level, over the runs with a finite value.

    Returns shape (cells, L): index (method, preset), columns ``levels`` in order; NaN
    where a cell has no finite run at a level. Cells with no finite run at all are absent.
    """
    r = runs(table, factor, levels, metric, default_level).dropna(subset=["value"])
    means = r.groupby([*CELL, "x"])["value"].mean().unstack("x")
    means = means.reindex(columns=np.arange(len(levels), dtype=float))
    means.columns = pd.Index(list(levels), dtype=object, name=factor)
    return means


def slopes(table, factor, levels, scale: Scale, metric, default_level=None) -> pd.DataFrame:
    """OLS slope of ``metric`` on the level's position per cell, fitted on every run.

    Per (method, preset), :func:`udora.experiments.results.aggregate.ols_slope` fits the runs with
    a finite value (all levels and seeds) at x = :func:`positions`. Returns (cells, 4),
    index (method, preset), columns ``slope`` (NaN when undefined), ``stderr``, ``n`` (runs
    fitted) and ``significant_negative``: slope < 0 and the two-sided 95% t interval
    ``slope +- t_{0.975, n-2} stderr`` excludes 0.
    """
    rows = {}
    for key, g in runs(table, factor, levels, metric, default_level, scale).groupby(CELL):
        x, y = (g.dropna(subset=["value"])[c].to_numpy() for c in ("x", "value"))
        slope, se = ols_slope(x, y) if len(x) >= 2 else (np.nan, np.nan)
        half = stats.t.ppf(0.975, len(x) - 2) * se if len(x) > 2 else np.nan
        rows[key] = (slope, se, len(x), bool(slope < 0 and slope + half < 0))
    cols = ["slope", "stderr", "n", "significant_negative"]
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=cols)
    frame.index = pd.MultiIndex.from_tuples(frame.index, names=CELL)
    return frame


def slope_shares(slopes_frame: pd.DataFrame) -> dict[str, float]:
    """Over the cells of :func:`slopes` with a finite slope: ``pairs`` (their count), the
    ``negative`` and ``significant_negative`` shares in [0, 1] and ``mean_slope`` (NaN
    when no cell has a finite slope)."""
    valid = slopes_frame[np.isfinite(slopes_frame["slope"].astype(float))]  # empty: NaN means
    return {
        "pairs": len(valid),
        "negative": float((valid["slope"] < 0).mean()),
        "significant_negative": float(valid["significant_negative"].mean()),
        "mean_slope": float(valid["slope"].mean()),
    }


def method_slopes(slopes_frame: pd.DataFrame) -> pd.DataFrame:
    """:func:`slope_shares` per method: shape (methods, 4), index method, columns
    ``mean_slope``, ``negative``, ``significant_negative``, ``pairs``."""
    rows = {m: slope_shares(g) for m, g in slopes_frame.groupby(level="method", sort=True)}
    cols = ["mean_slope", "negative", "significant_negative", "pairs"]
    return pd.DataFrame.from_dict(rows, orient="index", columns=cols).rename_axis("method")


def _complete_shifts(table, factor, levels, metric, default_level):
    """(cells with a finite seed mean at every level, their value minus the cell's mean)."""
    cells = cell_means(table, factor, levels, metric, default_level).dropna(how="any")
    return cells, cells.sub(cells.mean(axis=1), axis=0)


def level_means(table, factor, levels, metric, default_level=None) -> pd.DataFrame:
    """Per level: mean over cells, and the mean and sd of its shift from the cell's mean.

    Only cells (method, preset) with a finite seed mean at *every* level count, so each
    level averages the same cells. With ``v_cl`` a cell's seed mean at level l,
    ``shift_cl = v_cl - mean_l' v_cl'``. Returns shape (L, 4), index the levels, columns
    ``mean`` (of v), ``shift``, ``shift_sd`` (ddof 1) and ``cells`` (their count).
    """
    cells, shift = _complete_shifts(table, factor, levels, metric, default_level)
    out = pd.DataFrame(
        {
            "mean": cells.mean(axis=0),
            "shift": shift.mean(axis=0),
            "shift_sd": shift.std(axis=0, ddof=1),
            "cells": len(cells),
        }
    )
    return out.rename_axis(factor)


def method_shifts(table, factor, levels, metric, default_level=None) -> pd.DataFrame:
    """Mean shift per method and level over that method's complete cells (as in
    :func:`level_means`): shape (methods, L), index method, columns the levels."""
    _, shift = _complete_shifts(table, factor, levels, metric, default_level)
    return shift.groupby(level="method").mean()


def _w(scores: pd.DataFrame) -> tuple[float, int]:
    """(W, methods ranked) of a raters x methods frame; methods lacking a score dropped."""
    kept = scores.dropna(axis=1, how="any")
    if kept.shape[0] < 2 or kept.shape[1] < 2:
        return np.nan, kept.shape[1]
    return kendall_w(kept.to_numpy()), kept.shape[1]


def rank_agreement(table, factor, levels, metric, default_level=None) -> dict[str, Any]:
    """Kendall's W of the method rankings by seed-mean ``metric``, two ways.

    ``w_levels``: per preset, raters = levels, items = methods, mean over presets;
    ``w_presets``: per level, raters = presets, mean over levels. In each W a method
    lacking a finite seed mean for a rater is dropped (as in
    :func:`udora.experiments.results.summaries.ranking_agreement`); a W left with under two raters
    or methods is NaN and not averaged. Also ``one_minus_w_*``, the counts ``presets`` /
    ``levels`` of Ws averaged, ``methods_*`` (fewest methods in one of them) and the
    Series ``per_preset`` / ``per_level`` of the single Ws.
    """
    cells = cell_means(table, factor, levels, metric, default_level)
    pres = sorted(cells.index.unique("preset")) if len(cells) else []
    by_preset = {p: _w(cells.xs(p, level="preset").T) for p in pres}
    by_level = {lv: _w(cells[lv].unstack("method")) for lv in levels} if len(cells) else {}
    out: dict[str, Any] = {}
    for way, ws, count in (("levels", by_preset, "presets"), ("presets", by_level, "levels")):
        used = {k: v for k, v in ws.items() if np.isfinite(v[0])}
        w = float(np.mean([v[0] for v in used.values()])) if used else np.nan
        out |= {
            f"w_{way}": w,
            f"one_minus_w_{way}": 1.0 - w,
            count: len(used),
            f"methods_{way}": min((v[1] for v in used.values()), default=0),
        }
    out["per_preset"] = pd.Series({k: v[0] for k, v in by_preset.items()}, dtype=float)
    out["per_level"] = pd.Series({k: v[0] for k, v in by_level.items()}, dtype=float)
    return out


def paired(table, factor, levels, metric, default_level=None) -> dict[str, Any]:
    """Paired difference (second level - first) of the seed means per cell.

    Over the n cells with a finite seed mean at both levels: ``mean``, ``sd`` (ddof 1),
    ``n``, ``positive`` and ``negative`` counts (zeros are neither), ``p_value`` of the
    two-sided sign test ``binomtest(positive, positive + negative, 0.5)``, the levels
    ``first`` and ``second`` and ``cells`` (n, 3): index (method, preset), columns
    ``first``, ``second``, ``diff``.
    """
    if len(levels) != 2:
        raise ValueError(f"paired needs two levels, got {list(levels)}")
    first, second = levels
    means = cell_means(table, factor, levels, metric, default_level).dropna(how="any")
    diff = means[second] - means[first]
    pos, neg = int((diff > 0).sum()), int((diff < 0).sum())
    p = stats.binomtest(pos, pos + neg, 0.5).pvalue if pos + neg else np.nan
    cells = pd.DataFrame({"first": means[first], "second": means[second], "diff": diff})
    return {
        "first": first,
        "second": second,
        "mean": float(diff.mean()),
        "sd": float(diff.std(ddof=1)),
        "n": len(diff),
        "positive": pos,
        "negative": neg,
        "p_value": float(p),
        "cells": cells,
    }


def summarise(table, factor, levels, scale: Scale, default_level=None, metrics=METRICS):
    """Every statistic above per metric present in ``table``: ``{metric: {"slopes",
    "shares", "by_method", "levels", "shifts", "agreement", "paired"}}`` (``paired`` is
    None unless there are two levels)."""
    args = (table, factor, list(levels))
    out = {}
    for m in (m for m in metrics if m in table):
        s = slopes(*args, scale, m, default_level)
        out[m] = {
            "slopes": s,
            "shares": slope_shares(s),
            "by_method": method_slopes(s),
            "levels": level_means(*args, m, default_level),
            "shifts": method_shifts(*args, m, default_level),
            "agreement": rank_agreement(*args, m, default_level),
            "paired": paired(*args, m, default_level) if len(levels) == 2 else None,
        }
    return out
