"""Joint predictions (scoring.joint): the closed-form expected joint log loss against a
seeded Monte Carlo average over exact posterior draws (pathwise sampling, an independent
route) and scipy's Gaussian log density; its split into joint AU, joint MI and excess
against a direct numpy computation; tau = 1 against the pointwise NLL targets
(oracle.targets); the total-correlation identity of a diagonal predictive."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import multivariate_normal
from tiny_presets import matern32_task

from udora.oracle.joint import DESIGNS, joint_batches
from udora.oracle.targets import posterior_targets
from udora.scoring.joint import (
    batch_parts,
    batch_predictive,
    expected_joint_nll,
    gaussian_kl,
    joint_au,
    joint_metrics,
    joint_mi,
    member_covariance,
)


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    return matern32_task(tmp_path_factory.mktemp("jointscore"), 120, 30, 2)


def _spd(rng, B, t, scale=1.0):
    A = rng.normal(size=(B, t, t))
    return scale * (A @ A.transpose(0, 2, 1) / t + 0.2 * np.eye(t))


def test_expected_joint_log_loss_against_monte_carlo_over_posterior_draws(task):
    batches = joint_batches(task, per_design=5)
    b = int(np.flatnonzero(batches.design == DESIGNS.index("neighbour"))[0])
    row = batches.idx[b]
    rng = np.random.default_rng(11)
    mu = task.post_mean[row] + 0.3 * rng.normal(size=row.size)
    Sigma = _spd(rng, 1, row.size, 0.05)[0] + np.diag(task.noise_var[row])
    G, _ = task.posterior_draws(20000, seed=5)  # exact joint draws of f | S, (M, N)
    y = G[:, row] + np.sqrt(task.noise_var[row]) * rng.standard_normal((G.shape[0], row.size))
    loss = -multivariate_normal(mu, Sigma).logpdf(y)
    closed = expected_joint_nll(
        task.post_mean[row][None],
        batches.post_cov[b][None],
        task.noise_var[row][None],
        mu[None],
        Sigma[None],
    )[0]
    se = loss.std(ddof=1) / np.sqrt(loss.size)
    assert abs(loss.mean() - closed) < 4 * se, (loss.mean(), closed, se)


def test_the_split_and_the_kl_against_a_direct_computation():
    rng = np.random.default_rng(3)
    B, t = 6, 5
    S, Sigma = _spd(rng, B, t), _spd(rng, B, t, 2.0)
    noise = rng.uniform(0.1, 0.5, size=(B, t))
    m, mu = rng.normal(size=(B, t)), rng.normal(size=(B, t))
    P = S + noise[..., None] * np.eye(t)
    for i in range(B):  # KL(N(m, P) || N(mu, Sigma)) by inverses and slogdet
        inv = np.linalg.inv(Sigma[i])
        d = m[i] - mu[i]
        kl = 0.5 * (
            np.trace(inv @ P[i])
            + d @ inv @ d
            - t
            + np.linalg.slogdet(Sigma[i])[1]
            - np.linalg.slogdet(P[i])[1]
        )
        assert gaussian_kl(m[i : i + 1], P[i : i + 1], mu[i : i + 1], Sigma[i : i + 1])[
            0
        ] == pytest.approx(kl, rel=1e-10)
    total = expected_joint_nll(m, S, noise, mu, Sigma)
    parts = joint_au(noise) + joint_mi(S, noise) + gaussian_kl(m, P, mu, Sigma)
    np.testing.assert_allclose(total, parts, rtol=1e-11)
    entropy = [0.5 * np.linalg.slogdet(2 * np.pi * np.e * P[i])[1] for i in range(B)]
    np.testing.assert_allclose(joint_au(noise) + joint_mi(S, noise), entropy, rtol=1e-11)


def test_tau_one_is_the_pointwise_log_score_excess(task):
    rng = np.random.default_rng(4)
    N = task.X.shape[0]
    mean = task.post_mean + rng.normal(scale=0.2, size=N)
    a, e = rng.uniform(0.01, 0.2, N), rng.uniform(0.0, 0.3, N)
    parts = batch_parts(
        post_mean=task.post_mean[:, None],
        post_cov=task.post_var[:, None, None],
        noise_var=task.noise_var[:, None],
        mean=mean[:, None],
        Sigma=(a + e)[:, None, None],
    )
    t = posterior_targets(
        mean,
        a,
        e,
        post_mean=task.post_mean,
        post_var=task.post_var,
        noise_var=task.noise_var,
        loss="nll",
    )
    np.testing.assert_allclose(parts["joint_excess"], t.gen_bias, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(parts["marginal_excess"], t.gen_bias, rtol=1e-9, atol=1e-12)


def _pool_prediction(task, rng):
    N = task.X.shape[0]
    return dict(
        mean=task.post_mean + rng.normal(scale=0.1, size=N),
        aleatoric=task.noise_var * rng.uniform(0.5, 2.0, N),
        epistemic=task.post_var * rng.uniform(0.5, 2.0, N),
    )


def test_a_diagonal_predictive_captures_no_correlation_and_the_posterior_all(task):
    batches = joint_batches(task, per_design=20)
    common = dict(
        idx=batches.idx,
        design=batches.design,
        post_cov=batches.post_cov,
        post_mean=task.post_mean,
        noise_var=task.noise_var,
        designs=DESIGNS,
    )
    p = _pool_prediction(task, np.random.default_rng(5))
    diag = np.zeros_like(batches.post_cov)
    t = batches.idx.shape[1]
    diag[:, np.arange(t), np.arange(t)] = p["epistemic"][batches.idx]
    out = joint_metrics(**common, **p, eu_cov=diag)
    for d in DESIGNS:
        assert out[f"joint_share_{d}"] == pytest.approx(0.0, abs=1e-7)
    exact = joint_metrics(
        **common,
        mean=task.post_mean,
        aleatoric=task.noise_var,
        epistemic=task.post_var,
        eu_cov=batches.post_cov,
    )
    for d in DESIGNS:
        assert exact[f"joint_share_{d}"] == pytest.approx(1.0, abs=1e-6)
        assert exact[f"joint_excess_{d}"] == pytest.approx(0.0, abs=1e-7)
    none = joint_metrics(**common, **p)
    assert all(np.isnan(v) for v in none.values())


def test_member_covariance_is_the_members_covariance(task):
    rng = np.random.default_rng(6)
    members = rng.normal(size=(8, 3, 4))  # K, B, t
    eu = members.var(axis=0)  # ddof 0, as combined members' EU
    expected = np.stack([np.cov(members[:, b, :], rowvar=False, ddof=0) for b in range(3)])
    np.testing.assert_allclose(member_covariance(members, eu), expected, rtol=1e-12, atol=1e-14)
    Sigma = batch_predictive(expected, np.full((3, 4), 0.5))
    np.testing.assert_allclose(Sigma - expected - 0.5 * np.eye(4), 0.0, atol=1e-8)
