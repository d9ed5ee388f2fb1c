"""A GP with a linear kernel and fitted noise: Bayesian linear regression by type-II ML.

On standardised inputs and targets: ``f ~ GP(m, k)`` with ``k(x, x') = s2 x^T x'`` and a
zero or constant mean ``m``, ``y = f(x) + eps``, ``eps ~ N(0, sigma^2)``. The kernel
variance ``s2``, the noise ``sigma^2`` (and ``m``) maximise the exact log marginal
likelihood (GPJax's ``conjugate_mll`` in its O(n d^2) weight-space form, SciPy BFGS,
float64). The predictive is GPJax's
conjugate posterior: epistemic = latent posterior variance ``s2_f(x)``, aleatoric =
``sigma^2``, both times ``y_sd^2``; mean ``y_mu + y_sd m_S(x)``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Self

import equinox as eqx
import gpjax as gpx
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
import scipy.optimize
from gpjax.parameters import val
from jax.flatten_util import ravel_pytree
from pydantic import Field

from udora.methods.base import Knowledge, MethodConfig, Prediction, UQMethod, check_x, check_xy
from udora.methods.joint import over_batches
from udora.methods.registry import register
from udora.oracle.standardise import Standardiser


class LinearGPConfig(MethodConfig):
    """Mean function, optimiser budget and the starting point of the fit.

    ``max_steps`` caps the BFGS iterations (SciPy's ``maxiter``); BFGS stops earlier once
    it converges, so this is a cap and not a fixed budget (hence ``max_``; see
    docs/adding_a_method.md). ``QUICK`` is empty: the fit is already cheap.
    """

    mean: Literal["zero", "constant"] = "constant"
    max_steps: int = Field(default=500, ge=1)
    init_variance: float = Field(default=1.0, gt=0.0)
    init_noise_std: float = Field(default=0.5, gt=0.0)
    chunk_size: int = Field(default=2048, ge=1)
    jitter: float = Field(default=1e-10, ge=0.0)

    SEARCH_SPACE: ClassVar[dict[str, dict[str, Any]]] = {
        "mean": {"values": ["zero", "constant"]},
    }
    QUICK: ClassVar[dict[str, Any]] = {}  # already cheap


def weight_space_nmll(model, stats: tuple) -> jax.Array:
    """``-log N(y | m 1, s2 X X^T + sigma^2 I)`` of ``model`` from sufficient statistics.

    The linear kernel's Gram ``s2 X X^T`` has rank d, so with ``B = (sigma^2 / s2) I_d +
    X^T X = L L^T`` and ``r = y - m``, Woodbury and the determinant lemma give

        r^T (s2 X X^T + sigma^2 I)^-1 r = (r^T r - ||L^-1 X^T r||^2) / sigma^2,
        log |s2 X X^T + sigma^2 I| = n log sigma^2 + log |B| - d log(sigma^2 / s2),

    O(d^3) per evaluation instead of GPJax's O(n^3) ``conjugate_mll`` (the same value,
    written by hand because GPJax has no weight-space form; tests compare the two).
    ``stats`` = ``(n, y^T y, sum y, X^T X (d, d), X^T y (d,), X^T 1 (d,))``.
    """
    n, yy, sy, XtX, Xty, Xt1 = stats
    d = XtX.shape[0]
    s2 = val(model.prior.kernel.variance)
    noise = model.likelihood.noise_vector(1)[0]
    m = model.prior.mean_function(jnp.zeros((1, d), dtype=XtX.dtype))[0, 0]
    rr = yy - 2.0 * m * sy + n * m**2
    L = jnp.linalg.cholesky(noise / s2 * jnp.eye(d, dtype=XtX.dtype) + XtX)
    v = jsl.solve_triangular(L, Xty - m * Xt1, lower=True)
    quad = (rr - v @ v) / noise
    logdet = n * jnp.log(noise) + 2.0 * jnp.sum(jnp.log(jnp.diag(L))) - d * jnp.log(noise / s2)
    return 0.5 * (quad + logdet + n * jnp.log(2.0 * jnp.pi))


def sufficient_statistics(X: jax.Array, y: jax.Array) -> tuple:
    """What :func:`weight_space_nmll` needs of ``X`` (n, d) and ``y`` (n, 1)."""
    t = y[:, 0]
    return (X.shape[0], t @ t, jnp.sum(t), X.T @ X, X.T @ t, jnp.sum(X, axis=0))


def _fit_mll(model, data: gpx.Dataset, max_iters: int):
    """``model`` with the hyperparameters that minimise the negative log marginal
    likelihood on ``data``: SciPy BFGS on GPJax's flat parameters, as ``gpx.fit_scipy``
    does, on the weight-space form of the objective (:func:`weight_space_nmll`). GPJax's
    own ``conjugate_mll`` factors the n x n Gram at every step (25 s per fit at n = 3,000;
    ``udora diagnose`` refits on samples that large), and ``fit_scipy`` also compiles the
    data into the objective as constants."""
    params, static = eqx.partition(model, eqx.is_array)
    x0, unravel = ravel_pytree(params)
    stats = sufficient_statistics(data.X, data.y)

    def loss(x, stats):
        return weight_space_nmll(eqx.combine(unravel(x), static), stats)

    value_and_grad = jax.jit(jax.value_and_grad(loss))

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = value_and_grad(jnp.asarray(x), stats)
        return float(value), np.asarray(grad, dtype=np.float64)

    res = scipy.optimize.minimize(
        fun, np.asarray(x0, dtype=np.float64), jac=True, options={"maxiter": max_iters}
    )
    return eqx.combine(unravel(jnp.asarray(res.x)), static)


@register("gp_linear")
class LinearGP(UQMethod):
    """GP with a linear kernel; kernel variance and noise fitted by marginal likelihood.

    Fitted state (standardised units): ``kernel_variance_`` (s2), ``noise_var_``
    (sigma^2), ``mean_value_`` (m; 0 for a zero mean).
    """

    family = "GP reference"
    aleatoric = "constant"
    libraries = ("gpjax", "equinox", "scipy")
    Config = LinearGPConfig
    config: LinearGPConfig

    def fit(self, X: np.ndarray, y: np.ndarray, *, seed: int, knowledge: Knowledge = None) -> Self:
        """Fit hyperparameters and condition on ``X`` ``(n, d)``, ``y`` ``(n,)``; no randomness."""
        del seed  # deterministic optimiser from a fixed start
        X, y = check_xy(X, y)
        self.scaler_ = Standardiser.fit(X, y)
        cfg = self.config
        with jax.enable_x64(True):
            data = gpx.Dataset(
                X=jnp.asarray(self.scaler_.x(X)), y=jnp.asarray(self.scaler_.y(y))[:, None]
            )
            constant = cfg.mean == "constant"
            mean = gpx.mean_functions.Constant(0.0) if constant else gpx.mean_functions.Zero()
            prior = gpx.gps.Prior(
                kernel=gpx.kernels.Linear(variance=cfg.init_variance, n_dims=X.shape[1]),
                mean_function=mean,
                jitter=self.config.jitter,
            )
            model = prior * gpx.likelihoods.Gaussian(obs_stddev=cfg.init_noise_std)
            model = _fit_mll(model, data, cfg.max_steps)
            self.posterior_ = model.condition(data)
            self.noise_var_ = float(model.likelihood.noise_vector(1)[0])
            self.kernel_variance_ = float(val(model.prior.kernel.variance))
            self.mean_value_ = float(model.prior.mean_function(data.X[:1])[0, 0])
        self.d_ = X.shape[1]
        self.fitted_ = True
        return self

    def predict(self, X: np.ndarray) -> Prediction:
        """Posterior at ``X`` ``(m, d)``: mean, aleatoric ``sigma^2``, epistemic ``s2_f``."""
        self._check_fitted()
        Xs = self.scaler_.x(check_x(X, self.d_))
        means, variances = [], []
        with jax.enable_x64(True):
            for start in range(0, Xs.shape[0], self.config.chunk_size):
                latent = self.posterior_(
                    jnp.asarray(Xs[start : start + self.config.chunk_size]), covariance="diagonal"
                )
                means.append(np.asarray(latent.mean).reshape(-1))
                variances.append(np.asarray(latent.variance).reshape(-1))
        return Prediction(
            mean=self.scaler_.mean_back(np.concatenate(means)),
            aleatoric=self.scaler_.var_back(np.full(Xs.shape[0], self.noise_var_)),
            epistemic=self.scaler_.var_back(np.maximum(np.concatenate(variances), 0.0)),
        )

    def predict_joint(self, X: np.ndarray) -> np.ndarray:
        """The latent posterior covariance over batches ``X`` (B, tau, d): (B, tau, tau),
        original units (GPJax's dense predictive over the batches' distinct inputs)."""
        self._check_fitted()

        def covariance(U: np.ndarray) -> np.ndarray:
            with jax.enable_x64(True):
                Us = jnp.asarray(self.scaler_.x(check_x(U, self.d_)))
                C = np.asarray(self.posterior_(Us, covariance="dense").covariance())
            return self.scaler_.var_back(C)

        return over_batches(X, covariance)
