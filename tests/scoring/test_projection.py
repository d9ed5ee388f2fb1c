"""The projection form of Appendix B (scoring.projection) against independent computations:
the best-in-class fit against numpy's least squares, the in-class share tr(P C P) / N
against a dense posterior covariance, and the identity with the Monte Carlo form (exact
projections of posterior draws as references) by a seeded Monte Carlo estimate."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from tiny_presets import dense_posterior_covariance, matern32_task

from udora.oracle.preset import parse_preset
from udora.oracle.task import build_task
from udora.scoring.decomposition import decompose
from udora.scoring.projection import project


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    return matern32_task(tmp_path_factory.mktemp("proj"), 140, 40, 3)


def _dense_covariance(task):
    return dense_posterior_covariance(task)


def test_cov_times_is_the_dense_posterior_covariance(task):
    C = _dense_covariance(task)
    np.testing.assert_allclose(np.diag(C), task.post_var, rtol=1e-7, atol=1e-9)
    V = np.random.default_rng(1).normal(size=(140, 3))
    np.testing.assert_allclose(task.posterior_cov_times(V), C @ V, rtol=1e-7, atol=1e-8)


def test_the_best_in_class_and_the_in_class_share_against_dense_computations(task):
    design = np.hstack([np.ones((140, 1)), task.X])
    beta, *_ = np.linalg.lstsq(design, task.post_mean, rcond=None)
    f_hat = design @ (beta + np.array([0.3, -0.1, 0.05]))  # some member of the affine class
    proj = project(
        f_hat, task.post_mean, task.post_var, np.zeros(140), design, task.posterior_cov_times
    )
    np.testing.assert_allclose(proj.best, design @ beta, rtol=1e-10, atol=1e-10)
    eu = task.post_var + (f_hat - task.post_mean) ** 2
    np.testing.assert_allclose(proj.estimation + proj.approximation, eu, rtol=1e-12)
    means = proj.pool_means()
    assert means["estimation"] >= 0 and means["approximation"] >= 0
    P = design @ np.linalg.pinv(design)  # the pool's hat matrix
    C = _dense_covariance(task)
    assert means["in_class_variance"] == pytest.approx(np.trace(P @ C @ P) / 140, rel=1e-8)
    pointwise = np.diag(P @ C + C @ P - P @ C @ P)
    np.testing.assert_allclose(proj.in_class_variance, pointwise, rtol=1e-7, atol=1e-10)


def test_the_monte_carlo_form_with_exact_projections_moves_the_in_class_share(task):
    """With references ``P g_i`` (exact, noise-free projections of the draws), Equation 32
    estimates ``(f_F - m)^2 + [(I - P) C (I - P)]_xx``: at every point within 5 standard
    errors over 4000 draws; pooled, the projection form's approximation minus the Monte
    Carlo one is ``tr(P C P) / N``."""
    design = np.hstack([np.ones((140, 1)), task.X])
    P = design @ np.linalg.pinv(design)
    f_hat = P @ task.post_mean + 0.2
    G, _ = task.posterior_draws(4000, seed=5)
    mc = decompose(f_hat, G, G @ P.T, task.post_mean, task.post_var)
    proj = project(
        f_hat, task.post_mean, task.post_var, np.zeros(140), design, task.posterior_cov_times
    )
    gap = np.abs(mc.approximation - proj.expected_mc_approximation)
    assert np.all(gap <= 5 * mc.approximation_se + 1e-9)
    means, mc_means = proj.pool_means(), mc.pool_means()
    moved = means["approximation"] - mc_means["approximation"]
    assert moved == pytest.approx(means["in_class_variance"], abs=5 * mc_means["approximation_se"])
    assert means["in_class_variance"] > 10 * mc_means["approximation_se"]  # a visible share


def test_a_class_holding_the_posterior_mean_puts_all_eu_in_approximation(tmp_path):
    """Under a linear-kernel GP the posterior mean is affine: the projection form of the
    exact predictor has estimation 0 and approximation s2_f (the issue's 'projection:
    estimation 0, all approximation')."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(80, 2))
    pd.DataFrame(X, columns=["a", "b"]).assign(target=X[:, 0] + rng.normal(size=80)).to_csv(
        tmp_path / "l.csv.gz", index=False
    )
    preset = parse_preset(
        {
            "name": "l",
            "suite": "test",
            "source": {"file": "l.csv.gz"},
            "features": ["a", "b"],
            "pool_size": 80,
            "n_train": 30,
            "kernel": [{"type": "linear", "variance": 1.0}],
            "noise": {"std_min": 0.2, "std_max": 0.4},
            "shift": [0.2, 0.2, 0.2, 0.2, 0.2],
        },
        "l.yaml",
    )
    t = build_task(preset, 0, data_dir=tmp_path)
    design = np.hstack([np.ones((80, 1)), t.X])
    proj = project(
        t.post_mean, t.post_mean, t.post_var, np.zeros(80), design, t.posterior_cov_times
    )
    np.testing.assert_allclose(proj.estimation, 0.0, atol=1e-9 * t.post_var.mean())
    np.testing.assert_allclose(proj.approximation, t.post_var, rtol=1e-9)
