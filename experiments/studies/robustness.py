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
  allows; a family changes the ranking beyond noise when the paired bootstrap interval of
  the ceiling's tau minus the family's lies above 0.

Each method's rank shift is its mean rank under a family minus under the GP at the same
seeds (the same pools, training inputs and noise draws: only the truth differs), beside
the shift between the two GP seed sets, the noise a shift must exceed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from udora.errors import UserError
from udora.experiments.rankings.blocks import LABELS, RANKED, blocks
from udora.experiments.rankings.stats import within_ranks
from udora.oracle.families import TRUTH_DEFAULTS

FAMILY_COLUMN = "preset.truth"  # the override column of the results table
GP = "gp"


def _unset(value) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value))


def family_of(table: pd.DataFrame) -> pd.Series:
    """Each run's ground-truth family, from the typed override columns of the results
    table (:func:`udora.experiments.results.store.override_cells`): ``preset.truth`` (or
    ``preset.truth.family``, from a mapping override; ``gp`` when both are unset), with a
    ``preset.truth.<field>`` that is not the family's default appended as
    ``features[features=256]``, so two variants of a family never pool."""
    prefix = FAMILY_COLUMN + "."
    named = [c for c in (FAMILY_COLUMN, prefix + "family") if c in table]
    fields = sorted(c for c in table.columns if c.startswith(prefix) and c not in named)

    def name(row) -> str:
        family = next((row[c] for c in named if not _unset(row[c])), GP)
        defaults = TRUTH_DEFAULTS.get(str(family), {})
        spec = {c[len(prefix) :]: row[c] for c in fields if not _unset(row[c])}
        extra = ",".join(f"{k}={v}" for k, v in sorted(spec.items()) if v != defaults.get(k))
        return f"{family}[{extra}]" if extra else str(family)

    if not named and not fields:
        return pd.Series(GP, index=table.index)
    return table[named + fields].astype(object).apply(name, axis=1).astype(str)


def rank_matrix(table: pd.DataFrame, family: str, seeds, metric: str, better: str) -> pd.DataFrame:
    """(presets, methods) ranks within each preset of the methods' seed means under
    ``family`` at ``seeds`` (complete blocks only; empty when nothing can be ranked).

    Raises ValueError when a method has runs of two configs there (tuned and default, a
    ``method_seed`` variant): a study's rankings compare one config per method."""
    part = table[(family_of(table) == family) & table["seed"].isin(list(seeds))]
    if part.empty:
        return pd.DataFrame()
    hashes = part.groupby(["method", "preset"])["config_hash"].nunique()  # the hash
    if (hashes > 1).any():  # covers the preset's task fields too: one per preset
        method, preset = hashes.index[hashes > 1][0]
        raise UserError(
            f"{method} has runs of {hashes[method, preset]} configs on {preset} "
            f"under {family} at seeds {sorted(seeds)}; run the study in its own "
            "folder"
        )
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


def aligned(*matrices: pd.DataFrame) -> list[pd.DataFrame]:
    """(presets, methods) rank matrices on their common presets and methods, each
    re-ranked within those methods (1 the best)."""
    presets = sorted(set.intersection(*(set(m.index) for m in matrices)))
    methods = sorted(set.intersection(*(set(m.columns) for m in matrices)))
    return [m.loc[presets, methods].rank(axis=1) for m in matrices]


def _taus(a: pd.DataFrame, b: pd.DataFrame, draws: np.ndarray) -> tuple[float, np.ndarray, float]:
    """(tau of the mean ranks, its value under each row of preset ``draws``, the median
    per-preset tau) of two aligned rank matrices."""
    A, B = a.to_numpy(), b.to_numpy()
    tau = stats.kendalltau(A.mean(axis=0), B.mean(axis=0)).statistic
    boot = np.array(
        [stats.kendalltau(A[d].mean(axis=0), B[d].mean(axis=0)).statistic for d in draws]
    )
    per_preset = [stats.kendalltau(A[i], B[i]).statistic for i in range(A.shape[0])]
    return float(tau), boot, float(np.nanmedian(per_preset))


def compare(a: pd.DataFrame, b: pd.DataFrame, n_boot: int = 2000, seed: int = 0) -> Comparison:
    """Kendall's tau between the mean ranks of ``a`` and ``b`` ((presets, methods) rank
    matrices), over their common presets and methods (:func:`aligned`), with a percentile
    interval of ``n_boot`` bootstrap draws of presets."""
    a, b = aligned(a, b)
    presets, methods = a.shape
    if presets < 2 or methods < 3:
        nan = float("nan")
        return Comparison(nan, nan, nan, nan, presets, methods)
    draws = np.random.default_rng(seed).integers(0, presets, size=(n_boot, presets))
    tau, boot, median = _taus(a, b, draws)
    low, high = np.nanpercentile(boot, [2.5, 97.5])
    return Comparison(tau, float(low), float(high), median, presets, methods)


def robustness(
    table: pd.DataFrame,
    reference_seeds=(2, 3),
    other_seeds=(0, 1),
    n_boot: int = 2000,
    seed: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(taus, shifts) of the study in ``table`` (ok and failed runs, as ``load_runs``).

    Per metric every ranking is taken on the same presets and methods (those all of them
    have) and the bootstrap draws the same presets for each, so the comparisons pair.
    ``taus``: one row per (metric, comparison) with :class:`Comparison`'s fields; the
    comparison is a family name (at ``other_seeds`` against the GP at
    ``reference_seeds``) or ``"gp (ceiling)"``; a family's row adds ``gap_low`` and
    ``gap_high``, the 95 % interval of the ceiling's tau minus the family's (above 0: the
    family moves the ranking more than noise does). ``shifts``: one row per (metric,
    method) with its mean rank under the GP at ``other_seeds`` (``rank_gp``), under each
    family (``rank_<f>``), ``shift_<f>`` = rank under f minus under the GP, and
    ``shift_gp_seeds`` = the GP at ``reference_seeds`` minus at ``other_seeds``.
    """
    families = [f for f in sorted(family_of(table).unique()) if f != GP]
    taus, shifts = [], []
    rng = np.random.default_rng(seed)
    for metric, better in RANKED:
        found = {
            "reference": rank_matrix(table, GP, reference_seeds, metric, better),
            GP: rank_matrix(table, GP, other_seeds, metric, better),
        }
        for f in families:
            found[f] = rank_matrix(table, f, other_seeds, metric, better)
        found = {k: m for k, m in found.items() if not m.empty}
        if "reference" not in found or GP not in found:
            continue
        names = list(found)
        mats = dict(zip(names, aligned(*found.values()), strict=True))
        presets, methods = mats["reference"].shape
        if presets < 2 or methods < 3:
            continue
        draws = rng.integers(0, presets, size=(n_boot, presets))
        label = LABELS.get(metric, metric)
        boots = {}
        for name in [*[f for f in families if f in mats], GP]:
            tau, boots[name], median = _taus(mats["reference"], mats[name], draws)
            low, high = np.nanpercentile(boots[name], [2.5, 97.5])
            row = {
                "metric": label,
                "comparison": name if name != GP else "gp (ceiling)",
                "tau": tau,
                "low": float(low),
                "high": float(high),
                "preset_median": median,
                "presets": presets,
                "methods": methods,
            }
            taus.append(row)
        for row in taus[-len(boots) : -1]:  # the families: paired gap to the ceiling
            gap = boots[GP] - boots[row["comparison"]]
            row["gap_low"], row["gap_high"] = (float(v) for v in np.nanpercentile(gap, [2.5, 97.5]))
        gp = mats[GP].mean(axis=0)
        row = pd.DataFrame({"metric": label, "method": list(gp.index), "rank_gp": gp.to_numpy()})
        row["shift_gp_seeds"] = (mats["reference"].mean(axis=0) - gp).to_numpy()
        for f in families:
            if f in mats:
                row[f"rank_{f}"] = mats[f].mean(axis=0).to_numpy()
                row[f"shift_{f}"] = row[f"rank_{f}"] - row["rank_gp"]
        shifts.append(row)
    taus_frame = pd.DataFrame(taus)
    shift_frame = pd.concat(shifts, ignore_index=True) if shifts else pd.DataFrame()
    return taus_frame, shift_frame
