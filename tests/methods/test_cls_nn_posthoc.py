"""The post-hoc neural methods on a classification task: DEUP's excess targets against
their definition (scipy's entropy on the classifier's own probabilities at V), and SWAG
holding out no validation split there (its variance factor is regression only), and the
Laplace methods' calibration diagnostics."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import entropy

from udora import methods
from udora.methods.base import NotFittedError
from udora.methods.contract_classification import make_classification_task
from udora.methods.deup import EXCESS_EPS, LOG_EXCESS_RANGE

pytestmark = pytest.mark.slow  # two network fits


def test_deup_regresses_the_positive_excess_log_loss_over_the_predicted_entropy():
    task = make_classification_task()
    m = methods.get_method("deup", n_epochs=20, n_epochs_excess=20)
    m.fit(task.X, task.y, seed=0, knowledge=task.knowledge(with_prior=False))
    V = m.val_idx_
    q = m.predict(task.X[V]).prob
    log_loss = -np.log(q[np.arange(V.size), task.y[V]])
    excess = np.maximum(log_loss - entropy(q, axis=1), 0.0)
    expected = np.clip(np.log(excess + EXCESS_EPS), *LOG_EXCESS_RANGE)
    np.testing.assert_allclose(m.excess_targets_, expected, rtol=1e-5, atol=1e-6)
    pred = m.predict(task.X_near)
    np.testing.assert_allclose(pred.aleatoric, entropy(pred.prob, axis=1), rtol=1e-10)


def test_swag_holds_out_nothing_on_classification_and_its_members_are_the_prediction():
    task = make_classification_task()
    m = methods.get_method("swag", n_epochs=20, n_checkpoints=3, swag_burn_in=5)
    m.fit(task.X, task.y, seed=0, knowledge=task.knowledge(with_prior=False))
    assert m.config.calibrate and m.val_idx_.size == 0 and m.scale_ == 1.0
    pred = m.predict(task.X_near)
    assert pred.member_probs.shape == (m.config.n_members, task.X_near.shape[0], 3)
    np.testing.assert_allclose(pred.prob, pred.member_probs.mean(axis=0), rtol=1e-12)


@pytest.mark.parametrize("name", ["laplace", "fsp_laplace"])
def test_the_laplace_methods_report_their_calibration_from_the_grid(name):
    """result.json records the calibrated ``prior_prec`` (laplace) and ``temperature``:
    each a point of the config's log grid; asked before a fit, it says so."""
    task = make_classification_task()
    m = methods.get_method(name, n_epochs=20)
    with pytest.raises(NotFittedError):
        m.diagnostics()
    m.fit(task.X, task.y, seed=0, knowledge=task.knowledge(with_prior=False))
    cfg, diag = m.config, m.diagnostics()
    grids = {
        "temperature": (cfg.log_temperature_min, cfg.log_temperature_max, cfg.temperature_grid)
    }
    if name == "laplace":
        grids["prior_prec"] = (cfg.log_prior_prec_min, cfg.log_prior_prec_max, cfg.prior_prec_grid)
    assert set(diag) == set(grids)
    for key, (lo, hi, n) in grids.items():
        assert np.min(np.abs(np.log10(diag[key]) - np.linspace(lo, hi, n))) < 1e-9, key


def test_laplace_at_the_top_of_its_prior_precision_grid_has_almost_no_eu():
    """What the diagnostic flags: a prior precision of 10^4 shrinks the K heads onto the
    MAP head, so the mutual information is a small fraction of a broad prior's (both
    grids pinned to one point, the same network and draws otherwise)."""
    task = make_classification_task()
    eu = {}
    for log_lam in (4.0, -2.0):
        m = methods.get_method(
            "laplace",
            n_epochs=20,
            log_prior_prec_min=log_lam,
            log_prior_prec_max=log_lam,
            log_temperature_min=0.0,
            log_temperature_max=0.0,
            temperature_grid=1,
        )
        m.fit(task.X, task.y, seed=0, knowledge=task.knowledge(with_prior=False))
        assert m.diagnostics() == pytest.approx({"prior_prec": 10**log_lam, "temperature": 1.0})
        eu[log_lam] = m.predict(task.X_near).epistemic
    assert eu[4.0].max() < 1e-3 and eu[4.0].mean() < 1e-2 * eu[-2.0].mean()
