"""A GP classifier with the task's own prior and approximate inference: the reference for
what the exact posterior adds over the textbook approximations (docs/design.md,
"Classification: methods").

Like ``gp_oracle`` it declares ``uses_task_prior`` and is handed the task's latent-GP
prior (kernel ``k``, latent scale ``s``, constant means ``m``, the standardiser; never the
oracle's targets). The latent prior is ``f ~ N(m, s^2 k)`` on the standardised inputs; the
posterior given the training labels is approximated as in Rasmussen & Williams (2006),
ch. 3 (:mod:`udora.oracle.classification.approx`):

- binary (probit link): expectation propagation, whose latent predictive ``N(mu, v)`` at a
  point gives ``pbar_1 = Phi(mu / sqrt(1 + v))``, the expected entropy ``E H(Phi(f))`` and
  ``E ||p_f||^2`` by the oracle's own one-dimensional integrals
  (:func:`~udora.oracle.classification.link.probit_moments`);
- multiclass (softmax): the Laplace approximation, whose latent predictive is
  ``N(mu, Sigma)`` with ``Sigma`` ``(C, C)`` per point, integrated by ``mc_draws`` Monte Carlo
  draws per point from the run seed's stream ``gp_approx softmax`` (each point's own,
  folded in by its row: a prediction does not depend on how the rows are chunked).

AU is the expected entropy ``E H(p_f)``, EU ``H(pbar) - AU`` (the mutual information
under the approximate posterior), and the Brier-scale parts ``1 - E ||p_f||^2`` and
``E ||p_f||^2 - ||pbar||^2``. A reference, never ranked.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import Field

from udora.methods.base import Knowledge, MethodConfig, UQMethod, check_x, check_xy
from udora.methods.classification.prediction import ClassificationPrediction, check_labels
from udora.methods.registry import register
from udora.methods.seeding import numpy_rng
from udora.oracle.classification import approx
from udora.oracle.classification.link import probit_moments
from udora.oracle.kernels import build_kernel


class ApproxGPConfig(MethodConfig):
    """Numerical settings only; the model comes from the task's prior."""

    mc_draws: int = Field(default=1000, ge=10)
    chunk_size: int = Field(default=2048, ge=1)  # multiclass: fewer, <= 2^24 normals a chunk

    QUICK: ClassVar[dict[str, Any]] = {}


@jax.jit
def _softmax_integrals(
    mu: jax.Array, cov: jax.Array, eps: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(E p_f (m, C), E H(p_f) (m,), E ||p_f||^2 (m,))`` for ``f ~ N(mu, cov)`` from
    standard normals ``eps`` ``(m, R, C)``; a jitter of 1e-10 times the mean variance makes
    each ``(C, C)`` factor exist (the covariance can be singular to rounding)."""
    C = mu.shape[-1]
    scale = jnp.mean(jnp.diagonal(cov, axis1=1, axis2=2), axis=1)
    chol = jnp.linalg.cholesky(cov + 1e-10 * scale[:, None, None] * jnp.eye(C)[None])
    f = mu[:, None, :] + jnp.einsum("mcd,mrd->mrc", chol, eps)
    logp = jax.nn.log_softmax(f, axis=-1)
    p = jnp.exp(logp)
    return p.mean(axis=1), -jnp.sum(p * logp, axis=-1).mean(axis=1), jnp.sum(p * p, -1).mean(1)


@register("gp_approx")
class ApproxGP(UQMethod):
    """GP classifier with the task's own prior, by EP (binary) or Laplace (multiclass)."""

    family = "GP reference"
    libraries = ("gpjax",)
    Config = ApproxGPConfig
    config: ApproxGPConfig
    uses_task_prior = True
    kinds = ("classification",)
    not_for = (
        (
            "regression",
            "the Gaussian likelihood's posterior is exact: that reference is gp_oracle",
        ),
    )

    def fit(self, X: np.ndarray, y: np.ndarray, *, seed: int, knowledge: Knowledge = None) -> Self:
        """Approximate the latent posterior of ``knowledge.prior`` given ``X`` ``(n, d)``
        and the class codes ``y`` ``(n,)``."""
        if knowledge is None or knowledge.prior is None or not knowledge.n_classes:
            raise ValueError(
                "gp_approx needs the classification task's latent GP prior: "
                "pass knowledge=task.knowledge(with_prior=True)"
            )
        prior = knowledge.prior
        X, y = check_xy(X, y)
        self.n_classes_ = len(prior.classes)
        labels = check_labels(y, self.n_classes_)
        self.d_ = X.shape[1]
        self.prior_ = prior
        self.Z_ = prior.standardiser.x(X)
        self.labels_ = labels
        self.key_ = jax.random.PRNGKey(int(numpy_rng(seed, "gp_approx softmax").integers(2**31)))
        with jax.enable_x64(True):
            K = self._cross(self.Z_, self.Z_)
            means = jnp.asarray(prior.mean, jnp.float64)
            if self.n_classes_ == 2:
                self.state_ = approx.ep_binary(K, jnp.asarray(labels), means[0])
                converged = float(self.state_.change)
            else:
                self.state_ = approx.laplace_multiclass(K, jnp.asarray(labels), means)
                converged = float(self.state_.gain)
        self.record_ = {"last_change": converged}
        self.fitted_ = True
        return self

    def _cross(self, A: np.ndarray, B: np.ndarray) -> jax.Array:
        """``s^2 k(A, B)`` ``(a, b)`` in float64 (call inside ``jax.enable_x64``)."""
        k = build_kernel(list(self.prior_.kernel), self.d_)
        gram = k.cross_covariance(jnp.asarray(A, jnp.float64), jnp.asarray(B, jnp.float64))
        return self.prior_.latent_scale**2 * gram

    def predict(self, X: np.ndarray) -> ClassificationPrediction:
        """The approximate posterior predictive at ``X`` ``(m, d)``: probabilities
        ``(m, C)``, AU and EU ``(m,)`` and the Brier-scale parts (module docstring)."""
        self._check_fitted()
        X = check_x(X, self.d_)
        Zx = self.prior_.standardiser.x(X)
        chunk = self.config.chunk_size
        if self.n_classes_ > 2:
            chunk = max(1, min(chunk, 2**24 // (self.config.mc_draws * self.n_classes_)))
        parts = []
        with jax.enable_x64(True):
            K = self._cross(self.Z_, self.Z_)
            means = jnp.asarray(self.prior_.mean, jnp.float64)
            k = build_kernel(list(self.prior_.kernel), self.d_)
            for start in range(0, X.shape[0], chunk):
                Zc = jnp.asarray(Zx[start : start + chunk], jnp.float64)
                K_cross = self._cross(Zc, self.Z_)
                k_diag = self.prior_.latent_scale**2 * jax.vmap(k)(Zc, Zc)
                parts.append(self._integrals(K, K_cross, k_diag, means, start))
        prob, ent, square = (np.concatenate(a) for a in zip(*parts, strict=True))
        return ClassificationPrediction.from_moments(prob, ent, square)

    def _integrals(self, K, K_cross, k_diag, means, start: int) -> tuple[np.ndarray, ...]:
        """``(pbar (c, C), E H (c,), E ||p||^2 (c,))`` of one chunk of ``c`` points."""
        if self.n_classes_ == 2:
            mu, var = approx.ep_predict(K, K_cross, k_diag, means[0], self.state_)
            prob, ent, square = probit_moments(mu, var)
        else:
            labels = jnp.asarray(self.labels_)
            mu, cov = approx.laplace_predict(K, K_cross, k_diag, labels, means, self.state_)
            # each point's normals from its own row index: the same whatever the chunking
            shape = (self.config.mc_draws, mu.shape[1])
            keys = jax.vmap(lambda i: jax.random.fold_in(self.key_, i))(
                start + jnp.arange(mu.shape[0])
            )
            eps = jax.vmap(lambda k: jax.random.normal(k, shape, jnp.float64))(keys)
            prob, ent, square = _softmax_integrals(mu, cov, eps)
        return tuple(np.asarray(a, np.float64) for a in (prob, ent, square))

    def diagnostics(self) -> dict[str, float]:
        """``last_change``: EP's largest last site change or Laplace's last Newton gain."""
        return dict(getattr(self, "record_", {}))
