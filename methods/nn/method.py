"""The fit/predict plumbing shared by the neural-network methods.

``fit`` standardises inputs and targets, holds out a validation split (for early
stopping), asks the subclass for each member's training rows, trains all members in one
vmapped program (:mod:`methods.nn.trainer`) and keeps the stacked variables. ``predict``
runs every member (or MC pass), turns the head outputs into means and variances and
combines them (:func:`methods.combine.combine_members`) in original units.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Self

import jax
import jax.numpy as jnp
import numpy as np

from udora.methods.base import Prediction, TaskKnowledge, UQMethod, check_x, check_xy
from udora.methods.combine import combine_standardised
from udora.methods.nn.config import NNConfig
from udora.methods.nn.heads import mean_variance
from udora.methods.nn.network import predict_members
from udora.methods.nn.trainer import train_members
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


class NNMethod(UQMethod):
    """Base of the neural-network methods; subclasses choose the members' training rows."""

    Config: ClassVar[type[NNConfig]] = NNConfig
    config: NNConfig

    def trained_members(self) -> int:
        """How many networks are trained (K for ensembles, 1 for MC dropout)."""
        return self.config.n_members

    def objective(self) -> Callable | None:
        """The per-point training loss (with ``n_out``); None: the head's Gaussian NLL."""
        return None

    def regulariser(self) -> Callable | None:
        """A hashable ``R(f, key, args)`` added to each step's loss; default None."""
        return None

    def regulariser_args(self, Xs_fit: np.ndarray) -> Any:
        """The data-dependent arrays ``args`` of the regulariser, from the fit split."""
        del Xs_fit
        return None

    def n_out(self) -> int:
        """Width of the network's linear head."""
        objective = self.objective()
        return 2 if objective is None else objective.n_out

    def member_rows(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``(K, m)`` training-row indices per member; default: every member sees all n."""
        return np.tile(np.arange(n), (self.trained_members(), 1))

    def fit(
        self,
        X: np.ndarray,
        y: np.ndarray,
        *,
        seed: int,
        knowledge: TaskKnowledge | None = None,
    ) -> Self:
        """Train on ``X`` ``(n, d)``, ``y`` ``(n,)`` (original units) with run seed ``seed``."""
        X, y = check_xy(X, y)
        scaler = Standardiser.fit(X, y)
        Xs = scaler.x(X).astype(np.float32)
        ys = scaler.y(y).astype(np.float32)
        fit_idx, val_idx = validation_split(
            X.shape[0], self.config.val_fraction, numpy_rng(seed, "validation")
        )
        rows = self.member_rows(fit_idx.shape[0], numpy_rng(seed, "members"))
        keys = jax_keys(seed, "members", "predict")
        member_keys = jax.random.split(keys["members"], rows.shape[0])
        variables, best_val, epochs_run = train_members(
            self.config,
            jnp.asarray(Xs[fit_idx]),
            jnp.asarray(ys[fit_idx]),
            jnp.asarray(Xs[val_idx]),
            jnp.asarray(ys[val_idx]),
            jnp.asarray(rows, dtype=jnp.int32),
            member_keys,
            loss=self.objective(),
            regulariser=self.regulariser(),
            regulariser_args=self.regulariser_args(Xs[fit_idx]),
        )
        self.fit_idx_, self.val_idx_ = fit_idx, val_idx
        self.variables_: dict[str, Any] = variables
        self.scaler_ = scaler
        self.val_nll_ = np.asarray(best_val)
        self.epochs_run_ = np.asarray(epochs_run)
        self.predict_key_ = keys["predict"]
        self.d_ = X.shape[1]
        self.post_fit(Xs, ys, seed=seed)
        self.fitted_ = True
        return self

    def post_fit(self, Xs: np.ndarray, ys: np.ndarray, *, seed: int) -> None:
        """Post-hoc step after training (Laplace, SWAG, DEUP); default: nothing.

        ``Xs`` ``(n, d)`` and ``ys`` ``(n,)`` are the standardised float32 training data;
        ``self.fit_idx_`` and ``self.val_idx_`` index the fit and validation splits.
        """

    def raw_outputs(self, Xs: jax.Array) -> jax.Array:
        """Head outputs ``(K, m, n_out)`` of the trained members at standardised ``Xs`` (m, d)."""
        keys = jax.random.split(self.predict_key_, self.trained_members())
        return predict_members(self.config, self.variables_, keys, Xs, n_out=self.n_out())

    def predict(self, X: np.ndarray) -> Prediction:
        """Combined predictive at ``X`` ``(m, d)``; ``member_means`` is ``(K, m)``."""
        self._check_fitted()
        X = check_x(X, self.d_)
        raw = self.raw_outputs(jnp.asarray(self.scaler_.x(X), dtype=jnp.float32))
        mean, var = mean_variance(raw, self.config.head)
        return combine_standardised(np.asarray(mean), np.asarray(var), self.scaler_)
