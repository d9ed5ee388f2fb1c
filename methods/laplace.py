"""Last-layer Laplace (Daxberger et al. 2021) over the mean head, built with laplax.

The Gaussian-head backbone is trained to a MAP solution; the backbone and the variance
head stay fixed. In standardised units the mean is linear in the mean-head weights and
bias, ``mu(x) = phi(x)^T w`` (:mod:`methods.nn.last_layer`). The Gaussian likelihood with
the MAP variance ``s^2(x)`` has Fisher ``1 / s^2(x)`` in the mean, so the GGN over the fit
split S is ``G = sum_{i in S} phi_i phi_i^T / s^2(x_i)`` (laplax ``create_ggn_mv`` with
that Fisher as the loss-Hessian product, dense with laplax's full curvature), and
with prior precision ``lambda`` and temperature ``T`` (paper, Appendix D.4, "Laplace BNN")

    Sigma = (G / T + lambda I)^-1,   w_k = w_MAP + L z_k,  L L^T = Sigma,  z_k ~ N(0, I).

The validation split V (``val_fraction``, always held out) is for this calibration; the
MAP network trains on the rest for exactly ``n_epochs`` (V early-stops it only with
``early_stopping``). Calibration on V minimises the Gaussian NLL of the predictive
``N(mu_MAP(x), s^2(x) + phi(x)^T Sigma phi(x))``, which includes the observation noise
``s^2(x)`` (laplax's built-in regression NLL leaves it out and then pushes ``lambda`` to
the grid edge): first ``lambda`` by laplax ``optimize_prior_prec`` at ``T = 1``, then
``T`` on a log grid with that ``lambda``. Prediction: K = ``n_members`` sampled heads;
mean = average sampled mean, aleatoric = ``s^2(x)``, epistemic = variance of the sampled
means. The small P x P algebra runs in float64 inside a scoped ``jax.enable_x64``.

On a classification task the MAP network has a softmax head over the C classes, trained
by cross-entropy, and the posterior covers the whole head ``W`` ``(P, C)``: laplax's
cross-entropy GGN over the fit split, ``Sigma = (G / T + lambda I)^-1`` in the ``PC``
flattened weights, ``lambda`` (laplax ``optimize_prior_prec`` at ``T = 1``) and then ``T``
chosen by the validation log loss of the K-draw predictive, and K = ``n_members`` sampled
heads whose softmax probabilities are the members (:mod:`methods.nn.softmax_head`):
AU = their mean entropy, EU = the mutual information.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Self

import jax
import jax.numpy as jnp
import numpy as np
from laplax.curv.cov import set_posterior_fn
from laplax.curv.full import create_full_curvature
from laplax.curv.ggn import create_ggn_mv
from laplax.eval.calibrate import optimize_prior_prec
from loguru import logger
from pydantic import Field

from udora.methods.base import Knowledge
from udora.methods.nn.config import NNConfig
from udora.methods.nn.last_layer import (
    SampledHeadsMethod,
    design,
    design_logits,
    gaussian_nll,
    grid_argmin,
    head_matrix,
    head_weights,
)
from udora.methods.nn.softmax_head import SoftmaxHeadPosterior
from udora.methods.registry import register
from udora.methods.seeding import jax_keys, numpy_rng


class LaplaceConfig(NNConfig):
    """:class:`NNConfig` for the MAP network plus the Laplace calibration grids.

    ``n_members`` is the number K of sampled heads; ``val_fraction`` must be positive (V
    calibrates ``lambda`` and ``T``, and early-stops the MAP network only with
    ``early_stopping``). The grids are ``10^[min, max]`` with ``*_grid`` points.
    """

    n_members: int = Field(default=30, ge=2)
    val_fraction: float = Field(default=0.1, gt=0.0, lt=1.0)
    log_prior_prec_min: float = -4.0
    log_prior_prec_max: float = 4.0
    prior_prec_grid: int = Field(default=100, ge=2)
    log_temperature_min: float = -2.0
    log_temperature_max: float = 2.0
    temperature_grid: int = Field(default=41, ge=1)

    SEARCH_SPACE: ClassVar[dict[str, dict[str, Any]]] = dict(NNConfig.SEARCH_SPACE)


def _fisher_mv(jv: jax.Array, pred: jax.Array, target: jax.Array, **kwargs: Any) -> jax.Array:
    """Gaussian Fisher in the mean times ``jv``: ``target`` carries the precision ``1/s^2``."""
    del pred, kwargs
    return jv * target


def _linear_head(input: jax.Array, params: dict[str, jax.Array]) -> jax.Array:
    """laplax model function: ``phi^T w`` as a ``(1,)`` output for one ``phi`` ``(P,)``."""
    return (input @ params["w"])[None]


@jax.jit
def last_layer_ggn(phi: jax.Array, var: jax.Array) -> jax.Array:
    """Dense GGN ``(P, P)`` of the mean head from ``Phi`` ``(n, P)`` and ``s^2`` ``(n,)``.

    laplax's full curvature (``estimate_curvature("full")`` without its eager sync, so it
    can be jitted) of the GGN-vector product with the Gaussian Fisher.
    """
    layout = {"w": jnp.zeros(phi.shape[1], phi.dtype)}
    data = {"input": phi, "target": (1.0 / var)[:, None]}
    mv = create_ggn_mv(_linear_head, layout, data, loss_hessian_mv=_fisher_mv)
    return create_full_curvature(mv, layout)


def posterior_scale(ggn: jax.Array, prior_prec: float, temperature: float) -> jax.Array:
    """``L`` ``(P, P)`` with ``L L^T = (G / T + lambda I)^-1`` (laplax full posterior)."""
    layout = {"w": jnp.zeros(ggn.shape[0], ggn.dtype)}
    posterior_fn = set_posterior_fn("full", ggn, layout=layout)
    args = {"prior_prec": prior_prec, "sigma_squared": 1.0 / temperature}
    return posterior_fn(args).state["scale"]


@jax.jit
def _val_nll(ggn, phi_v, mean_v, var_v, y_v, prior_prec, temperature) -> jax.Array:
    """Validation NLL of ``N(mu_MAP, s^2 + phi^T Sigma(lambda, T) phi)`` (all V arrays)."""
    scale = posterior_scale(ggn, prior_prec, temperature)
    eu = jnp.sum((phi_v @ scale) ** 2, axis=1)
    return gaussian_nll(y_v, mean_v, var_v + eu)


def calibrate(val_loss: Callable[[float, float], float], cfg: LaplaceConfig) -> tuple[float, float]:
    """``(lambda, T)``: ``lambda`` by laplax ``optimize_prior_prec`` on ``val_loss(lambda, 1)``
    over ``cfg``'s grid, then ``T`` minimising ``val_loss(lambda, T)`` on its log grid."""
    logger.disable("laplax")  # one log line per grid point otherwise
    try:
        prior_prec = float(
            optimize_prior_prec(
                lambda args: val_loss(args["prior_prec"], 1.0),
                log_prior_prec_min=cfg.log_prior_prec_min,
                log_prior_prec_max=cfg.log_prior_prec_max,
                grid_size=cfg.prior_prec_grid,
            )
        )
    finally:
        logger.enable("laplax")
    temperature = grid_argmin(
        lambda t: val_loss(prior_prec, t),
        cfg.log_temperature_min,
        cfg.log_temperature_max,
        cfg.temperature_grid,
    )
    return prior_prec, temperature


@register("laplace")
class LastLayerLaplace(SampledHeadsMethod):
    """Last-layer Laplace over the mean head of one MAP residual MLP; K = 30 samples."""

    family = "Bayesian NN"
    kinds = ("regression", "classification")
    libraries = ("flax", "optax", "laplax")
    Config = LaplaceConfig
    config: LaplaceConfig

    def holds_out_validation(self) -> bool:
        """Always: V calibrates the prior precision and the temperature."""
        return True

    def diagnostics(self) -> dict[str, float]:
        """The calibrated ``prior_prec`` and ``temperature``: at the top of the ``lambda``
        grid (``Sigma`` shrinking like ``1 / lambda``), V preferred the MAP head to any
        spread, and the K heads' EU is near 0."""
        self._check_fitted()
        return {"prior_prec": float(self.prior_prec_), "temperature": float(self.temperature_)}

    def fit(self, X: np.ndarray, y: np.ndarray, *, seed: int, knowledge: Knowledge = None) -> Self:
        """MAP network; curvature on the fit split, ``lambda`` and ``T`` on V; K heads."""
        n_classes = knowledge.n_classes if knowledge is not None else 0
        Xs, ys = self.train_networks(X, y, seed=seed, n_classes=n_classes)
        if n_classes:
            return self._fit_softmax_head(Xs, ys, seed)
        cfg = self.config
        variables = self.map_variables()
        phi_s, _, var_s = design(cfg, variables, jnp.asarray(Xs[self.fit_idx_]))
        phi_v, mean_v, var_v = design(cfg, variables, jnp.asarray(Xs[self.val_idx_]))
        w_map = head_weights(cfg, variables)
        z_key = jax_keys(seed, "laplace_samples")["laplace_samples"]
        z = jax.random.normal(z_key, (cfg.n_members, w_map.shape[0]), jnp.float32)
        with jax.enable_x64(True):
            f64 = [jnp.asarray(np.asarray(a, np.float64)) for a in (phi_s, var_s, phi_v, mean_v)]
            phi_s, var_s, phi_v, mean_v = f64
            var_v64 = jnp.asarray(np.asarray(var_v, np.float64))
            y_v = jnp.asarray(ys[self.val_idx_].astype(np.float64))
            ggn = last_layer_ggn(phi_s, var_s)

            def val_nll(prior_prec, temperature):
                return _val_nll(ggn, phi_v, mean_v, var_v64, y_v, prior_prec, temperature)

            prior_prec, temperature = calibrate(val_nll, cfg)
            scale = posterior_scale(ggn, prior_prec, temperature)
            self.posterior_cov_ = np.asarray(scale @ scale.T)
            draws = (
                np.asarray(w_map, np.float64)[None, :]
                + np.asarray(z, np.float64) @ np.asarray(scale).T
            )
        self.prior_prec_ = prior_prec
        self.temperature_ = temperature
        self.head_samples_ = draws  # (K, P)
        self.fitted_ = True
        return self

    def _fit_softmax_head(self, Xs: np.ndarray, ys: np.ndarray, seed: int) -> Self:
        """Classification: the softmax head's Laplace posterior (module docstring)."""
        cfg = self.config
        variables = self.map_variables()
        phi_s, _ = design_logits(cfg, variables, jnp.asarray(Xs[self.fit_idx_]), self.n_classes_)
        phi_v, _ = design_logits(cfg, variables, jnp.asarray(Xs[self.val_idx_]), self.n_classes_)
        W_map = np.asarray(head_matrix(cfg, variables), np.float64)
        z = numpy_rng(seed, "laplace_samples").standard_normal((cfg.n_members, W_map.size))
        with jax.enable_x64(True):
            post = SoftmaxHeadPosterior.build(np.asarray(phi_s, np.float64), W_map, z)
            val_loss = post.val_log_loss(
                np.asarray(phi_v, np.float64), ys[self.val_idx_].astype(np.int64)
            )
            prior_prec, temperature = calibrate(val_loss, cfg)
            self.head_samples_ = post.draws(prior_prec, temperature)  # (K, P, C)
        self.ggn_eigenvalues_ = post.g
        self.prior_prec_ = prior_prec
        self.temperature_ = temperature
        self.fitted_ = True
        return self
