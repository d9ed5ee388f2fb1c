"""Scoring of UQ predictions against the oracle and realised outcomes (docs/design.md, "Scoring").

``score``/``curves`` give every metric and curve of one prediction on one task (names and
formulas in docs/metrics.md, each metric declared once in :mod:`udora.scoring.registry`);
the array-level functions below are the building blocks.
"""

from udora.scoring.agreement import pearson, scale_ratio, spearman
from udora.scoring.calibration import calibration_curve, calibration_log_ratios
from udora.scoring.declaration import Metric
from udora.scoring.ensemble import (
    error_spread_spearman,
    fair_crps_ensemble,
    spread_skill_ratio,
    top_decile_error_ratio,
)
from udora.scoring.proper import (
    gaussian_crps,
    gaussian_nll,
    interval_coverage,
    miscalibration_area,
    pit,
    pit_histogram,
    reliability_curve,
)
from udora.scoring.registry import metric, metrics
from udora.scoring.risk_coverage import aurc, normalised_aurc, risk_coverage_curve
from udora.scoring.score import curves, curves_arrays, observable_arrays, score, score_arrays
from udora.scoring.utilities import selective_utility, topk_utility

__all__ = [
    "Metric",
    "aurc",
    "calibration_curve",
    "calibration_log_ratios",
    "curves",
    "curves_arrays",
    "error_spread_spearman",
    "fair_crps_ensemble",
    "gaussian_crps",
    "gaussian_nll",
    "interval_coverage",
    "metric",
    "metrics",
    "miscalibration_area",
    "normalised_aurc",
    "observable_arrays",
    "pearson",
    "pit",
    "pit_histogram",
    "reliability_curve",
    "risk_coverage_curve",
    "scale_ratio",
    "score",
    "score_arrays",
    "selective_utility",
    "spearman",
    "spread_skill_ratio",
    "top_decile_error_ratio",
    "topk_utility",
]

# The classification kind's metrics are declared (registry.register_metric) when the
# package is imported, so every reader of the registry knows them.
from udora.scoring import classification as _classification  # noqa: F401
