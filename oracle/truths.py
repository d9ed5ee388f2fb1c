"""Ground-truth families: the prior of ``f`` and its exact posterior given the sample.

docs/design.md, "Ground-truth families". A preset's ``truth`` (:class:`oracle.preset.Truth`)
chooses how ``f`` is drawn on the pool; every family keeps an exact posterior under the
task's known noise, so the targets stay exact:

- ``gp`` (the default): ``f ~ GP(m, k)`` with the preset's fitted kernel;
- ``warped``: ``f(x) = h(w(x))`` with ``h ~ GP(m, k)`` and the coordinate-wise warp
  ``w(z) = sinh(a asinh(z)) / a`` of the standardised inputs (``a`` = ``truth.warp``): a GP
  with the kernel ``k(w(x), w(y))``, the fitted one near the data's centre (``w(0) = 0``,
  ``w'(0) = 1``) and, for ``a > 1``, shorter and shorter effective lengthscales
  (``l / w'(z)``) away from it: non-stationary;
- ``features``: the Bayesian linear model ``f(x) = m + phi(x)^T beta``,
  ``beta ~ N(0, I_D)``, in ``truth.features`` random features per component of the fitted
  kernel (:mod:`oracle.features`, drawn once from ``truth.seed``): the same covariance as
  the GP in expectation over the features, but a finite-rank prior. Its posterior is
  ``beta | S ~ N(mu, Sigma)``, ``Sigma^-1 = I + Phi_S^T N^-1 Phi_S``,
  ``mu = Sigma Phi_S^T N^-1 (y_S - m)`` (``N`` the noise variances), so
  ``m_S(x) = m + phi(x)^T mu`` and ``s2_f(x) = phi(x)^T Sigma phi(x)``.

Each family offers the three operations :func:`oracle.task.build_task` and
:meth:`oracle.task.OracleTask.posterior_draws` need, on standardised inputs ``Z``:
``draw_prior``, ``condition`` (an object with ``predict(Z) -> (mean, var)``) and
``draw_posterior`` (joint draws of ``f | S`` over a pool), ``posterior_cov_times``
(the posterior covariance over a pool times a few columns, for the projection form of
:mod:`scoring.projection`) and ``posterior_cross`` (the posterior covariance between two
sets of pool points, for the joint and acquisition oracles of :mod:`oracle.joint`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
import scipy.linalg as sla

from udora.oracle.features import kernel_features
from udora.oracle.gp import (
    Conditioner,
    cholesky_with_jitter,
    gram,
    sample_conditional_marginals,
    sample_joint,
    sample_posterior_paths,
)
from udora.oracle.kernels import build_kernel
from udora.oracle.streams import stream


def warp(Z: np.ndarray, a: float) -> np.ndarray:
    """``sinh(a asinh(z)) / a`` elementwise: (N, d) -> (N, d); odd, monotone, slope 1 at 0."""
    return np.sinh(a * np.arcsinh(np.asarray(Z, dtype=np.float64))) / a


@dataclass(frozen=True)
class GPTruth:
    """``f ~ GP(mean, kernel)`` on the inputs ``inputs(Z)`` (identity, or a warp)."""

    components: tuple[dict[str, Any], ...]
    mean: float
    d: int
    warp_strength: float | None = None

    def inputs(self, Z: np.ndarray) -> np.ndarray:
        """The kernel's inputs at standardised ``Z`` (N, d): ``Z`` or its warp."""
        return Z if self.warp_strength is None else warp(Z, self.warp_strength)

    def _kernel(self):
        with jax.enable_x64(True):
            return build_kernel(list(self.components), self.d)

    def draw_prior(
        self, Z: np.ndarray, idx: np.ndarray, rng: np.random.Generator, joint_limit: int
    ) -> tuple[np.ndarray, float, bool]:
        """``(f (N,), jitter, joint)``: a prior draw on the pool ``Z`` (N, d). Pools above
        ``joint_limit`` draw jointly at the unique training points ``idx`` and from the
        exact conditional marginals elsewhere (``joint`` False)."""
        kernel, U = self._kernel(), self.inputs(Z)
        N = U.shape[0]
        if joint_limit >= N:
            f, jitter = sample_joint(kernel, U, self.mean, rng.standard_normal(N))
            return f, jitter, True
        unique = np.unique(idx)
        f = np.empty(N)
        f[unique], jitter = sample_joint(
            kernel, U[unique], self.mean, rng.standard_normal(unique.size)
        )
        rest = np.setdiff1d(np.arange(N), unique)
        f[rest], _ = sample_conditional_marginals(
            kernel, U[rest], U[unique], f[unique], self.mean, rng.standard_normal(rest.size)
        )
        return f, jitter, False

    def condition(self, Z_S: np.ndarray, y_S: np.ndarray, noise_var: np.ndarray) -> Any:
        """The posterior given ``y_S`` (n,) at ``Z_S`` (n, d) with noise ``noise_var`` (n,)."""
        return _Inputs(
            Conditioner.fit(self._kernel(), self.inputs(Z_S), y_S, noise_var, self.mean),
            self.inputs,
        )

    def posterior_cov_times(self, Z, idx, noise_var, V) -> np.ndarray:
        """``C V`` (N, q): the posterior covariance over ``Z`` (N, d) given noisy values at
        ``Z[idx]`` (noise variances ``noise_var`` (n,)) times ``V`` (N, q),
        ``K V - K_ZS A^-1 K_SZ V``; the N x N Gram is formed in row blocks."""
        kernel, U = self._kernel(), self.inputs(Z)
        V = np.asarray(V, dtype=np.float64)
        K_SZ = gram(kernel, U[idx], U)
        A = K_SZ[:, idx] + np.diag(np.asarray(noise_var, dtype=np.float64))
        L, _ = cholesky_with_jitter(A)
        out = -K_SZ.T @ sla.cho_solve((L, True), K_SZ @ V)
        for start in range(0, U.shape[0], 1024):
            out[start : start + 1024] += gram(kernel, U[start : start + 1024], U) @ V
        return out

    def posterior_cross(self, Z, idx, noise_var, rows, cols) -> np.ndarray:
        """``C[rows][:, cols]`` (r, c): the posterior covariance of ``f`` between the points
        ``Z[rows]`` and ``Z[cols]`` (``rows`` (r,), ``cols`` (c,) indices into ``Z`` (N, d))
        given noisy values at ``Z[idx]``, ``K_rc - K_rS A^-1 K_Sc`` with the same jittered
        factor of ``A`` as the task's posterior; costs ``O(n^2 (r + c) + n r c)``."""
        kernel, U = self._kernel(), self.inputs(Z)
        S = U[np.asarray(idx)]
        A = gram(kernel, S, S) + np.diag(np.asarray(noise_var, dtype=np.float64))
        L, _ = cholesky_with_jitter(A)
        rows, cols = np.asarray(rows), np.asarray(cols)
        Vr = sla.solve_triangular(L, gram(kernel, S, U[rows]), lower=True)
        same = rows.shape == cols.shape and np.array_equal(rows, cols)
        Vc = Vr if same else sla.solve_triangular(L, gram(kernel, S, U[cols]), lower=True)
        return gram(kernel, U[rows], U[cols]) - Vr.T @ Vc

    def draw_posterior(self, Z, idx, y_S, noise_var, rng_prior, rng_noise, draws):
        """``(G (M, N), jitter)``: ``draws`` joint draws of ``f | S`` on ``Z`` (N, d) by
        pathwise conditioning (:func:`oracle.gp.sample_posterior_paths`); the standard
        normals are ``draws`` rows of each Generator."""
        z_prior = rng_prior.standard_normal((draws, Z.shape[0])).T
        z_noise = rng_noise.standard_normal((draws, len(idx))).T
        return sample_posterior_paths(
            self._kernel(), self.inputs(Z), idx, y_S, noise_var, self.mean, z_prior, z_noise
        )


@dataclass(frozen=True)
class _Inputs:
    """A :class:`~oracle.gp.Conditioner` whose ``predict`` maps its inputs first."""

    conditioner: Conditioner
    inputs: Any

    @property
    def jitter(self) -> float:
        return self.conditioner.jitter

    def predict(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.conditioner.predict(self.inputs(Z))


@dataclass(frozen=True)
class WeightPosterior:
    """``beta | S ~ N(mu, Sigma)`` of the ``features`` family; ``chol`` is the lower
    Cholesky factor of ``Sigma^-1`` (D, D), ``mu`` (D,)."""

    features: Any
    chol: np.ndarray
    mu: np.ndarray
    mean: float
    jitter: float = 0.0

    def predict(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and latent variance at ``Z`` (M, d): two (M,) arrays."""
        Phi = self.features(Z)
        V = sla.solve_triangular(self.chol, Phi.T, lower=True)  # Sigma = L^-T L^-1
        return self.mean + Phi @ self.mu, np.sum(V * V, axis=0)


@dataclass(frozen=True)
class FeatureTruth:
    """``f = mean + phi(x)^T beta``, ``beta ~ N(0, I)`` (module doc)."""

    features: Any  # Z (N, d) -> (N, D)
    mean: float

    def draw_prior(self, Z, idx, rng, joint_limit):
        """``(f (N,), 0.0, True)``: one weight draw, exact at every pool size."""
        del idx, joint_limit
        Phi = self.features(Z)
        return self.mean + Phi @ rng.standard_normal(Phi.shape[1]), 0.0, True

    def condition(self, Z_S, y_S, noise_var) -> WeightPosterior:
        """``beta | y_S`` with noise variances ``noise_var`` (n,) (module doc)."""
        Phi = self.features(Z_S) / np.sqrt(np.asarray(noise_var, dtype=np.float64))[:, None]
        precision = Phi.T @ Phi + np.eye(Phi.shape[1])
        chol = np.linalg.cholesky(precision)
        resid = (np.asarray(y_S, dtype=np.float64) - self.mean) / np.sqrt(noise_var)
        mu = sla.cho_solve((chol, True), Phi.T @ resid)
        return WeightPosterior(self.features, chol, mu, self.mean)

    def posterior_cov_times(self, Z, idx, noise_var, V) -> np.ndarray:
        """``C V = Phi Sigma Phi^T V`` (N, q) over ``Z`` (N, d) (see :class:`GPTruth`)."""
        post = self.condition(Z[idx], np.zeros(len(idx)), noise_var)
        Phi = self.features(Z)
        return Phi @ sla.cho_solve((post.chol, True), Phi.T @ np.asarray(V, dtype=np.float64))

    def posterior_cross(self, Z, idx, noise_var, rows, cols) -> np.ndarray:
        """``Phi_r Sigma Phi_c^T`` (r, c) between ``Z[rows]`` and ``Z[cols]`` (see
        :class:`GPTruth`)."""
        post = self.condition(Z[idx], np.zeros(len(idx)), noise_var)
        Phi_r, Phi_c = self.features(Z[np.asarray(rows)]), self.features(Z[np.asarray(cols)])
        return Phi_r @ sla.cho_solve((post.chol, True), Phi_c.T)

    def draw_posterior(self, Z, idx, y_S, noise_var, rng_prior, rng_noise, draws):
        """``(G (M, N), 0.0)``: ``beta = mu + L^-T z`` (``L L^T = Sigma^-1``), exact."""
        del rng_noise
        post = self.condition(Z[idx], y_S, noise_var)
        z = rng_prior.standard_normal((draws, post.mu.size)).T
        beta = post.mu[:, None] + sla.solve_triangular(post.chol.T, z, lower=False)
        return (self.mean + self.features(Z) @ beta).T, 0.0


def make_truth(preset) -> GPTruth | FeatureTruth:
    """The ground truth of ``preset`` (its ``truth`` field, kernel and mean)."""
    truth, components = preset.truth, tuple(preset.kernel)
    if truth.family == "gp":
        return GPTruth(components, preset.mean.value, preset.d)
    if truth.family == "warped":
        return GPTruth(components, preset.mean.value, preset.d, truth.warp)
    phi = kernel_features(
        list(components), preset.d, truth.features, stream(truth.seed, "truth_features")
    )
    return FeatureTruth(phi, preset.mean.value)
