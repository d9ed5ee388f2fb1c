"""The metric variants of docs/paper_disagreements.md (experiment E0): a claim's rule
re-evaluated with one quantity defined another way, everything else as the rule has it.

Each variant is a :class:`Variant`: columns of the claim rows it replaces (by columns
:func:`derive` computes from each run's curve summaries, or by a metric every run
already has), how a suite's presets are summarised, or the column one bullet of a rule
reads. The rules themselves are never copied: a variant hands the claim's own function
other columns (``claims.c9``'s ``uninformative``) or another
:class:`~udora.experiments.publish.claim_data.ClaimData` summary (``center``).

Derived columns, per run, from the 10 calibration bins (``calib_<u>_estimate`` and
``calib_<u>_target``, the bins' mean estimate and mean target, ``u`` in eu, au) with
``r_b = log(mean_b e / mean_b t)``:

- ``calib_shape_<u>``: ``(1/B) sum_b |r_b - rbar|``, ``rbar = (1/B) sum_b r_b``: the
  calibration error left after rescaling the estimate by ``exp(-rbar)``;
- ``calib_slope_<u>``: ``|1 - s|``, ``s`` the least-squares slope of ``log mean_b t`` on
  ``log mean_b e``;

and from the risk-coverage summary (``rc_coverage``, ``rc_<u>``, ``rc_<u>_oracle``: the
retained mean target ``R(c)`` at coverage ``c``, most certain first):

- ``rr50_<u>`` (and ``rr50_<u>_oracle``): ``1 - R(0.5) / R(1)``, the share of the mean
  target removed by keeping the 50 % most certain points (0 for a random order; ``R(0.5)``
  linearly interpolated on the summary's coverage grid).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pandas as pd

from udora.errors import UserError
from udora.experiments.publish import claims as rules
from udora.experiments.publish.claim_data import ClaimData, Verdict

UNCERTAINTIES = ("eu", "au")


@dataclass(frozen=True)
class Variant:
    """One metric re-definition: ``columns`` maps a column the rules read to the column
    that replaces it; ``center`` how :meth:`ClaimData.M` summarises presets; ``checks``
    replaces a claim's check (by id) with its own function called with other columns."""

    id: str
    what: str
    claims: tuple[str, ...]
    columns: Mapping[str, str] = field(default_factory=dict)
    center: str = "mean"
    checks: Mapping[str, Callable[[ClaimData], Verdict]] = field(default_factory=dict)

    def apply(self, table: pd.DataFrame) -> pd.DataFrame:
        """``table`` (claim rows with :func:`derive`'s columns) with :attr:`columns`
        replaced; raises UserError naming a replacing column the table lacks."""
        missing = [src for src in self.columns.values() if src not in table]
        if missing:
            raise UserError(f"variant {self.id}: the rows have no column {', '.join(missing)}")
        return table.assign(**{dst: table[src] for dst, src in self.columns.items()})

    def data(self, table: pd.DataFrame, **kwargs) -> ClaimData:
        """The claims' reading of :meth:`apply`'s table."""
        return ClaimData(self.apply(table), center=self.center, **kwargs)

    def check(self, claim) -> Callable[[ClaimData], Verdict]:
        """The function that judges ``claim`` (a :class:`~udora.experiments.publish.claims.Claim`)
        under this variant."""
        return self.checks.get(claim.id, claim.check)


VARIANTS = (
    Variant(
        "M1",
        "retained risk = realised squared error: nAURC_eu replaced by nAURC_eu_realised",
        ("C5", "C6"),
        columns={"nAURC_eu": "nAURC_eu_realised"},
    ),
    Variant(
        "M2a",
        "calibration after the best single rescaling: calib_abs_log_ratio_<u> replaced by "
        "calib_shape_<u>",
        ("C11", "C12"),
        columns={f"calib_abs_log_ratio_{u}": f"calib_shape_{u}" for u in UNCERTAINTIES},
    ),
    Variant(
        "M2b",
        "calibration slope: calib_abs_log_ratio_<u> replaced by calib_slope_<u>",
        ("C11", "C12"),
        columns={f"calib_abs_log_ratio_{u}": f"calib_slope_{u}" for u in UNCERTAINTIES},
    ),
    Variant("M2c", "the median over presets instead of the mean", ("C11", "C12"), center="median"),
    Variant(
        "M3",
        "'close to uninformative' (C9 bullet b) = rr50_au < 0.10 instead of nAURC_au < 0.10",
        ("C9",),
        checks={"C9": partial(rules.c9, uninformative="rr50_au")},
    ),
)


def get_variant(name: str) -> Variant:
    """The variant named ``name`` (case-insensitive); raises UserError listing the known."""
    by_id = {v.id.lower(): v for v in VARIANTS}
    if name.lower() not in by_id:
        raise UserError(f"unknown variant {name!r}; known: {', '.join(v.id for v in VARIANTS)}")
    return by_id[name.lower()]


def calibration_variants(estimate: np.ndarray, target: np.ndarray) -> tuple[float, float]:
    """(shape error, |1 - slope|) of one run's calibration bins.

    Args:
        estimate: the bins' mean estimate, shape (B,).
        target: the bins' mean target, shape (B,).

    Returns:
        Two floats; NaN when a bin mean is missing or not positive, or B < 2.
    """
    e, t = np.asarray(estimate, dtype=float), np.asarray(target, dtype=float)
    if e.shape != t.shape or e.size < 2 or not (np.isfinite(e).all() and np.isfinite(t).all()):
        return float("nan"), float("nan")
    if (e <= 0).any() or (t <= 0).any():
        return float("nan"), float("nan")
    le, lt = np.log(e), np.log(t)
    r = le - lt
    shape = float(np.mean(np.abs(r - r.mean())))
    spread = np.sum((le - le.mean()) ** 2)
    if spread == 0:  # one estimate for every bin: no slope
        return shape, float("nan")
    slope = np.sum((le - le.mean()) * (lt - lt.mean())) / spread
    return shape, float(abs(1.0 - slope))


def retained_reduction(coverage: np.ndarray, retained: np.ndarray, at: float = 0.5) -> float:
    """``1 - R(at) / R(1)`` of a risk-coverage summary.

    Args:
        coverage: increasing coverages in (0, 1], shape (K,), the last 1.
        retained: the retained mean target at each, shape (K,).
        at: the coverage kept.

    Returns:
        A float; NaN when a value is missing or ``R(1) <= 0``.
    """
    c, r = np.asarray(coverage, dtype=float), np.asarray(retained, dtype=float)
    if c.shape != r.shape or c.size < 2 or not (np.isfinite(c).all() and np.isfinite(r).all()):
        return float("nan")
    if r[-1] <= 0 or c[-1] != 1.0:
        return float("nan")
    return float(1.0 - np.interp(at, c, r) / r[-1])


def derive(table: pd.DataFrame, curves: Mapping[tuple, Mapping]) -> pd.DataFrame:
    """``table`` with the module's derived columns, each run's from its curve summaries
    (``curves[(preset, method, config, seed)]``, as :func:`load_runs` and
    :func:`read_release` give them); NaN where a run has none."""
    out: dict[str, list[float]] = {}
    names = [f"calib_{k}_{u}" for k in ("shape", "slope") for u in UNCERTAINTIES]
    names += [f"rr50_{u}{o}" for u in UNCERTAINTIES for o in ("", "_oracle")]
    for name in names:
        out[name] = []
    keys = zip(table["preset"], table["method"], table["config"], table["seed"], strict=True)
    for preset, method, config, seed in keys:
        c = curves.get((preset, method, config, int(seed)), {})
        for u in UNCERTAINTIES:
            est, tgt = c.get(f"calib_{u}_estimate"), c.get(f"calib_{u}_target")
            shape, slope = (
                calibration_variants(_floats(est), _floats(tgt))
                if est is not None and tgt is not None
                else (np.nan, np.nan)
            )
            out[f"calib_shape_{u}"].append(shape)
            out[f"calib_slope_{u}"].append(slope)
            for o in ("", "_oracle"):
                cov, ret = c.get("rc_coverage"), c.get(f"rc_{u}{o}")
                value = np.nan
                if cov is not None and ret is not None:
                    value = retained_reduction(_floats(cov), _floats(ret))
                out[f"rr50_{u}{o}"].append(value)
    return table.assign(**{k: np.asarray(v, dtype=float) for k, v in out.items()})


def _floats(values) -> np.ndarray:
    """A curve summary (None for a non-finite point) as floats, NaN for None."""
    return np.asarray([np.nan if v is None else v for v in values], dtype=float)
