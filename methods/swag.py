"""Diagonal SWAG (Maddox et al. 2019) after pretraining the Gaussian-head backbone.

After pretraining (``n_epochs`` epochs, no early stopping by default, :class:`NNConfig`),
SGD continues from the solution with constant learning rate ``swag_learning_rate``,
momentum ``swag_momentum`` and global-norm gradient clipping. The first ``swag_burn_in``
epochs of that SGD run (0 by default, as the paper collects from the solution at once)
are burn-in: they let the iterate settle into the SGD stationary regime before anything
is collected. Then every ``epochs_per_checkpoint`` epochs the iterate ``theta_c``
enters running moments; after C = ``n_checkpoints`` checkpoints (paper, Appendix D.4,
"SWAG BNN")

    mu = E[theta] = (1/C) sum_c theta_c,    sigma^2 = E[theta^2] - E[theta]^2  (clipped >= 0),
    theta_k ~ N(mu, s^2 diag(sigma^2)),     k = 1..K (``n_members``, s = ``sample_scale``).

The K sampled networks combine like ensemble members (mean of means, mean variance,
variance of means). With ``calibrate`` a global factor fitted on the validation split V,

    c = mean_V (y - mu(x))^2 / mean_V (a(x) + e(x)),

multiplies both the aleatoric and the epistemic variance. V is held out only for this
calibration (and, with ``early_stopping``, to early-stop pretraining); with
``calibrate=False`` and no early stopping every network sees all training points.

Diagnostic: the drift fraction of the collected variance (``drift_fraction_``,
:meth:`SWAG.diagnostics`). With ``t_c = c - mean(c)`` the checkpoint index centred, per
parameter p the linear trend in c explains ``(sum_c t_c theta_cp)^2 / sum_c t_c^2`` of the
checkpoints' sum of squares ``sum_c (theta_cp - mean_c theta_cp)^2``; summed over all
parameters,

    drift = sum_p (sum_c t_c theta_cp)^2 / sum_c t_c^2  /  sum_p sum_c (theta_cp - mu_p)^2,

in [0, 1]: near 1 means the SWAG variance is mostly a straight-line walk of the iterate.

On a classification task the network has a softmax head trained (and SWAG-collected) with
cross-entropy; the K sampled networks' class probabilities are the members (AU their
mean entropy, EU the mutual information). The global variance factor has no
classification form (a factor on variances is a regression notion), so ``calibrate`` is
ignored there and no validation split is held out for it; ``sample_scale`` is the knob.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import Field

from udora.methods.base import Knowledge, Prediction, check_x
from udora.methods.classification.prediction import (
    ClassificationPrediction,
    softmax_probabilities,
)
from udora.methods.combine import combine_members, combine_standardised
from udora.methods.nn.config import NNConfig
from udora.methods.nn.heads import mean_variance_compiled
from udora.methods.nn.method import NNMethod, Recipe
from udora.methods.nn.network import Variables, predict_members
from udora.methods.nn.padding import space_bound
from udora.methods.nn.step import PointLoss
from udora.methods.nn.trackers import checkpoints, schedule_args, swag_moments
from udora.methods.nn.trainer import run_epochs
from udora.methods.registry import register
from udora.methods.seeding import jax_keys, numpy_rng


class SWAGConfig(NNConfig):
    """:class:`NNConfig` for pretraining plus the SWAG collection phase.

    ``n_members`` is the number of sampled networks; ``val_fraction`` sizes the split that
    fits the global variance factor (``calibrate``) and, with ``early_stopping``,
    early-stops pretraining. ``swag_burn_in`` SGD epochs at the SWAG learning rate run
    before the first checkpoint; the default 0 collects from the pretrained network at
    once, as the paper's App. D.4 describes ("Starting from this solution, it then enters
    a SWAG collection phase"; docs/paper_disagreements.md, DEV-1: a 200-epoch burn-in
    changed no claim's number beyond noise).
    """

    n_members: int = Field(default=30, ge=2)  # K = 1 would give EU = 0 everywhere
    n_checkpoints: int = Field(default=20, ge=2)
    swag_burn_in: int = Field(default=0, ge=0)
    epochs_per_checkpoint: int = Field(default=4, ge=1)
    swag_learning_rate: float = Field(default=1e-2, gt=0.0)
    swag_momentum: float = Field(default=0.9, ge=0.0, lt=1.0)
    grad_clip_norm: float = Field(default=1.0, gt=0.0)
    sample_scale: float = Field(default=1.0, gt=0.0)
    calibrate: bool = True

    SEARCH_SPACE: ClassVar[dict[str, dict[str, Any]]] = {
        **NNConfig.SEARCH_SPACE,
        "n_checkpoints": {"distribution": "int_uniform", "min": 10, "max": 40},
        "epochs_per_checkpoint": {"distribution": "int_uniform", "min": 2, "max": 12},
        "swag_learning_rate": {"distribution": "log_uniform_values", "min": 1e-3, "max": 1e-1},
        "swag_momentum": {"values": [0.0, 0.9, 0.95]},
        "val_fraction": {"distribution": "uniform", "min": 0.05, "max": 0.25},
        "grad_clip_norm": {"distribution": "uniform", "min": 0.5, "max": 2.0},
    }
    QUICK: ClassVar[dict[str, Any]] = {"n_epochs": 30, "n_checkpoints": 5}

    def unused_on(self, kind: str) -> tuple[str, ...]:
        """On classification no split is held out unless for early stopping
        (:meth:`SWAG.holds_out_validation`), so ``val_fraction`` is read only then."""
        if kind == "classification" and not self.early_stopping:
            return ("val_fraction",)
        return super().unused_on(kind)


def drift_fraction(stack: np.ndarray) -> float:
    """Share of the checkpoints' variance a linear trend in the index explains (module doc).

    ``stack`` is ``(C, P)``: C checkpoints of P parameters. 0 when nothing varies.
    """
    stack = np.asarray(stack, np.float64)
    t = np.arange(stack.shape[0], dtype=np.float64)
    t -= t.mean()
    centred = stack - stack.mean(axis=0, keepdims=True)
    total = float(np.sum(centred**2))
    if total == 0.0:
        return 0.0
    explained = float(np.sum((t @ centred) ** 2) / np.sum(t**2))
    return explained / total


def collect_moments(
    cfg: NNConfig,
    X: jax.Array,
    y: jax.Array,
    rows: jax.Array,
    keys: jax.Array,
    init: Variables,
    *,
    every: int,
    n_checkpoints: int,
    burn_in: int = 0,
    grad_clip: float | None = None,
    row_counts: jax.Array | None = None,
    loss: PointLoss | None = None,
) -> tuple[Variables, Any, Any, Any]:
    """Continue from ``init`` for ``burn_in + every * n_checkpoints`` epochs in one run;
    after the ``burn_in`` epochs every ``every``-th iterate is a checkpoint
    (:func:`swag_moments`, :func:`checkpoints`). The optimiser state carries over from
    burn-in to collection. The three numbers are program arguments and the checkpoint
    stack is as long as the largest ``n_checkpoints`` of ``cfg``'s search space, so a sweep
    over them compiles once. ``rows`` ``(K, m)`` index ``X``; with ``row_counts`` ``(K,)``
    only the first ``row_counts[k]`` are real (:func:`~udora.methods.nn.trainer.run_epochs`);
    ``loss`` the per-point loss (default: the Gaussian head's NLL).

    Returns:
        variables: the last iterate (leading K axis).
        first, second: ``E[theta]`` and ``E[theta^2]`` as params trees (leading K axis).
        stack: the checkpoints, numpy params trees with leading ``(K, n_checkpoints)`` axes.
    """
    capacity = max(n_checkpoints, space_bound(cfg, "n_checkpoints", max) or 0)
    trackers = (swag_moments(), checkpoints(capacity))
    schedule = (schedule_args(every, burn_in), schedule_args(every, burn_in, n_checkpoints))
    last, ((first, second), stack), _ = run_epochs(
        cfg,
        X,
        y,
        X[:0],
        y[:0],
        rows,
        keys,
        burn_in + every * n_checkpoints,
        trackers,
        init=init,
        grad_clip=grad_clip,
        tracker_args=schedule,
        row_counts=row_counts,
        loss=loss,
    )
    stack = jax.tree.map(lambda a: np.asarray(a)[:, :n_checkpoints], stack)
    return last, first, second, stack


@register("swag")
class SWAG(NNMethod):
    """Diagonal SWAG over all parameters of one pretrained residual MLP; K = 30 samples."""

    family = "Bayesian NN"
    kinds = ("regression", "classification")
    Config = SWAGConfig
    config: SWAGConfig
    recipe = Recipe(one_network=True)

    def collection_config(self) -> NNConfig:
        """The SGD phase: constant ``swag_learning_rate``, ``swag_momentum``, no Nesterov."""
        cfg = self.config
        return cfg.model_copy(
            update={
                "optimizer": "sgd",
                "learning_rate": cfg.swag_learning_rate,
                "momentum": cfg.swag_momentum,
                "sgd_nesterov": False,
            }
        )

    def holds_out_validation(self) -> bool:
        """For the variance factor (``calibrate``, regression only) or early stopping."""
        return (self.config.calibrate and not self.n_classes_) or self.config.early_stopping

    def fit(self, X: np.ndarray, y: np.ndarray, *, seed: int, knowledge: Knowledge = None) -> Self:
        """Pretrain; burn in, collect the moments, draw the K networks, fit the factor on V."""
        n_classes = knowledge.n_classes if knowledge is not None else 0
        Xs, ys = self.train_networks(X, y, seed=seed, n_classes=n_classes)
        cfg = self.config
        keys = jax_keys(seed, "swag")
        m, n = self.fit_idx_.shape[0], Xs.shape[0]
        rows = np.pad(self.fit_idx_, (0, n - m))[None, :]  # the whole sample's shapes
        last, first, second, stack = collect_moments(
            self.collection_config(),
            jnp.asarray(Xs),
            jnp.asarray(ys),
            jnp.asarray(rows, dtype=jnp.int32),
            keys["swag"][None],
            self.variables_,
            every=cfg.epochs_per_checkpoint,
            n_checkpoints=cfg.n_checkpoints,
            burn_in=cfg.swag_burn_in,
            grad_clip=cfg.grad_clip_norm,
            row_counts=np.array([m], np.int32),
            loss=self.point_loss(),
        )
        flat = [np.asarray(a[0]).reshape(cfg.n_checkpoints, -1) for a in jax.tree.leaves(stack)]
        self.drift_fraction_ = drift_fraction(np.concatenate(flat, axis=1))
        host = lambda tree: jax.tree.map(lambda a: np.asarray(a)[0], tree)  # noqa: E731
        self.swag_mean_ = host(first)
        self.swag_var_ = jax.tree.map(
            lambda a, b: np.maximum(b - a**2, 0.0), self.swag_mean_, host(second)
        )
        # drawn on the host from the run seed's named stream: no program per layer shape
        rng = numpy_rng(seed, "swag_samples")
        k = cfg.n_members
        samples = jax.tree.map(
            lambda mu, var: (
                mu[None]
                + cfg.sample_scale * np.sqrt(var)[None] * rng.standard_normal((k, *mu.shape))
            ).astype(mu.dtype),
            self.swag_mean_,
            self.swag_var_,
        )
        state = {name: v for name, v in last.items() if name != "params"}
        state = jax.tree.map(lambda a: np.broadcast_to(np.asarray(a), (k, *a.shape[1:])), state)
        self.sample_variables_ = {"params": samples, **state}
        self.scale_ = 1.0
        if cfg.calibrate and self.val_idx_.size > 0 and not n_classes:
            # at the whole sample, then V's columns: V's size varies with val_fraction
            mean, var = self._standardised(jnp.asarray(Xs))
            pred = combine_members(mean[:, self.val_idx_], var[:, self.val_idx_])
            resid2 = (ys[self.val_idx_].astype(np.float64) - pred.mean) ** 2
            self.scale_ = float(np.mean(resid2) / np.mean(pred.total))
        self.fitted_ = True
        return self

    def diagnostics(self) -> dict[str, float]:
        """``drift_fraction``: the share of the collected variance that is linear drift."""
        self._check_fitted()
        return {"drift_fraction": self.drift_fraction_}

    def _standardised(self, Xs: jax.Array) -> tuple[np.ndarray, np.ndarray]:
        """Sampled networks' means and variances ``(K, m)`` at standardised ``Xs``."""
        keys = jax.random.split(self.predict_key_, self.config.n_members)
        raw = predict_members(self.config, self.sample_variables_, keys, Xs)
        mean, var = mean_variance_compiled(raw, self.config.head)
        return np.asarray(mean, np.float64), np.asarray(var, np.float64)

    def predict(self, X: np.ndarray) -> Prediction | ClassificationPrediction:
        """K sampled networks combined, variances times the factor ``c``, at ``X`` ``(m, d)``
        (classification: the K networks' class probabilities as members)."""
        self._check_fitted()
        X = check_x(X, self.d_)
        if self.n_classes_:
            keys = jax.random.split(self.predict_key_, self.config.n_members)
            Xs = jnp.asarray(self.scaler_.x(X), dtype=jnp.float32)
            raw = predict_members(
                self.config, self.sample_variables_, keys, Xs, n_out=self.n_classes_
            )
            return ClassificationPrediction.from_members(softmax_probabilities(raw))
        mean, var = self._standardised(jnp.asarray(self.scaler_.x(X), dtype=jnp.float32))
        pred = combine_standardised(mean, var, self.scaler_)
        return Prediction(
            mean=pred.mean,
            aleatoric=self.scale_ * pred.aleatoric,
            epistemic=self.scale_ * pred.epistemic,
            member_means=pred.member_means,
        )
