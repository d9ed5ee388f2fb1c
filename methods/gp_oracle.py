"""The exact GP with the task's own prior: the reference whose EU should match the oracle.

The class declares ``uses_task_prior``, so the runner hands ``fit`` a
:class:`~udora.oracle.prior.TaskKnowledge` whose ``prior`` holds the task's GP prior
(kernel components, constant mean, standardisation and the heteroscedastic noise model;
never the oracle's targets). The posterior is GPJax's own conjugate one:
a ``gpx.gps.Prior`` (the kernel of ``oracle.kernels.build_kernel``, a constant mean)
times a Gaussian likelihood whose per-point std is ``sigma_eps(x_i) / y_sd`` at the
training points. In standardised units, with ``A = K_SS + diag(sigma_eps(x_S)^2)``:

    m_S(x) = m + k_xS A^-1 (y_S - m),      s2_f(x) = k(x, x) - k_xS A^-1 k_Sx,

reported as mean ``y_mu + y_sd m_S``, epistemic ``y_sd^2 s2_f`` and aleatoric
``sigma_eps(x)^2`` (original units). Computed in float64 (``jax.enable_x64``), in chunks
of test points so memory stays bounded.

On a classification task (``knowledge.classes``) the prior is the task's latent GP and
the posterior is sampled with chains of the method's own
(:mod:`udora.methods.classification.latent_posterior`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Self

import gpjax as gpx
import jax
import jax.numpy as jnp
import numpy as np
from pydantic import Field

from udora.methods.base import (
    Knowledge,
    MethodConfig,
    Prediction,
    UQMethod,
    check_x,
    check_xy,
)
from udora.methods.joint import over_batches
from udora.methods.registry import register

if TYPE_CHECKING:
    from udora.methods.classification.prediction import ClassificationPrediction


class OracleGPConfig(MethodConfig):
    """Numerical settings only; the model itself comes from the task's prior."""

    jitter: float = Field(default=1e-10, ge=0.0)
    chunk_size: int = Field(default=2048, ge=1)

    QUICK: ClassVar[dict[str, Any]] = {}  # exact conditioning: already cheap


@register("gp_oracle")
class OracleGP(UQMethod):
    """Exact GP with the task's own kernel, mean and noise model (``knowledge.prior``)."""

    family = "GP reference"
    libraries = ("gpjax",)
    Config = OracleGPConfig
    config: OracleGPConfig
    uses_task_prior = True
    kinds = ("regression", "classification")

    def fit(self, X: np.ndarray, y: np.ndarray, *, seed: int, knowledge: Knowledge = None) -> Self:
        """Condition ``knowledge.prior`` on ``X`` ``(n, d)``, ``y`` ``(n,)``; no randomness
        (on a classification task: sample the latent posterior with the run ``seed``,
        :mod:`udora.methods.classification.latent_posterior`)."""
        if knowledge is None or knowledge.prior is None:
            raise ValueError(
                "gp_oracle needs the task's GP prior: "
                "pass knowledge=task.knowledge(with_prior=True)"
            )
        prior = knowledge.prior
        X, y = check_xy(X, y)
        self.d_ = X.shape[1]
        if knowledge.n_classes:
            from udora.methods.classification.latent_posterior import fit_latent_posterior

            self.latent_ = fit_latent_posterior(X, y, prior, seed)
            self.fitted_ = True
            return self
        from udora.oracle.kernels import build_kernel

        std = prior.standardiser
        with jax.enable_x64(True):
            Xs = jnp.asarray(std.x(X))
            ys = jnp.asarray(std.y(y))[:, None]
            obs_std = jnp.asarray(np.asarray(prior.noise_std(X), dtype=np.float64) / std.y_sd)
            gp_prior = gpx.gps.Prior(
                kernel=build_kernel(list(prior.kernel), X.shape[1]),
                mean_function=gpx.mean_functions.Constant(float(prior.mean_value)),
                jitter=self.config.jitter,
            )
            model = gp_prior * gpx.likelihoods.Gaussian(obs_stddev=obs_std)
            self.posterior_ = model.condition(gpx.Dataset(X=Xs, y=ys))
        self.prior_ = prior
        self.latent_ = None
        self.fitted_ = True
        return self

    def predict(self, X: np.ndarray) -> Prediction | ClassificationPrediction:
        """Posterior at ``X`` ``(m, d)``: mean ``m_S``, EU ``s2_f``, AU ``sigma_eps^2``
        (classification: the posterior predictive, its expected entropy and MI)."""
        self._check_fitted()
        X = check_x(X, self.d_)
        if self.latent_ is not None:
            from udora.methods.classification.latent_posterior import predict_latent_posterior

            return predict_latent_posterior(self.latent_, X)
        prior = self.prior_
        means, variances = [], []
        with jax.enable_x64(True):
            for start in range(0, X.shape[0], self.config.chunk_size):
                chunk = jnp.asarray(prior.standardiser.x(X[start : start + self.config.chunk_size]))
                latent = self.posterior_(chunk, covariance="diagonal")
                means.append(np.asarray(latent.mean).reshape(-1))
                variances.append(np.asarray(latent.variance).reshape(-1))
        noise = np.asarray(prior.noise_std(X), dtype=np.float64)
        return Prediction(
            mean=prior.standardiser.mean_back(np.concatenate(means)),
            aleatoric=noise**2,
            epistemic=np.maximum(np.concatenate(variances), 0.0) * prior.standardiser.y_sd**2,
        )

    def predict_joint(self, X: np.ndarray) -> np.ndarray:
        """The posterior covariance of ``f`` over batches ``X`` (B, tau, d) of a regression
        task: (B, tau, tau), original units (GPJax's dense predictive over the batches'
        distinct inputs)."""
        self._check_fitted()
        if self.latent_ is not None:
            raise ValueError("gp_oracle: joint predictions are of regression tasks only")
        std = self.prior_.standardiser

        def covariance(U: np.ndarray) -> np.ndarray:
            with jax.enable_x64(True):
                Us = jnp.asarray(std.x(check_x(U, self.d_)))
                C = np.asarray(self.posterior_(Us, covariance="dense").covariance())
            return C * std.y_sd**2

        return over_batches(X, covariance)

    def diagnostics(self) -> dict[str, float]:
        """On a classification task, its own chains' R-hat and bulk ESS of ``||v||^2``,
        divergences and draws."""
        latent = getattr(self, "latent_", None)
        return dict(latent.record) if latent is not None else {}
