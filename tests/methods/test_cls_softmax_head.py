"""The softmax head's last-layer posterior (Laplace and FSP-Laplace on classification):
laplax's GGN against the Kronecker formula in numpy, the draws' covariance against a dense
inverse, and the calibration objective against the log loss of the draws themselves."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from scipy.special import logsumexp, softmax

from udora.methods.nn.softmax_head import SoftmaxHeadPosterior, softmax_head_ggn

P, C, N = 4, 3, 25


@pytest.fixture(scope="module")
def head():
    rng = np.random.default_rng(0)
    phi = np.c_[rng.normal(size=(N, P - 1)), np.ones(N)]
    W = rng.normal(size=(P, C))
    return phi, W


def test_the_ggn_is_the_sum_of_kronecker_products(head):
    """``sum_i (phi_i phi_i^T) (x) (diag p_i - p_i p_i^T)`` in the row-major ``vec(W)``."""
    phi, W = head
    p = softmax(phi @ W, axis=1)
    expected = sum(
        np.kron(np.outer(f, f), np.diag(q) - np.outer(q, q)) for f, q in zip(phi, p, strict=True)
    )
    with jax.enable_x64(True):
        got = np.asarray(softmax_head_ggn(phi, W))
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("with_basis", [False, True])
def test_the_draws_have_the_posterior_covariance(head, with_basis):
    """With ``z = I`` the draws' offsets are the columns of a factor ``M``; ``M M^T`` is
    ``B (B^T G B / T + lambda I)^-1 B^T`` by a dense inverse (``B = I`` for Laplace)."""
    phi, W = head
    J = P * C
    basis = np.kron(np.random.default_rng(1).normal(size=(P, 2)), np.eye(C)) if with_basis else None
    B = np.eye(J) if basis is None else basis
    lam, T = 0.7, 2.5
    with jax.enable_x64(True):
        G = np.asarray(softmax_head_ggn(phi, W))
        post = SoftmaxHeadPosterior.build(phi, W, np.eye(B.shape[1]), basis)
        draws = post.draws(lam, T)
    M = (draws - W[None]).reshape(B.shape[1], J).T
    expected = B @ np.linalg.inv(B.T @ G @ B / T + lam * np.eye(B.shape[1])) @ B.T
    np.testing.assert_allclose(M @ M.T, expected, rtol=1e-8, atol=1e-12)


def test_the_calibration_objective_is_the_log_loss_of_the_draws(head):
    """At any ``(lambda, T)`` the objective is the validation log loss of the mean softmax
    of the K heads that :meth:`draws` returns, computed here with scipy."""
    phi, W = head
    rng = np.random.default_rng(2)
    z = rng.standard_normal((7, P * C))
    phi_v, y_v = phi[:9], rng.integers(0, C, 9)
    with jax.enable_x64(True):
        post = SoftmaxHeadPosterior.build(phi[9:], W, z)
        objective = post.val_log_loss(phi_v, y_v)
        for lam, T in [(0.1, 1.0), (3.0, 0.2), (10.0, 30.0)]:
            heads = post.draws(lam, T)
            log_p = np.log(softmax(np.einsum("vp,kpc->kvc", phi_v, heads), axis=-1))
            at_y = log_p[:, np.arange(9), y_v]
            expected = -np.mean(logsumexp(at_y, axis=0) - np.log(7))
            assert float(objective(lam, T)) == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("with_basis", [False, True])
def test_the_draws_do_not_depend_on_the_eigenbasis_picked(head, with_basis):
    """``G`` has P null directions (softmax's shift invariance), so an eigendecomposition
    may pick any basis of them (another CPU or LAPACK does): the draws are
    ``B S z_k``, ``S`` the symmetric square root of ``(B^T G B / T + lambda I)^-1`` by
    scipy, whichever basis; here a second factorisation, of the coordinates permuted."""
    from dataclasses import replace

    from scipy.linalg import sqrtm

    phi, W = head
    J = P * C
    basis = np.kron(np.random.default_rng(1).normal(size=(P, 2)), np.eye(C)) if with_basis else None
    B = np.eye(J) if basis is None else basis
    lam, T = 0.7, 2.5
    z = np.random.default_rng(3).standard_normal((5, B.shape[1]))
    with jax.enable_x64(True):
        G = B.T @ np.asarray(softmax_head_ggn(phi, W)) @ B
        post = SoftmaxHeadPosterior.build(phi, W, z, basis)
        order = np.random.default_rng(4).permutation(B.shape[1])
        g, U = np.linalg.eigh(G[np.ix_(order, order)])
        other_U = np.empty_like(U)
        other_U[order] = U  # the same G's eigenvectors, another basis of its null space
        other = replace(post, g=np.maximum(g, 0.0), U=other_U, z=z @ other_U)
        mine, theirs = post.draws(lam, T), other.draws(lam, T)
    S = np.real(sqrtm(np.linalg.inv(G / T + lam * np.eye(B.shape[1]))))
    expected = W[None] + (z @ S @ B.T).reshape(-1, P, C)
    np.testing.assert_allclose(mine, expected, rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(theirs, expected, rtol=1e-8, atol=1e-9)
    assert np.sum(np.linalg.eigvalsh(G) < 1e-9) >= (P if basis is None else 2)  # repeated
