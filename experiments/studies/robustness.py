"""Do the benchmark's method rankings survive another ground truth? (docs/robustness.md)

The study (the shipped ``truth`` study plus a second GP seed set; docs/robustness.md)
runs every method at its default config on each preset under the GP and under other
ground-truth families (:mod:`udora.oracle.truths`), the family being the run's
``preset.truth`` override (none: the GP). For a metric, a *ranking* is the mean over
presets of each method's rank within a preset, ranks taken on its mean over a seed set
(:func:`udora.experiments.rankings.blocks.blocks`: complete blocks only, the GP
references left out). The comparisons, each Kendall's tau-b between two rankings' mean
ranks with a 95 % bootstrap interval (presets resampled, both rankings recomputed on the
same draw):

- the *reference*: the GP at the reference seeds (default 2, 3);
- each family at the other seeds (default 0, 1) against the reference;
- the *ceiling*: the GP at those other seeds against the reference. The two sides share
  no seed (no training sample, no function draw), so the tau is what noise alone
  allows; a family whose tau lies below the ceiling's interval changes the ranking
  beyond noise.

Each method's rank shift is its mean rank under a family minus under the GP at the same
seeds (the same pools, training inputs and noise draws: only the truth differs), beside
the shift between the two GP seed sets, the noise a shift must exceed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from udora.experiments.rankings.blocks import LABELS, RANKED, blocks
from udora.experiments.rankings.stats import within_ranks

FAMILY_COLUMN = "preset.truth"  # the override column of the results table
GP = "gp"


def family_of(table: pd.DataFrame) -> pd.Series:
    """Each run's ground-truth family: its ``preset.truth`` override (``gp`` when unset), a
    non-default parameter appended as ``features[features=256]`` (from a mapping override
    or ``preset.truth.<field>`` columns), so two variants of a family never pool."""
    fields = sorted(c for c in table.columns if c.startswith(FAMILY_COLUMN + "."))

    def name(row) -> str:
        value = row.get(FAMILY_COLUMN)
        if isinstance(value, str) and value.startswith("{"):
            value = json.loads(value)
        spec = dict(value) if isinstance(value, dict) else {}
        family = spec.pop("family", None) if spec else value
        if family is None or (not isinstance(family, str) and pd.isna(family)):
            family = GP
        for column in fields:
            value = row.get(column)
            if not pd.isna(value):  # a column with gaps holds 128 as 128.0
                whole = isinstance(value, float) and value.is_integer()
                spec[column[len(FAMILY_COLUMN) + 1 :]] = int(value) if whole else value
        extra = ",".join(f"{k}={v}" for k, v in sorted(spec.items()) if v is not None)
        return f"{family}[{extra}]" if extra else str(family)

    if FAMILY_COLUMN not in table and not fields:
        return pd.Series(GP, index=table.index)
    return table.apply(name, axis=1).astype(str)


def rank_matrix(table: pd.DataFrame, family: str, seeds, metric: str, better: str
                ) -> pd.DataFrame:  # fmt: skip
    """(presets, methods) ranks within each preset of the methods' seed means under
    ``family`` at ``seeds`` (complete blocks only; empty when nothing can be ranked)."""
    part = table[(family_of(table) == family) & table["seed"].isin(list(seeds))]
    if part.empty:
        return pd.DataFrame()
    part = part.assign(config=part["method"], config_base=part["method"])
    b = blocks(part, metric, better)
    return within_ranks(b.means, better) if not b.means.empty else pd.DataFrame()


@dataclass(frozen=True)
class Comparison:
    """Kendall's tau-b between two rankings' mean ranks, its bootstrap interval, the
    median per-preset tau, and the presets and methods compared."""

    tau: float
    low: float
    high: float
    preset_median: float
    presets: int
    methods: int


def aligned(a: pd.DataFrame, b: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two (presets, methods) rank matrices on their common presets and methods, each
    re-ranked within those methods (1 the best)."""
    presets = sorted(set(a.index) & set(b.index))
    methods = sorted(set(a.columns) & set(b.columns))
    return (a.loc[presets, methods].rank(axis=1), b.loc[presets, methods].rank(axis=1))


def compare(a: pd.DataFrame, b: pd.DataFrame, n_boot: int = 2000, seed: int = 0) -> Comparison:
    """Kendall's tau between the mean ranks of ``a`` and ``b`` ((presets, methods) rank
    matrices), over their common presets and methods (:func:`aligned`), with a percentile
    interval of ``n_boot`` bootstrap draws of presets."""
    a, b = aligned(a, b)
    presets, methods = len(a.index), len(a.columns)
    if presets < 2 or methods < 3:
        nan = float("nan")
        return Comparison(nan, nan, nan, nan, presets, methods)
    A, B = a.to_numpy(), b.to_numpy()
    tau = stats.kendalltau(A.mean(axis=0), B.mean(axis=0)).statistic
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, presets, size=(n_boot, presets))
    boot = np.array([stats.kendalltau(A[d].mean(axis=0), B[d].mean(axis=0)).statistic
                     for d in draws])  # fmt: skip
    per_preset = [stats.kendalltau(A[i], B[i]).statistic for i in range(presets)]
    low, high = np.nanpercentile(boot, [2.5, 97.5])
    return Comparison(float(tau), float(low), float(high), float(np.nanmedian(per_preset)),
                      presets, methods)  # fmt: skip


def robustness(table: pd.DataFrame, reference_seeds=(2, 3), other_seeds=(0, 1),
               n_boot: int = 2000, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:  # fmt: skip
    """(taus, shifts) of the study in ``table`` (ok and failed runs, as ``load_runs``).

    ``taus``: one row per (metric, comparison) with :class:`Comparison`'s fields; the
    comparison is a family name (at ``other_seeds`` against the GP at
    ``reference_seeds``) or ``"gp (ceiling)"``. ``shifts``: one row per (metric, method)
    with its mean rank under the GP at ``other_seeds``, under each family (``rank_<f>``)
    and ``shift_<f>`` = rank under f minus under the GP, and ``shift_gp_seeds`` = the GP at
    ``reference_seeds`` minus at ``other_seeds``.
    """
    families = [f for f in sorted(family_of(table).unique()) if f != GP]
    taus, shifts = [], []
    for metric, better in RANKED:
        reference = rank_matrix(table, GP, reference_seeds, metric, better)
        same = rank_matrix(table, GP, other_seeds, metric, better)
        if reference.empty or same.empty:
            continue
        label = LABELS.get(metric, metric)
        for name, other in [(f, rank_matrix(table, f, other_seeds, metric, better))
                            for f in families] + [("gp (ceiling)", same)]:  # fmt: skip
            if other.empty:
                continue
            found = compare(reference, other, n_boot, seed)
            taus.append({"metric": label, "comparison": name, **found.__dict__})
        row = pd.DataFrame({"metric": label, "method": sorted(same.columns)})
        gp_a, gp_b = aligned(same, reference)
        row["rank_gp"] = row["method"].map(gp_a.mean(axis=0))
        row["shift_gp_seeds"] = row["method"].map(gp_b.mean(axis=0) - gp_a.mean(axis=0))
        for f in families:
            ranks = rank_matrix(table, f, other_seeds, metric, better)
            if ranks.empty:
                continue
            on_gp, on_f = aligned(same, ranks)  # the same presets: only the truth differs
            row[f"rank_{f}"] = row["method"].map(on_f.mean(axis=0))
            row[f"shift_{f}"] = row["method"].map(on_f.mean(axis=0) - on_gp.mean(axis=0))
        shifts.append(row)
    taus_frame = pd.DataFrame(taus)
    shift_frame = pd.concat(shifts, ignore_index=True) if shifts else pd.DataFrame()
    return taus_frame, shift_frame
