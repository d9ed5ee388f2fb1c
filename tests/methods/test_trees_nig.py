"""NGBoost-NIG: the log score, its gradient and Fisher matrix against independent references.

References: scipy's Student-t density (the NIG marginal of y has ``df = 2 alpha``,
``loc = gamma``, ``scale^2 = beta (1 + nu) / (nu alpha)``), central finite differences of
that density, and a Monte Carlo average of ``grad grad^T`` over scipy draws.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from udora import methods
from udora.methods.ngboost_nig import (
    NIG,
    evidence_penalty,
    evidence_penalty_grad,
    nig_distribution,
    nig_fisher,
    nig_from_theta,
    nig_nll,
    nig_nll_grad,
)

# (gamma, log nu, log(alpha - 1), log beta) columns: ordinary, alpha near 1, large alpha.
THETAS = np.array(
    [
        [0.3, -1.2, 2.0, 0.5],
        [np.log(0.7), 1.5, -3.0, -0.4],
        [np.log(1.5), -4.0, 3.5, 0.2],
        [np.log(0.4), 0.3, 1.0, -2.0],
    ]
)


def student_t(theta: np.ndarray):
    """The scipy t distribution of the NIG marginal, built from theta ``(4, n)`` by hand."""
    gamma, log_nu, log_am1, log_beta = theta
    nu, alpha, beta = np.exp(log_nu), 1.0 + np.exp(log_am1), np.exp(log_beta)
    return stats.t(df=2.0 * alpha, loc=gamma, scale=np.sqrt(beta * (1.0 + nu) / (nu * alpha)))


def test_nig_score_is_student_t_negative_log_density():
    y = np.array([1.1, -0.4, 0.25, 7.0])
    np.testing.assert_allclose(nig_nll(y, THETAS), -student_t(THETAS).logpdf(y), rtol=1e-12)


def test_nig_gradient_matches_finite_differences_of_the_t_density():
    y = np.array([1.1, -0.4, 0.25, 7.0])
    h = 1e-6
    numeric = np.empty((4, 4))
    for k in range(4):
        step = np.zeros((4, 1))
        step[k] = h
        up = -student_t(THETAS + step).logpdf(y)
        down = -student_t(THETAS - step).logpdf(y)
        numeric[:, k] = (up - down) / (2 * h)
    np.testing.assert_allclose(nig_nll_grad(y, THETAS), numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("column", [0, 1, 3])
def test_nig_fisher_is_expected_outer_product_of_gradients(column):
    """Monte Carlo with a fixed generator; tolerance 5 standard errors per entry."""
    theta = THETAS[:, [column]]
    draws = student_t(theta).rvs(size=200_000, random_state=np.random.default_rng(7))
    grads = nig_nll_grad(draws, np.repeat(theta, draws.size, axis=1))
    outer = np.einsum("si,sj->sij", grads, grads)
    mc, se = outer.mean(axis=0), outer.std(axis=0) / np.sqrt(draws.size)
    np.testing.assert_array_less(
        np.abs(grads.mean(axis=0)), 5 * grads.std(axis=0) / np.sqrt(draws.size)
    )
    np.testing.assert_array_less(np.abs(nig_fisher(theta)[0] - mc), 5 * se + 1e-12)


def test_nig_fisher_has_rank_three_with_the_unidentified_direction_as_null_space():
    fisher = nig_fisher(THETAS)
    _, nu, _, _ = nig_from_theta(THETAS)
    for i in range(THETAS.shape[1]):
        eig = np.linalg.eigvalsh(fisher[i])
        assert eig[0] < 1e-12 * eig[-1] and eig[1] > 1e-8 * eig[-1]
        # (log nu, log beta) moving as (1, 1/(1+nu)) keeps the t scale fixed (to first order).
        null = np.array([0.0, 1.0, 0.0, 1.0 / (1.0 + nu[i])])
        np.testing.assert_allclose(fisher[i] @ null, 0.0, atol=1e-12)
        h = 1e-6
        y = np.array([0.9])
        th = THETAS[:, [i]]
        slope = (
            -student_t(th + h * null[:, None]).logpdf(y)
            + student_t(th - h * null[:, None]).logpdf(y)
        ) / (2 * h)
        assert abs(slope[0]) < 1e-7


def test_nig_initial_fit_matches_mean_and_variance_of_y():
    y = np.random.default_rng(0).normal(3.0, 2.0, size=500)
    dist = student_t(NIG.fit(y)[:, None])
    assert dist.mean()[0] == pytest.approx(np.mean(y), rel=1e-12)
    assert dist.var()[0] == pytest.approx(np.var(y), rel=1e-12)


def test_ngboost_nig_predictive_is_the_student_t_marginal_in_original_units(task):
    method = methods.get_method("ngboost_nig", n_estimators=30).fit(task.X, task.y, seed=1)
    pred = method.predict(task.X_near)
    theta = method.model_.pred_param(task.X_near).T
    marginal = student_t(theta)
    sd, mu = np.std(task.y), np.mean(task.y)
    np.testing.assert_allclose(pred.mean, mu + sd * marginal.mean(), rtol=1e-12)
    np.testing.assert_allclose(pred.total, sd**2 * marginal.var(), rtol=1e-10)
    _, nu, _, _ = nig_from_theta(theta)
    np.testing.assert_allclose(pred.aleatoric / pred.epistemic, nu, rtol=1e-12)


def test_ngboost_nig_boosting_lowers_the_training_score(task):
    """30 natural-gradient steps beat the constant start on the training NLL."""
    method = methods.get_method("ngboost_nig", n_estimators=30).fit(task.X, task.y, seed=1)
    ys = (task.y - task.y.mean()) / task.y.std()
    start = NIG.fit(ys)[:, None].repeat(ys.size, axis=1)
    fitted = method.model_.pred_param(task.X).T
    assert nig_nll(ys, fitted).mean() < nig_nll(ys, start).mean() - 0.3


def test_the_evidential_regulariser_and_its_gradient():
    """The score with ``evid_strength`` is scipy's t negative log density plus
    ``lambda |y - gamma| (2 nu + alpha)`` (the paper's D.4 regulariser, from the NIG
    parameters by hand); its gradient matches central finite differences."""
    y = np.array([1.1, -0.4, 0.25, 7.0])
    gamma, log_nu, log_am1, _ = THETAS
    by_hand = np.abs(y - gamma) * (2 * np.exp(log_nu) + 1 + np.exp(log_am1))
    np.testing.assert_allclose(evidence_penalty(y, THETAS), by_hand, rtol=1e-14)
    from ngboost.manifold import manifold
    from ngboost.scores import LogScore

    scored = manifold(LogScore, nig_distribution(1e-2, evid_strength=0.3))(THETAS)
    np.testing.assert_allclose(
        scored.score(y), -student_t(THETAS).logpdf(y) + 0.3 * by_hand, rtol=1e-12
    )
    h = 1e-6
    numeric = np.empty((4, 4))
    for k in range(4):
        step = np.zeros((4, 1))
        step[k] = h
        numeric[:, k] = (
            evidence_penalty(y, THETAS + step) - evidence_penalty(y, THETAS - step)
        ) / (2 * h)
    np.testing.assert_allclose(evidence_penalty_grad(y, THETAS), numeric, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(
        scored.d_score(y), nig_nll_grad(y, THETAS) + 0.3 * numeric, rtol=1e-6, atol=1e-8
    )
    # the boosting step: the log score's ridged natural gradient (numpy's solve) plus the
    # regulariser's plain gradient, so the ridge does not scale the regulariser's part
    for ridge in (1e-2, 3e-2):
        step = manifold(LogScore, nig_distribution(ridge, evid_strength=0.3))(THETAS).grad(y)
        fisher = nig_fisher(THETAS) + ridge * np.eye(4)
        natural = np.linalg.solve(fisher, nig_nll_grad(y, THETAS)[:, :, None])[:, :, 0]
        np.testing.assert_allclose(step, natural + 0.3 * numeric, rtol=1e-6, atol=1e-8)


def test_a_regularised_fit_holds_less_evidence_where_it_errs(task):
    """With the regulariser the boosted fit trades training NLL for a smaller mean
    ``|r| (2 nu + alpha)``: the method passes ``evid_strength`` to its score."""
    fits = {
        lam: methods.get_method("ngboost_nig", n_estimators=30, evid_strength=lam).fit(
            task.X, task.y, seed=1
        )
        for lam in (0.0, 1.0)
    }
    ys = (task.y - task.y.mean()) / task.y.std()
    theta = {lam: m.model_.pred_param(task.X).T for lam, m in fits.items()}
    penalty = {lam: evidence_penalty(ys, t).mean() for lam, t in theta.items()}
    nll = {lam: nig_nll(ys, t).mean() for lam, t in theta.items()}
    assert penalty[1.0] < penalty[0.0] and nll[1.0] > nll[0.0]
