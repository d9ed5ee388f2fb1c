"""The exact GP with the task's own prior: the reference whose EU should match the oracle.

The runner hands the method the task's GP prior through :meth:`OracleGP.set_prior`
(kernel components, constant mean, standardisation and the heteroscedastic noise model;
never the oracle's targets) before ``fit``. The posterior is GPJax's own conjugate one:
a ``gpx.gps.Prior`` (the kernel of ``oracle.kernels.build_kernel``, a constant mean)
times a Gaussian likelihood whose per-point std is ``sigma_eps(x_i) / y_sd`` at the
training points. In standardised units, with ``A = K_SS + diag(sigma_eps(x_S)^2)``:

    m_S(x) = m + k_xS A^-1 (y_S - m),      s2_f(x) = k(x, x) - k_xS A^-1 k_Sx,

reported as mean ``y_mu + y_sd m_S``, epistemic ``y_sd^2 s2_f`` and aleatoric
``sigma_eps(x)^2`` (original units). Computed in float64 (``jax.enable_x64``), in chunks
of test points so memory stays bounded.
"""

from __future__ import annotations

from typing import Any, Protocol, Self

import gpjax as gpx
import jax
import jax.numpy as jnp
import numpy as np
from pydantic import Field

from udora.methods.base import MethodConfig, Prediction, UQMethod, check_x, check_xy
from udora.methods.registry import register


class GPPriorLike(Protocol):
    """What :meth:`OracleGP.set_prior` reads (``oracle.task.GPPrior`` provides it).

    ``kernel``: component dicts (standardised input units); ``mean_value``: the constant
    mean in standardised target units; ``x_mean``/``x_sd`` ``(d,)``; ``y_mu``/``y_sd``;
    ``noise_std(X)``: ``(m, d)`` original-unit inputs -> ``(m,)`` noise std, original units.
    """

    kernel: tuple[dict[str, Any], ...]
    mean_value: float
    x_mean: np.ndarray
    x_sd: np.ndarray
    y_mu: float
    y_sd: float

    def noise_std(self, X: np.ndarray) -> np.ndarray: ...


class OracleGPConfig(MethodConfig):
    """Numerical settings only; the model itself comes from the task's prior."""

    jitter: float = Field(default=1e-10, ge=0.0)
    chunk_size: int = Field(default=2048, ge=1)


@register("gp_oracle")
class OracleGP(UQMethod):
    """Exact GP with the task's own kernel, mean and noise model (via ``set_prior``)."""

    Config = OracleGPConfig
    config: OracleGPConfig

    def set_prior(self, prior: GPPriorLike) -> Self:
        """Use ``prior`` (the task's ``GPPrior``) for the next ``fit``; returns self."""
        self.prior_ = prior
        return self

    def fit(self, X: np.ndarray, y: np.ndarray, *, seed: int) -> Self:
        """Condition the prior on ``X`` ``(n, d)``, ``y`` ``(n,)``; ``seed`` is unused."""
        del seed  # exact conditioning: nothing random
        prior = getattr(self, "prior_", None)
        if prior is None:
            raise RuntimeError(
                "gp_oracle needs the task's GP prior: call set_prior(task.gp_prior()) before fit"
            )
        X, y = check_xy(X, y)
        from udora.oracle.kernels import build_kernel

        with jax.enable_x64(True):
            Xs = jnp.asarray(self._x(X))
            ys = jnp.asarray((y - prior.y_mu) / prior.y_sd)[:, None]
            obs_std = jnp.asarray(np.asarray(prior.noise_std(X), dtype=np.float64) / prior.y_sd)
            gp_prior = gpx.gps.Prior(
                kernel=build_kernel(list(prior.kernel), X.shape[1]),
                mean_function=gpx.mean_functions.Constant(float(prior.mean_value)),
                jitter=self.config.jitter,
            )
            model = gp_prior * gpx.likelihoods.Gaussian(obs_stddev=obs_std)
            self.posterior_ = model.condition(gpx.Dataset(X=Xs, y=ys))
        self.d_ = X.shape[1]
        self.fitted_ = True
        return self

    def _x(self, X: np.ndarray) -> np.ndarray:
        return (X - np.asarray(self.prior_.x_mean)[None, :]) / np.asarray(self.prior_.x_sd)[None, :]

    def predict(self, X: np.ndarray) -> Prediction:
        """Posterior at ``X`` ``(m, d)``: mean ``m_S``, EU ``s2_f``, AU ``sigma_eps^2``."""
        self._check_fitted()
        X = check_x(X, self.d_)
        means, variances = [], []
        with jax.enable_x64(True):
            for start in range(0, X.shape[0], self.config.chunk_size):
                chunk = jnp.asarray(self._x(X[start : start + self.config.chunk_size]))
                latent = self.posterior_(chunk, covariance="diagonal")
                means.append(np.asarray(latent.mean).reshape(-1))
                variances.append(np.asarray(latent.variance).reshape(-1))
        prior = self.prior_
        noise = np.asarray(prior.noise_std(X), dtype=np.float64)
        return Prediction(
            mean=prior.y_mu + prior.y_sd * np.concatenate(means),
            aleatoric=noise**2,
            epistemic=np.maximum(np.concatenate(variances), 0.0) * prior.y_sd**2,
        )
