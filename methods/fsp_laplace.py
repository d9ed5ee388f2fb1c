"""FSP-Laplace (Cinquin et al. 2024): a GP prior in function space, last-layer posterior.

Construction, in standardised units, with ``mu_w(x)`` the network's mean, ``k`` the prior
kernel ``k(x, x') = s2 Matern32(|x - x'| / l) + c x^T x'`` and ``n`` fit points:

1. MAP training with a function-space prior. Each step draws M context points ``C``
   uniformly from the box of the fit inputs widened by ``context_margin`` and adds the
   GP prior's negative log density of the network's mean at ``C`` (up to constants),
   ``R = 1/(2n) mu_w(C)^T (K_CC + j I)^-1 mu_w(C)``, to the mean per-point Gaussian NLL
   (the 1/n puts it on the per-point scale of the NLL).
2. Function-space prior on the mean head. With the backbone and variance head fixed,
   ``mu(x) = phi(x)^T w`` (:mod:`methods.nn.last_layer`). On a fixed context set C the
   prior ``mu(C) ~ N(0, K_CC)`` is truncated to its top ``r`` = ``rank`` eigenpairs,
   ``K_CC ~ Q_r diag(kappa_r) Q_r^T``, and pulled back to weights by least squares,
   ``w - w_MAP = S a``, ``S = Phi_C^+ Q_r diag(kappa_r)^(1/2)`` (P x r), ``a ~ N(0, I_r)``.
3. Low-rank Gaussian posterior. With the Gaussian likelihood's GGN over the fit split,
   ``G = Phi^T diag(1/s^2) Phi``, and temperature T, the posterior of ``a`` is
   ``N(0, (I_r + S^T G S / T)^-1)``, so ``Sigma = S (I_r + S^T G S / T)^-1 S^T`` has rank
   ``<= r``: directions the prior does not vary in stay fixed.
4. T minimises the validation NLL of ``N(mu_MAP, s^2 + phi^T Sigma phi)`` on a log grid.
   The validation split V (``val_fraction``, always held out) is for this; the MAP network
   trains on the rest for exactly ``n_epochs`` (V early-stops it only with
   ``early_stopping``).

Prediction: K = ``n_members`` heads ``w_MAP + S B z_k`` (``B B^T = (I + S^T G S / T)^-1``);
mean = average sampled mean, aleatoric = MAP variance ``s^2(x)``, epistemic = variance of
the sampled means (paper, Appendix D.4, "Function-space prior Laplace BNN").

On a classification task every one of the C logits has the GP prior, independently: the
training term is ``R = 1/(2n) sum_c f_c(C)^T (K_CC + j I)^-1 f_c(C)`` on the softmax head's
logits, the pull-back moves each column of the head ``W`` ``(P, C)`` by ``S a_c``
(``vec(W - W_MAP) = (S (x) I_C) vec(A)``, ``A`` ``(r, C)``, ``vec(A) ~ N(0, I)``), the
likelihood's GGN is the cross-entropy one, and T minimises the validation log loss of the
K-draw predictive (:mod:`methods.nn.softmax_head`); the K sampled heads' softmax
probabilities are the members (AU their mean entropy, EU the mutual information).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Self

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import Field

from udora.methods.base import Knowledge
from udora.methods.nn.config import NNConfig
from udora.methods.nn.heads import mean_variance
from udora.methods.nn.last_layer import (
    SampledHeadsMethod,
    design,
    design_logits,
    gaussian_nll,
    grid_argmin,
    head_matrix,
    head_weights,
)
from udora.methods.nn.method import Recipe
from udora.methods.nn.softmax_head import SoftmaxHeadPosterior
from udora.methods.registry import register
from udora.methods.seeding import jax_keys, numpy_rng


def matern32_linear(
    A: jax.Array, B: jax.Array, variance: float, lengthscale: float, linear: float
) -> jax.Array:
    """Gram ``(a, b)``: ``s2 (1 + sqrt3 r / l) exp(-sqrt3 r / l) + c A B^T``, ``r = |x - x'|``."""
    sq = jnp.sum((A[:, None, :] - B[None, :, :]) ** 2, axis=-1)
    r = jnp.sqrt(jnp.maximum(sq, 1e-30)) * (np.sqrt(3.0) / lengthscale)
    return variance * (1.0 + r) * jnp.exp(-r) + linear * A @ B.T


@dataclass(frozen=True)
class FunctionSpacePrior:
    """``R(f, key, args) = w/2 mu(C)^T (K_CC + jitter I)^-1 mu(C)`` at fresh context points.

    The kernel settings and ``head`` are static (``head`` None: a softmax head, every
    logit has the prior); ``args`` holds the data-dependent arrays: the context box
    ``lo``, ``hi`` ``(d,)`` (standardised units) and the weight ``w = 1/n``.
    """

    n_context: int
    variance: float
    lengthscale: float
    linear: float
    jitter: float
    head: str | None

    def context(self, key: jax.Array, lo: jax.Array, hi: jax.Array) -> jax.Array:
        """``(M, d)`` context points uniform in the box ``[lo, hi]``."""
        u = jax.random.uniform(key, (self.n_context, lo.shape[0]), lo.dtype)
        return lo[None, :] + u * (hi - lo)[None, :]

    def gram(self, C: jax.Array) -> jax.Array:
        """Prior Gram ``(M, M)`` with jitter."""
        K = matern32_linear(C, C, self.variance, self.lengthscale, self.linear)
        return K + self.jitter * jnp.eye(C.shape[0], dtype=K.dtype)

    def __call__(self, f: Any, key: jax.Array, args: dict[str, jax.Array]) -> jax.Array:
        C = self.context(jax.random.fold_in(key, 1), args["lo"], args["hi"])
        out = f(C)
        mean = out if self.head is None else mean_variance(out, self.head)[0][:, None]
        L = jnp.linalg.cholesky(self.gram(C))
        a = jax.scipy.linalg.solve_triangular(L, mean, lower=True)
        return 0.5 * args["weight"] * jnp.sum(a**2)


class FSPLaplaceConfig(NNConfig):
    """:class:`NNConfig` plus the prior kernel, context set, rank and temperature grid.

    The kernel acts on standardised inputs and targets: Matern-3/2 variance
    ``prior_variance`` and lengthscale ``prior_lengthscale`` plus a linear kernel with
    variance ``prior_linear``. ``val_fraction`` must be positive (V selects T, and
    early-stops the MAP network only with ``early_stopping``).
    """

    n_members: int = Field(default=30, ge=2)
    val_fraction: float = Field(default=0.1, gt=0.0, lt=1.0)
    prior_variance: float = Field(default=1.0, gt=0.0)
    prior_lengthscale: float = Field(default=1.0, gt=0.0)
    prior_linear: float = Field(default=0.5, ge=0.0)
    prior_jitter: float = Field(default=1e-3, gt=0.0)
    n_context: int = Field(default=64, ge=2)
    context_margin: float = Field(default=0.5, ge=0.0)
    rank: int = Field(default=20, ge=1)
    log_temperature_min: float = -3.0
    log_temperature_max: float = 3.0
    temperature_grid: int = Field(default=61, ge=1)

    SEARCH_SPACE: ClassVar[dict[str, dict[str, Any]]] = dict(NNConfig.SEARCH_SPACE)


def function_space_prior(
    cfg: FSPLaplaceConfig, Xs_fit: np.ndarray, n_classes: int = 0
) -> tuple[FunctionSpacePrior, dict[str, jax.Array]]:
    """The prior term and its arrays: the context box (the fit inputs' range ``(d,)``
    widened by ``context_margin``) and the weight ``1/n``, from ``Xs_fit`` ``(n, d)``;
    with ``n_classes`` on the softmax head's logits."""
    prior = FunctionSpacePrior(
        n_context=cfg.n_context,
        variance=cfg.prior_variance,
        lengthscale=cfg.prior_lengthscale,
        linear=cfg.prior_linear,
        jitter=cfg.prior_jitter,
        head=None if n_classes else cfg.head,
    )
    args = {
        "lo": jnp.asarray(Xs_fit.min(axis=0) - cfg.context_margin, jnp.float32),
        "hi": jnp.asarray(Xs_fit.max(axis=0) + cfg.context_margin, jnp.float32),
        "weight": jnp.asarray(1.0 / Xs_fit.shape[0], jnp.float32),
    }
    return prior, args


@jax.jit
def _val_nll(SGS, A, mean_v, var_v, y_v, temperature) -> jax.Array:
    """Validation NLL with ``eu = rows of A (I + S^T G S / T)^-1 A^T``, ``A = Phi_V S``."""
    inner = jnp.linalg.inv(jnp.eye(SGS.shape[0], dtype=SGS.dtype) + SGS / temperature)
    eu = jnp.sum((A @ inner) * A, axis=1)
    return gaussian_nll(y_v, mean_v, var_v + eu)


@register("fsp_laplace")
class FSPLaplace(SampledHeadsMethod):
    """Function-space-prior MAP network, low-rank last-layer posterior; K = 30 samples."""

    family = "Bayesian NN"
    kinds = ("regression", "classification")
    Config = FSPLaplaceConfig
    config: FSPLaplaceConfig
    recipe = Recipe(one_network=True, terms=(function_space_prior,))

    def holds_out_validation(self) -> bool:
        """Always: V selects the temperature."""
        return True

    def diagnostics(self) -> dict[str, float]:
        """The ``temperature`` V selected (at the bottom of its grid the posterior shrinks
        towards the MAP head, and the K heads' EU towards 0)."""
        self._check_fitted()
        return {"temperature": float(self.temperature_)}

    def fit(self, X: np.ndarray, y: np.ndarray, *, seed: int, knowledge: Knowledge = None) -> Self:
        """MAP network with the prior term; low-rank factor ``S``, GGN, T on V; K heads."""
        n_classes = knowledge.n_classes if knowledge is not None else 0
        Xs, ys = self.train_networks(X, y, seed=seed, n_classes=n_classes)
        cfg = self.config
        keys = jax_keys(seed, "fsp_context", "fsp_samples")
        variables = self.map_variables()
        prior, box = function_space_prior(cfg, Xs[self.fit_idx_], n_classes)
        context = prior.context(keys["fsp_context"], box["lo"], box["hi"])
        if n_classes:
            phi_c, _ = design_logits(cfg, variables, context, n_classes)
            fit = self._softmax_designs(Xs, variables)
        else:
            phi_c, _, _ = design(cfg, variables, context)
            phi_s, _, var_s = design(cfg, variables, jnp.asarray(Xs[self.fit_idx_]))
            phi_v, mean_v, var_v = design(cfg, variables, jnp.asarray(Xs[self.val_idx_]))
        with jax.enable_x64(True):
            context = jnp.asarray(np.asarray(context, np.float64))
            phi_c = jnp.asarray(np.asarray(phi_c, np.float64))
            kappa, Q = jnp.linalg.eigh(prior.gram(context))
            r = min(cfg.rank, kappa.shape[0])
            kappa, Q = kappa[-r:], Q[:, -r:]
            S = jnp.linalg.pinv(phi_c) @ (Q * jnp.sqrt(jnp.maximum(kappa, 0.0))[None, :])
            self.prior_factor_ = np.asarray(S)
            self.context_ = np.asarray(context)
            if n_classes:
                return self._fit_softmax_head(*fit, ys, seed)
            w_map = np.asarray(head_weights(cfg, variables), np.float64)
            phi_s, var_s, phi_v, mean_v, var_v = (
                jnp.asarray(np.asarray(a, np.float64)) for a in (phi_s, var_s, phi_v, mean_v, var_v)
            )
            SGS = (phi_s @ S).T @ ((phi_s @ S) / var_s[:, None])
            y_v = jnp.asarray(ys[self.val_idx_].astype(np.float64))
            eye = jnp.eye(r)

            A = phi_v @ S

            def val_nll(temperature):
                return _val_nll(SGS, A, mean_v, var_v, y_v, temperature)

            temperature = grid_argmin(
                val_nll,
                cfg.log_temperature_min,
                cfg.log_temperature_max,
                cfg.temperature_grid,
            )
            inner = jnp.linalg.inv(eye + SGS / temperature)
            B = jnp.linalg.cholesky(0.5 * (inner + inner.T))
            z = jax.random.normal(keys["fsp_samples"], (cfg.n_members, r), jnp.float64)
            draws = w_map[None, :] + np.asarray(z @ (S @ B).T)
            self.posterior_cov_ = np.asarray(S @ inner @ S.T)
        self.temperature_ = temperature
        self.head_samples_ = draws  # (K, P)
        self.fitted_ = True
        return self

    def _softmax_designs(
        self, Xs: np.ndarray, variables: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``Phi`` of the fit split ``(n, P)`` and of V ``(v, P)``, MAP head ``(P, C)``."""
        cfg, C = self.config, self.n_classes_
        phi_s, _ = design_logits(cfg, variables, jnp.asarray(Xs[self.fit_idx_]), C)
        phi_v, _ = design_logits(cfg, variables, jnp.asarray(Xs[self.val_idx_]), C)
        W_map = head_matrix(cfg, variables)
        return tuple(np.asarray(a, np.float64) for a in (phi_s, phi_v, W_map))

    def _fit_softmax_head(
        self, phi_s: np.ndarray, phi_v: np.ndarray, W_map: np.ndarray, ys: np.ndarray, seed: int
    ) -> Self:
        """Classification: the softmax head's posterior in the prior's span (module
        docstring) from :meth:`_softmax_designs`; runs inside the caller's
        ``jax.enable_x64``."""
        cfg, C = self.config, self.n_classes_
        basis = np.kron(self.prior_factor_, np.eye(C))  # (PC, rC): vec(S A), row-major
        z = numpy_rng(seed, "fsp_samples").standard_normal((cfg.n_members, basis.shape[1]))
        post = SoftmaxHeadPosterior.build(phi_s, W_map, z, basis)
        val_loss = post.val_log_loss(phi_v, ys[self.val_idx_].astype(np.int64))
        temperature = grid_argmin(
            lambda t: val_loss(1.0, t),
            cfg.log_temperature_min,
            cfg.log_temperature_max,
            cfg.temperature_grid,
        )
        self.head_samples_ = post.draws(1.0, temperature)  # (K, P, C)
        self.temperature_ = temperature
        self.fitted_ = True
        return self
