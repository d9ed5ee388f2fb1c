"""What the paper-reproduction rules read (docs/paper_reproduction.md, "Conventions"): one
config per method (its tuned one when it has one), per-preset seed means, suite means,
bootstrap intervals over presets, Kendall's W and the Friedman test, and the method sets
the paper's claims are about."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from udora.experiments.rankings.stats import within_ranks
from udora.experiments.results.aggregate import kendall_w

NN8 = ("edl", "nn_bagging", "nn_ensemble", "nn_dropout", "laplace", "fsp_laplace", "swag", "deup")
P14 = (*NN8, "blr", "dkl", "ngboost_nig", "ngboost_bag", "catboost_ps", "catboost_kgb")
NONNN = ("blr", "ngboost_nig", "ngboost_bag", "catboost_ps", "catboost_kgb")
TREES = ("ngboost_bag", "ngboost_nig", "catboost_ps", "catboost_kgb")
SUITES = ("heldout", "dev")  # the first is the one rules are judged on


@dataclass(frozen=True)
class Verdict:
    """One claim's outcome: PASS, PARTIAL, FAIL or INCOMPLETE, and our numbers."""

    verdict: str
    ours: str


def verdict(passed: list[bool], partial: bool = False) -> str:
    """PASS when every bullet holds; PARTIAL when the rule's fallback holds; else FAIL."""
    return "PASS" if all(passed) else "PARTIAL" if partial else "FAIL"


class ClaimData:
    """The release's ok primary rows, one config per method: ``method@tuned`` when the
    table has it, else the bare method (a method with nothing to tune). ``n_boot``: the
    draws of :meth:`ci`'s intervals; ``center``: how :meth:`M` summarises a suite's
    presets, ``"mean"`` (the rules') or ``"median"`` (a metric variant of
    docs/paper_disagreements.md)."""

    def __init__(
        self, table: pd.DataFrame, seed: int = 0, n_boot: int = 2000, center: str = "mean"
    ) -> None:
        if center not in ("mean", "median"):
            raise ValueError(f"center must be 'mean' or 'median', got {center!r}")
        ok = table[table["status"] == "ok"]
        keep = []
        for method, part in ok.groupby("method"):
            tuned = part[part["config"] == f"{method}@tuned"]
            keep.append(tuned if len(tuned) else part[part["config"] == method])
        self.table = pd.concat(keep) if keep else ok.iloc[:0]
        self.seed = seed
        self.n_boot = n_boot
        self.center = center

    def presets(self, suite: str) -> list[str]:
        return sorted(self.table.loc[self.table["suite"] == suite, "preset"].unique())

    def v(self, suite: str, col: str, methods=P14) -> pd.DataFrame:
        """(presets, methods) seed means of ``col``; NaN with fewer than 2 finite seeds."""
        t = self.table[(self.table["suite"] == suite) & self.table["method"].isin(methods)]
        if col not in t:
            return pd.DataFrame(index=self.presets(suite), columns=list(methods), dtype=float)
        g = t.groupby(["preset", "method"])[col]
        means = g.mean().where(g.count() >= 2).unstack("method")
        return means.reindex(index=self.presets(suite), columns=list(methods))

    def M(self, suite: str, col: str, methods=P14) -> pd.Series:
        """The mean (:attr:`center`) over the suite's presets of :meth:`v` per method (NaN
        if any is)."""
        v = self.v(suite, col, methods)
        if self.center == "median":
            return v.median(axis=0, skipna=False)
        return v.mean(axis=0, skipna=False)

    def missing(self, suite: str, methods) -> list[str]:
        """Methods with no ok run on some preset of the suite."""
        t = self.table[self.table["suite"] == suite]
        have = t.groupby("method")["preset"].nunique()
        n = len(self.presets(suite))
        return [m for m in methods if have.get(m, 0) < n]

    @cached_property
    def au_set(self) -> tuple[str, ...]:
        """P14 methods whose AU Spearman is finite on every held-out preset."""
        v = self.v(SUITES[0], "spearman_au")
        return tuple(m for m in P14 if v[m].notna().all())

    def ci(self, values: pd.DataFrame, stat) -> tuple[float, float]:
        """95 % percentile interval of ``stat(values)`` over presets resampled
        (:attr:`n_boot` draws)."""
        rng = np.random.default_rng(self.seed)
        x = values.to_numpy()
        draws = [
            stat(pd.DataFrame(x[rng.integers(0, len(x), len(x))], columns=values.columns))
            for _ in range(self.n_boot)
        ]
        lo, hi = np.nanpercentile(np.asarray(draws, dtype=float), [2.5, 97.5])
        return float(lo), float(hi)


def complete(values: pd.Series, what: str) -> pd.Series:
    """``values`` when every method has one; else a ValueError naming those without (a
    rule that picks a best or worst would otherwise skip them silently)."""
    gaps = list(values.index[values.isna()])
    if gaps:
        raise ValueError(f"no {what} for {', '.join(map(str, gaps))}")
    return values


def mean_ranks(v: pd.DataFrame, higher: bool = True) -> pd.Series:
    """R(m): the mean over presets of each method's rank within a preset (1 the best)."""
    return within_ranks(v, "higher" if higher else "lower").mean(axis=0)


def w_and_friedman(v: pd.DataFrame) -> tuple[float, float]:
    """Kendall's W and the Friedman p of the presets x methods matrix (complete columns)."""
    from scipy.stats import friedmanchisquare

    x = v.dropna(axis=1, how="any")
    if x.shape[1] < 2 or x.shape[0] < 2:
        return np.nan, np.nan
    return float(kendall_w(x.to_numpy())), float(friedmanchisquare(*x.T.to_numpy()).pvalue)


def top(series: pd.Series, k: int, higher: bool = True) -> list[str]:
    return list(series.sort_values(ascending=not higher).index[:k])


def fmt(series: pd.Series, digits: int = 3) -> str:
    return ", ".join(f"{k} {v:.{digits}f}" for k, v in series.items())
