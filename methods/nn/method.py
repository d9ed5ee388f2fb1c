"""The fit/predict plumbing shared by the neural-network methods, driven by a recipe.

A method declares its parts in a :class:`Recipe` (its per-point loss, loss terms, how
each member's training rows are drawn, one network or K) instead of overriding hooks.
On a classification task (``knowledge.classes``) the head is a softmax over the C classes
trained by cross-entropy, and ``predict`` averages the members' class probabilities
(:meth:`~udora.methods.classification.prediction.ClassificationPrediction.from_members`);
otherwise ``fit`` standardises inputs and targets, holds out a validation split when the method
uses one (:meth:`NNMethod.holds_out_validation`: early stopping, or the method's own
post-hoc step), draws the members' rows, trains all members in one vmapped program
(:mod:`methods.nn.trainer`) and keeps the stacked variables. ``predict`` runs every
member (or MC dropout pass), turns the head outputs into means and variances and
combines them (:func:`methods.combine.combine_members`) in original units. Post-hoc
steps (Laplace, SWAG, DEUP) are explicit code in the method's own ``fit`` after
:meth:`NNMethod.train_networks`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Self

import jax
import jax.numpy as jnp
import numpy as np

from udora.methods.base import Knowledge, Prediction, UQMethod, check_x, check_xy
from udora.methods.classification.prediction import (
    ClassificationPrediction,
    check_labels,
    softmax_probabilities,
)
from udora.methods.combine import combine_standardised
from udora.methods.nn.config import NNConfig
from udora.methods.nn.heads import mean_variance_compiled
from udora.methods.nn.network import predict_members
from udora.methods.nn.step import GaussianNLL, LossTerm, PointLoss, SoftmaxCrossEntropy
from udora.methods.nn.trainer import TRAINER_VERSION, train_members
from udora.methods.seeding import jax_keys, numpy_rng
from udora.oracle.standardise import Standardiser


def validation_split(
    n: int, fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(n - v,)`` to fit on and ``(v,)`` to validate on, ``v ~ fraction * n``.

    ``fraction = 0`` gives no validation rows; otherwise ``1 <= v <= n - 2``.
    """
    if fraction <= 0.0 or n < 3:
        return np.arange(n), np.arange(0)
    v = int(min(max(round(fraction * n), 1), n - 2))
    perm = rng.permutation(n)
    return np.sort(perm[v:]), np.sort(perm[:v])


def all_rows(cfg: NNConfig, n_trained: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``(n_trained, n)``: every trained network sees all ``n`` fit rows."""
    del cfg, rng
    return np.tile(np.arange(n), (n_trained, 1))


def gaussian_nll(cfg: NNConfig) -> PointLoss:
    """The Gaussian NLL of the configured head."""
    return GaussianNLL(cfg.head)


@dataclass(frozen=True)
class Recipe:
    """The parts a neural-network method trains with.

    Attributes:
        loss: ``cfg -> `` hashable per-point loss with ``n_out`` (:mod:`methods.nn.step`).
        terms: functions ``(cfg, Xs_fit (n, d), n_classes) -> (term, args)``: a hashable
            loss term ``R(f, key, args)`` added to each step's loss and its data-dependent
            arrays (``n_classes`` 0 on a regression task).
        rows: ``(cfg, n_trained, n, rng) -> (n_trained, m)`` each network's rows of the
            fit split (:meth:`NNMethod.train_networks` maps them into the whole sample).
        one_network: train one network (MC dropout, last-layer posteriors, SWAG) rather
            than ``n_members``.
        mc_dropout: predict with ``n_members`` dropout passes of the trained network.
        resampled: ``rows`` has a swept length ``m`` (bagging's resample size): the rows
            are padded to the sample's size and counted, so every ``m`` shares one program.
    """

    loss: Callable[[NNConfig], PointLoss] = gaussian_nll
    terms: tuple[Callable[[NNConfig, np.ndarray, int], tuple[LossTerm, Any]], ...] = ()
    rows: Callable[[NNConfig, int, int, np.random.Generator], np.ndarray] = all_rows
    one_network: bool = False
    mc_dropout: bool = False
    resampled: bool = False


class NNMethod(UQMethod):
    """Base of the neural-network methods; a subclass declares its ``recipe``."""

    libraries = ("flax", "optax")

    Config: ClassVar[type[NNConfig]] = NNConfig
    config: NNConfig
    recipe: ClassVar[Recipe] = Recipe()
    trainer_version: ClassVar[int] = TRAINER_VERSION  # enters the run identity
    n_classes_: int = 0  # C once fitted on a classification task; 0 for regression

    def holds_out_validation(self) -> bool:
        """Whether ``fit`` holds out the ``val_fraction`` split: only for early stopping here.

        Without it every network trains on all training points. Methods whose post-hoc step
        needs held-out data (Laplace, FSP-Laplace, DEUP, SWAG's calibration) override this.
        """
        return self.config.early_stopping

    @property
    def n_trained(self) -> int:
        """How many networks are trained (K for ensembles, 1 for ``one_network``)."""
        return 1 if self.recipe.one_network else self.config.n_members

    def fit(self, X: np.ndarray, y: np.ndarray, *, seed: int, knowledge: Knowledge = None) -> Self:
        """Train on ``X`` ``(n, d)``, ``y`` ``(n,)`` (original units, or class codes
        0..C-1 when ``knowledge.classes`` names C classes) with run seed ``seed``."""
        n_classes = knowledge.n_classes if knowledge is not None else 0
        self.train_networks(X, y, seed=seed, n_classes=n_classes)
        self.fitted_ = True
        return self

    def point_loss(self) -> PointLoss:
        """The per-point loss trained on: the recipe's, or cross-entropy over C classes."""
        if self.n_classes_:
            return SoftmaxCrossEntropy(self.n_classes_)
        return self.recipe.loss(self.config)

    def train_networks(
        self, X: np.ndarray, y: np.ndarray, *, seed: int, n_classes: int = 0
    ) -> tuple[np.ndarray, np.ndarray]:
        """Standardise, split, train the recipe's networks; the standardised data back.

        Returns ``Xs`` ``(n, d)`` and ``ys`` ``(n,)`` (float32, standardised; the class
        codes themselves with ``n_classes``);
        ``self.fit_idx_`` and ``self.val_idx_`` index the fit and validation splits (the
        latter empty unless :meth:`holds_out_validation`); ``self.val_nll_`` is the
        validation loss of the kept variables (0 without early stopping).

        The program always sees the whole sample: the members' rows index it, and with a
        validation split (or a resample) they are padded to ``n`` with a count of the real
        ones, so a sweep over ``val_fraction`` keeps the program's shapes (SWAG's space).
        The validation rows reach the program only for early stopping, the one use of the
        loss it computes on them after each epoch.
        """
        X, y = check_xy(X, y)
        cfg, recipe = self.config, self.recipe
        self.n_classes_ = n_classes
        scaler = Standardiser.fit(X, y)
        Xs = scaler.x(X).astype(np.float32)
        ys = (check_labels(y, n_classes) if n_classes else scaler.y(y)).astype(np.float32)
        n = X.shape[0]
        fraction = cfg.val_fraction if self.holds_out_validation() else 0.0
        fit_idx, val_idx = validation_split(n, fraction, numpy_rng(seed, "validation"))
        rows = recipe.rows(cfg, self.n_trained, fit_idx.shape[0], numpy_rng(seed, "members"))
        rows = fit_idx[rows]  # into the whole sample
        keys = jax_keys(seed, "members", "predict")
        member_keys = jax.random.split(keys["members"], rows.shape[0])
        bound = [make(cfg, Xs[fit_idx], n_classes) for make in recipe.terms]
        counted = {}
        if recipe.resampled or val_idx.size:  # pad to n; the count says which rows are real
            counted["row_counts"] = np.full(rows.shape[0], rows.shape[1], np.int32)
            rows = np.pad(rows, ((0, 0), (0, max(0, n - rows.shape[1]))))
        stop_on = val_idx if cfg.early_stopping else val_idx[:0]
        variables, val_loss, epochs_run = train_members(
            cfg,
            jnp.asarray(Xs),
            jnp.asarray(ys),
            jnp.asarray(Xs[stop_on]),
            jnp.asarray(ys[stop_on]),
            jnp.asarray(rows, dtype=jnp.int32),
            member_keys,
            loss=self.point_loss(),
            terms=tuple(term for term, _ in bound),
            term_args=tuple(args for _, args in bound),
            **counted,
        )
        self.fit_idx_, self.val_idx_ = fit_idx, val_idx
        self.variables_: dict[str, Any] = variables
        self.scaler_ = scaler
        self.val_nll_ = np.asarray(val_loss)
        self.epochs_run_ = np.asarray(epochs_run)
        self.predict_key_ = keys["predict"]
        self.d_ = X.shape[1]
        return Xs, ys

    def raw_outputs(self, Xs: jax.Array) -> jax.Array:
        """Head outputs ``(K, m, n_out)`` of the members (or dropout passes) at ``Xs`` (m, d)."""
        n_out = self.point_loss().n_out
        if not self.recipe.mc_dropout:
            keys = jax.random.split(self.predict_key_, self.n_trained)
            return predict_members(self.config, self.variables_, keys, Xs, n_out=n_out)
        k = self.config.n_members
        passes = jax.tree.map(
            lambda a: np.broadcast_to(np.asarray(a), (k, *a.shape[1:])), self.variables_
        )
        keys = jax.random.split(self.predict_key_, k)
        return predict_members(self.config, passes, keys, Xs, sample=True, n_out=n_out)

    def predict(self, X: np.ndarray) -> Prediction | ClassificationPrediction:
        """Combined predictive at ``X`` ``(m, d)``; ``member_means`` is ``(K, m)`` (on a
        classification task: class probabilities, ``member_probs`` ``(K, m, C)``)."""
        self._check_fitted()
        X = check_x(X, self.d_)
        raw = self.raw_outputs(jnp.asarray(self.scaler_.x(X), dtype=jnp.float32))
        if self.n_classes_:
            return ClassificationPrediction.from_members(softmax_probabilities(raw))
        mean, var = mean_variance_compiled(raw, self.config.head)
        return combine_standardised(np.asarray(mean), np.asarray(var), self.scaler_)
