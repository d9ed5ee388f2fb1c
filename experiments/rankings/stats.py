"""Ranking statistics over complete blocks (docs/rankings.md).

- Ranks within each preset, 1 the best, ties the average rank (pandas' ``rank``, as
  autorank ranks).
- The mean rank's 95 % interval by a two-level bootstrap: presets resampled with
  replacement, then each drawn preset's seeds resampled, the seed means and ranks
  recomputed (no library draws this hierarchy; it is a few lines of numpy).
- The Friedman test and Nemenyi's critical difference from autorank (its
  ``force_mode="nonparametric"`` path: ``scipy.stats.friedmanchisquare`` and the
  studentised-range quantile of statsmodels), which also draws the CD diagram. With two
  configs, scipy's two-sided Wilcoxon signed-rank test on the block means (autorank's
  two-config test is one-sided, its side chosen from the data).
- Holm's correction (statsmodels' ``multipletests``) over the secondary metrics' Friedman
  p-values; the primary metric (EU Spearman) is tested at ``alpha`` alone.
- Pairwise win rates: the share of presets on which a config's seed mean beats
  another's, a tie counting a half.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from udora.experiments.rankings.blocks import Blocks

MIN_BLOCKS = 5  # autorank's (and the Friedman chi-square approximation's) floor


@dataclass(frozen=True)
class Ranking:
    """One metric's ranking over complete blocks.

    ``ranks``: (presets, configs), 1 the best. ``summary``: per config (rows best first)
    ``mean_rank``, ``ci_low``, ``ci_high`` (bootstrap, 95 %) and ``tied_best`` (its mean
    rank is within the critical difference of the best, or the omnibus test does not
    reject). ``p_friedman`` is the raw p-value of ``test`` ("friedman", autorank's; for
    two configs "wilcoxon", scipy's two-sided signed-rank test on the block means, with no
    CD), ``p_adjusted`` the one the marks use (Holm over the secondary metrics; equal to
    the raw one for the primary). ``cd`` is Nemenyi's critical difference at ``alpha``.
    ``autorank`` is autorank's result (for the diagram; None for two configs)."""

    blocks: Blocks
    ranks: pd.DataFrame
    summary: pd.DataFrame
    p_friedman: float
    p_adjusted: float
    cd: float
    alpha: float
    autorank: object  # autorank's result (None for two configs)
    test: str = "friedman"

    @property
    def significant(self) -> bool:
        return bool(self.p_adjusted < self.alpha)


def within_ranks(means: pd.DataFrame, better: str) -> pd.DataFrame:
    """(presets, configs) ranks within each preset: 1 the best, ties averaged."""
    return means.rank(axis=1, ascending=better == "lower", method="average")


def bootstrap_mean_ranks(b: Blocks, n_boot: int = 2000, seed: int = 0) -> np.ndarray:
    """(n_boot, configs) mean ranks under the two-level bootstrap: presets drawn with
    replacement, then for each drawn preset (each copy on its own) its seeds drawn with
    replacement, the same seed rows for every config so the pairing of a seed's task is
    kept. A config whose drawn seeds all failed on a preset takes its full seed mean."""
    rng = np.random.default_rng(seed)
    presets = list(b.means.index)
    full = b.means.to_numpy()  # (P, C)
    n_seeds = np.array([b.seeds[p].shape[0] for p in presets])  # (P,)
    grid = np.full((len(presets), n_seeds.max(), full.shape[1]), np.nan)  # (P, S, C)
    for i, p in enumerate(presets):
        grid[i, : n_seeds[i]] = b.seeds[p]
    pick = rng.integers(0, len(presets), size=(n_boot, len(presets)))  # (B, P)
    count = n_seeds[pick][..., None]  # (B, P, 1)
    rows = np.minimum((rng.random((*pick.shape, grid.shape[1])) * count).astype(int), count - 1)
    drawn = grid[pick[..., None], rows]  # (B, P, S, C)
    drawn[np.arange(grid.shape[1]) >= count] = np.nan  # a preset with fewer seeds
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN draws, filled next
        values = np.nanmean(drawn, axis=2)  # (B, P, C)
    values = np.where(np.isfinite(values), values, full[pick])
    sign = -1.0 if b.better == "higher" else 1.0
    return _rank_last(sign * values).mean(axis=1)


def _rank_last(x: np.ndarray) -> np.ndarray:
    """Ranks along the last axis, 1 the smallest, ties averaged (scipy's rankdata)."""
    from scipy.stats import rankdata

    return rankdata(x, axis=-1, method="average")


def friedman_nemenyi(b: Blocks, alpha: float):
    """autorank's Friedman test and Nemenyi post-hoc on ``b.means``; autorank's own
    printout is swallowed."""
    from autorank import autorank

    data = b.means.reset_index(drop=True).rename_axis(None, axis=1)
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its Shapiro tests on few blocks
        return autorank(
            data,
            alpha=alpha,
            force_mode="nonparametric",
            order="descending" if b.better == "higher" else "ascending",
        )


def win_rates(b: Blocks) -> pd.DataFrame:
    """(configs, configs): the share of presets where the row's seed mean beats the
    column's (higher or lower per ``b.better``), ties a half; the diagonal is NaN."""
    x = b.means.to_numpy()
    if b.better == "lower":
        x = -x
    diff = x[:, :, None] - x[:, None, :]  # (P, C, C)
    rate = ((diff > 0) + 0.5 * (diff == 0)).mean(axis=0)
    np.fill_diagonal(rate, np.nan)
    return pd.DataFrame(rate, index=b.means.columns, columns=b.means.columns)


def rank(b: Blocks, alpha: float = 0.05, n_boot: int = 2000, seed: int = 0) -> Ranking | None:
    """The ranking of one metric, or None when there are fewer than :data:`MIN_BLOCKS`
    presets or two configs. ``p_adjusted`` starts as the raw p; :func:`holm` adjusts it."""
    n_presets, n_configs = b.means.shape
    if n_presets < MIN_BLOCKS or n_configs < 2:
        return None
    ranks = within_ranks(b.means, b.better)
    mean_rank = ranks.mean(axis=0)
    boot = bootstrap_mean_ranks(b, n_boot, seed)
    low, high = np.percentile(boot, [2.5, 97.5], axis=0)
    summary = pd.DataFrame(
        {"mean_rank": mean_rank, "ci_low": low, "ci_high": high}, index=b.means.columns
    )
    summary = summary.sort_values("mean_rank", kind="stable")
    if n_configs == 2:  # autorank's two-config test is one-sided, its side from the data
        from scipy.stats import wilcoxon

        diff = b.means.iloc[:, 0] - b.means.iloc[:, 1]
        p = float(wilcoxon(diff).pvalue) if np.any(diff != 0) else 1.0
        return _marked(Ranking(b, ranks, summary, p, p, np.nan, alpha, None, "wilcoxon"))
    result = friedman_nemenyi(b, alpha)
    p = float(result.pvalue)
    p = p if np.isfinite(p) else 1.0  # every block tied: no difference to find
    return _marked(Ranking(b, ranks, summary, p, p, float(result.cd), alpha, result))


def _marked(r: Ranking) -> Ranking:
    best = r.summary["mean_rank"].min()
    gap = r.summary["mean_rank"] - best
    # two configs: Wilcoxon's signed rank, with no CD; a rejection leaves the best alone
    cd = r.cd if np.isfinite(r.cd) else 0.0
    tied = (gap <= cd) if r.significant else True
    summary = r.summary.assign(tied_best=tied)
    return Ranking(
        r.blocks, r.ranks, summary, r.p_friedman, r.p_adjusted, r.cd, r.alpha, r.autorank, r.test
    )


def holm(rankings: dict[str, Ranking], primary: str) -> dict[str, Ranking]:
    """The rankings with Holm-adjusted p-values over every metric but ``primary``, and the
    tied-with-the-best marks redone at the adjusted p."""
    from statsmodels.stats.multitest import multipletests

    secondary = [m for m in rankings if m != primary and np.isfinite(rankings[m].p_friedman)]
    if not secondary:
        return dict(rankings)
    raw = [rankings[m].p_friedman for m in secondary]
    adjusted = multipletests(raw, alpha=rankings[secondary[0]].alpha, method="holm")[1]
    out = dict(rankings)
    for m, p in zip(secondary, adjusted, strict=True):
        r = rankings[m]
        out[m] = _marked(
            Ranking(
                r.blocks,
                r.ranks,
                r.summary.drop(columns="tied_best"),
                r.p_friedman,
                float(p),
                r.cd,
                r.alpha,
                r.autorank,
                r.test,
            )
        )
    return out
