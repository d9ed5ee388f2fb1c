"""The exact posterior against an independent dense numpy computation (LU solves, own kernels)."""

import jax
import numpy as np
import pytest
from numpy_kernels import numpy_sum_kernel
from test_kernels import SPECS

from udora.oracle.gp import (
    JITTERS,
    Conditioner,
    cholesky_with_jitter,
    gram,
    sample_joint,
    sample_posterior_paths,
)
from udora.oracle.kernels import build_kernel

D = 3


def dense_posterior(comps, Z_S, y_S, noise_var, mean, Z):
    A = numpy_sum_kernel(comps, Z_S, Z_S) + np.diag(noise_var)
    Kxs = numpy_sum_kernel(comps, Z, Z_S)
    m = mean + Kxs @ np.linalg.solve(A, y_S - mean)
    prior_var = np.diag(numpy_sum_kernel(comps, Z, Z))
    v = prior_var - np.einsum("ij,ji->i", Kxs, np.linalg.solve(A, Kxs.T))
    return m, v, prior_var


@pytest.mark.parametrize("spec", [*SPECS, None], ids=lambda s: s["type"] if s else "sum")
def test_posterior_equals_dense_solve(spec):
    comps = [spec] if spec else [SPECS[5], SPECS[10]]
    rng = np.random.default_rng(3)
    Z_S, Z = rng.normal(size=(60, D)), rng.normal(size=(45, D)) * 1.5
    noise_var = rng.uniform(0.01, 0.2, size=60)  # heteroscedastic, known
    y_S = rng.normal(size=60)
    with jax.enable_x64(True):
        kernel = build_kernel(comps, D)
    cond = Conditioner.fit(kernel, Z_S, y_S, noise_var, mean=0.3)
    mu, var = cond.predict(Z, chunk=16)  # three chunks, the last one padded
    m_ref, v_ref, prior_var = dense_posterior(comps, Z_S, y_S, noise_var, 0.3, Z)
    assert cond.jitter == 0.0
    np.testing.assert_allclose(mu, m_ref, rtol=1e-8, atol=1e-8 * np.abs(m_ref).max())
    # variances: relative to the prior variance at each point (the scale of the subtraction)
    np.testing.assert_allclose(var, v_ref, rtol=1e-8, atol=1e-8 * prior_var.max())


def test_chunking_does_not_change_results():
    rng = np.random.default_rng(4)
    Z_S, Z = rng.normal(size=(30, D)), rng.normal(size=(257, D))
    with jax.enable_x64(True):
        kernel = build_kernel([SPECS[3]], D)
    cond = Conditioner.fit(kernel, Z_S, rng.normal(size=30), np.full(30, 0.05), 0.0)
    a = cond.predict(Z, chunk=257)
    for chunk in (1, 7, 64, 1000):
        b = cond.predict(Z, chunk=chunk)
        np.testing.assert_allclose(b[0], a[0], rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(b[1], a[1], rtol=1e-10, atol=1e-13)


def test_jitter_is_smallest_that_works_and_reported():
    rng = np.random.default_rng(5)
    Z = rng.normal(size=(40, D))
    Z = np.concatenate([Z, Z[:10]])  # duplicated rows: the Gram matrix is singular
    with jax.enable_x64(True):
        kernel = build_kernel([SPECS[0]], D)
    K = gram(kernel, Z, Z)
    L, j = cholesky_with_jitter(K)
    assert j > 0.0
    np.testing.assert_allclose(L @ L.T, K + j * np.mean(np.diag(K)) * np.eye(50), atol=1e-10)
    smaller = JITTERS[JITTERS.index(j) - 1]
    with pytest.raises(np.linalg.LinAlgError):  # the next smaller jitter fails in numpy too
        np.linalg.cholesky(K + smaller * np.mean(np.diag(K)) * np.eye(50))


def test_joint_prior_draws_have_the_kernel_covariance():
    rng = np.random.default_rng(6)
    Z = rng.normal(size=(6, D))
    comps = [SPECS[2]]
    with jax.enable_x64(True):
        kernel = build_kernel(comps, D)
    draws = np.stack([sample_joint(kernel, Z, 0.5, rng.standard_normal(6))[0] for _ in range(4000)])
    K = numpy_sum_kernel(comps, Z, Z)
    # Monte Carlo: sd of a covariance estimate ~ sqrt(2/4000) * variance ~ 0.022 * 0.6
    np.testing.assert_allclose(draws.mean(axis=0), 0.5, atol=4 * np.sqrt(0.6 / 4000))
    np.testing.assert_allclose(np.cov(draws, rowvar=False), K, atol=0.07)


def test_posterior_paths_have_the_dense_posterior_mean_and_covariance():
    # pathwise draws over a pool that contains the training inputs (one of them twice),
    # against the dense posterior covariance K - K_PS A^-1 K_SP; Monte Carlo, fixed seed
    comps = [SPECS[5], SPECS[10]]
    rng = np.random.default_rng(6)
    Z = rng.normal(size=(50, D))
    idx = np.array([*range(0, 40, 2), 4])  # 21 observations, input 4 twice
    noise_var = rng.uniform(0.01, 0.2, size=idx.size)
    y_S = rng.normal(size=idx.size)
    M = 20_000
    with jax.enable_x64(True):
        kernel = build_kernel(comps, D)
    z_prior, z_noise = rng.standard_normal((50, M)), rng.standard_normal((idx.size, M))
    G, _ = sample_posterior_paths(kernel, Z, idx, y_S, noise_var, 0.3, z_prior, z_noise)
    assert G.shape == (M, 50)
    A = numpy_sum_kernel(comps, Z[idx], Z[idx]) + np.diag(noise_var)
    K_PS = numpy_sum_kernel(comps, Z, Z[idx])
    m = 0.3 + K_PS @ np.linalg.solve(A, y_S - 0.3)
    cov = numpy_sum_kernel(comps, Z, Z) - K_PS @ np.linalg.solve(A, K_PS.T)
    sd = np.sqrt(np.diag(cov))
    assert np.max(np.abs(G.mean(axis=0) - m) / (sd / np.sqrt(M))) < 5.0
    # each covariance entry's Monte Carlo sd is sqrt((S_ii S_jj + S_ij^2) / M)
    se = np.sqrt((np.outer(sd, sd) ** 2 + cov**2) / M)
    assert np.max(np.abs(np.cov(G.T) - cov) / se) < 6.0
