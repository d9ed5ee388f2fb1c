"""Uncertainty calibration curves: binned estimate against binned oracle target.

docs/design.md, "Scoring".

Points are sorted by the estimate ``e`` and cut into ``B`` (default 10) quantile bins of
equal size (sizes differ by at most one; tied estimates are split in index order). Per bin
``b`` the curve holds ``mean_{i in b} e_i`` and ``mean_{i in b} t_i``; a calibrated estimate
lies on the diagonal. Two summaries over the bins, with ``r_b = log(mean_b e / mean_b t)``:

    calibration error  = (1/B) sum_b |r_b|     (0 = calibrated, in log units)
    calibration bias   = (1/B) sum_b r_b       (< 0: the estimate is too small)

Both need positive bin means, so they are for variance-valued estimates against
variance-valued targets (the squared-error row of docs/design.md, "Targets").
"""

from __future__ import annotations

import numpy as np

from udora.scoring._checks import all_finite, vectors


def calibration_curve(
    estimate: np.ndarray, target: np.ndarray, n_bins: int = 10
) -> tuple[np.ndarray, np.ndarray]:
    """Mean estimate and mean target in each quantile bin of the estimate.

    Bin ``b`` (0-based) holds the points at sorted positions ``j`` with
    ``floor(j B / N) = b``; bins run from the smallest estimates to the largest.

    Args:
        estimate: ``e``, shape (N,).
        target: ``t``, shape (N,).
        n_bins: ``B``, at least 1.

    Returns:
        ``(mean_estimate, mean_target)``, each of shape (B,); a bin left empty (N < B) is NaN.
    """
    e, t = vectors("calibration_curve", estimate=estimate, target=target)
    if n_bins < 1:
        raise ValueError(f"calibration_curve: `n_bins` must be >= 1, got {n_bins}")
    n = e.shape[0]
    order = np.argsort(e, kind="stable")
    bin_of = np.empty(n, dtype=np.int64)
    bin_of[order] = np.arange(n) * n_bins // max(n, 1)
    counts = np.bincount(bin_of, minlength=n_bins).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_e = np.bincount(bin_of, weights=e, minlength=n_bins) / counts
        mean_t = np.bincount(bin_of, weights=t, minlength=n_bins) / counts
    return mean_e, mean_t


def calibration_log_ratios(
    estimate: np.ndarray, target: np.ndarray, n_bins: int = 10
) -> tuple[float, float]:
    """Mean absolute and signed log ratio of binned estimate to binned target.

    ``r_b = log(mean_b e / mean_b t)``; returns ``((1/B) sum_b |r_b|, (1/B) sum_b r_b)``.

    Args:
        estimate: ``e``, shape (N,), a variance.
        target: ``t``, shape (N,), a variance in the same units.
        n_bins: ``B``.

    Returns:
        ``(calibration_error, calibration_bias)`` as floats; both NaN if any bin mean is not
        positive and finite (e.g. an estimate that is zero on a whole bin) or a bin is empty.
    """
    mean_e, mean_t = calibration_curve(estimate, target, n_bins)
    if not all_finite(mean_e, mean_t) or np.any(mean_e <= 0) or np.any(mean_t <= 0):
        return float("nan"), float("nan")
    r = np.log(mean_e) - np.log(mean_t)
    return float(np.mean(np.abs(r))), float(np.mean(r))
