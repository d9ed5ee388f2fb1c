"""Deep kernel learning (Wilson et al. 2016): an exact GP on learned features (GPJax).

On standardised data, a feature map ``g_theta: R^d -> R^q`` (the shared residual MLP
with a ``q``-wide linear output, ``q`` = ``feature_space_dim``) feeds an RBF kernel,

    f ~ GP(0, k),  k(x, x') = s2 exp(-|g(x) - g(x')|^2 / (2 l^2)),  y = f(x) + eps,
    eps ~ N(0, sigma^2),

and ``theta``, ``s2``, ``l``, ``sigma`` maximise the exact log marginal likelihood
(GPJax ``conjugate_mll``) by AdamW with linear warmup to ``learning_rate`` (the peak of the
schedule) and cosine decay to 0 over ``n_steps`` steps, global-norm gradient clipping at
``grad_clip_norm`` and weight decay on ``theta`` only (paper, Appendix D.2).

Each step evaluates the exact marginal likelihood of a random subset of ``batch_size``
training points drawn without replacement (scaled by ``n / batch_size``), the
subset-of-data stochastic gradient of Chen et al. (2020, "Stochastic gradient descent in
correlated settings"). A step then costs O(b^3) instead of O(n^3): at n = 1500 on two CPU
cores, a full-batch float64 step takes about 2 s, so the paper's default 500 steps would
take ~17 minutes per fit. ``batch_size = None`` (or >= n) trains on the full batch, as the
paper describes. Drawing without replacement matters: duplicated points inside one exact
GP likelihood read as repeated noise-free observations and pull ``sigma`` down.

Prediction is always the exact GP posterior on ALL training points at ``g(x)``: mean
``m_S(x)``, aleatoric ``sigma^2``, epistemic the latent posterior variance ``s2_f(x)``,
mapped back to original units. ``mll_`` is the full-data log marginal likelihood at the
final parameters. The GP runs in float64 inside a scoped ``jax.enable_x64``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Self

import equinox as eqx
import gpjax as gpx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from gpjax.parameters import val
from pydantic import Field

from udora.methods.base import Knowledge, MethodConfig, Prediction, UQMethod, check_x, check_xy
from udora.methods.joint import over_batches
from udora.methods.nn.backbone import ResidualMLP
from udora.methods.registry import register
from udora.methods.seeding import jax_keys
from udora.oracle.standardise import Standardiser


def _log(lo: float, hi: float) -> dict[str, Any]:
    return {"distribution": "log_uniform_values", "min": lo, "max": hi}


class DKLConfig(MethodConfig):
    """Feature network, kernel and noise starting values, optimiser schedule.

    ``n_layers`` residual blocks of width ``hidden_dim`` map to ``feature_space_dim``
    features; ``feature_map = "identity"`` skips the network (a plain RBF GP, for tests).
    ``n_steps`` is the training budget: exactly that many AdamW steps, and the
    warmup-cosine schedule runs over them; ``learning_rate`` is the schedule's peak (reached
    after ``warmup_steps``). ``grad_clip_norm`` is the global-norm clip, as in the NN
    methods (docs/adding_a_method.md). ``QUICK`` (what ``udora bench --quick`` applies):
    150 steps, the schedule compressed onto them.
    ``batch_size`` (not in the paper) is the subset size of each marginal-likelihood step;
    ``None`` trains on the full batch.
    """

    n_layers: int = Field(default=2, ge=0)
    hidden_dim: int = Field(default=32, ge=1)
    feature_space_dim: int = Field(default=4, ge=1)
    activation: Literal["tanh", "relu", "gelu"] = "tanh"
    feature_map: Literal["mlp", "identity"] = "mlp"
    noise_std: float = Field(default=0.3, gt=0.0)
    base_kernel_variance: float = Field(default=1.0, gt=0.0)
    base_kernel_lengthscale: float = Field(default=1.0, gt=0.0)
    n_steps: int = Field(default=500, ge=1)
    warmup_steps: int = Field(default=50, ge=0)
    learning_rate: float = Field(default=1e-2, gt=0.0)
    grad_clip_norm: float = Field(default=1.0, gt=0.0)
    weight_decay: float = Field(default=1e-4, ge=0.0)
    jitter: float = Field(default=1e-6, ge=0.0)
    batch_size: int | None = Field(default=512, ge=2)
    chunk_size: int = Field(default=2048, ge=1)

    SEARCH_SPACE: ClassVar[dict[str, dict[str, Any]]] = {
        "n_layers": {"values": [1, 2, 3]},
        "hidden_dim": {"values": [16, 32, 64, 128]},
        "feature_space_dim": {"distribution": "int_uniform", "min": 2, "max": 8},
        "noise_std": _log(0.05, 1.0),
        "base_kernel_variance": _log(0.1, 5.0),
        "base_kernel_lengthscale": _log(0.1, 5.0),
        "n_steps": {"distribution": "int_uniform", "min": 200, "max": 1000},
        "warmup_steps": {"distribution": "int_uniform", "min": 0, "max": 150},
        "learning_rate": _log(5e-4, 5e-2),
        "grad_clip_norm": {"distribution": "uniform", "min": 0.5, "max": 2.0},
        "weight_decay": _log(1e-6, 1e-2),
    }
    QUICK: ClassVar[dict[str, Any]] = {"n_steps": 150}


class DeepKernelGP(eqx.Module):
    """Feature-network parameters and the GPJax conjugate model, optimised together."""

    net_params: Any
    gp: Any


@register("dkl")
class DKL(UQMethod):
    """Exact GP with an RBF kernel on MLP features, trained by marginal likelihood.

    Fitted state (standardised units): ``noise_var_`` (sigma^2), ``kernel_variance_``
    (s2), ``lengthscale_`` (l), ``mll_`` (log marginal likelihood at the end).
    """

    family = "linear & kernel"
    not_for = (
        (
            "classification",
            "its exact GP on learned features needs a Gaussian likelihood; "
            "labels would need an approximate inference of its own",
        ),
    )
    aleatoric = "constant"
    libraries = ("flax", "gpjax", "equinox", "optax")
    Config = DKLConfig
    config: DKLConfig

    def _network(self) -> ResidualMLP:
        cfg = self.config
        return ResidualMLP(
            cfg.hidden_dim, cfg.n_layers, cfg.activation, n_out=cfg.feature_space_dim
        )

    def _features(self, net_params: Any, X: jax.Array) -> jax.Array:
        """Features ``(m, q)`` of standardised inputs ``X`` ``(m, d)``."""
        if self.config.feature_map == "identity":
            return X
        return self._network().apply({"params": net_params}, X, train=False)

    def _optimizer(self, model: DeepKernelGP) -> optax.GradientTransformation:
        cfg = self.config
        steps = cfg.n_steps
        schedule = optax.warmup_cosine_decay_schedule(
            0.0, cfg.learning_rate, min(cfg.warmup_steps, steps - 1), steps, 0.0
        )

        def decay_mask(params: DeepKernelGP) -> DeepKernelGP:
            return DeepKernelGP(
                net_params=jax.tree.map(lambda _: True, params.net_params),
                gp=jax.tree.map(lambda _: False, params.gp),
            )

        return optax.chain(
            optax.clip_by_global_norm(cfg.grad_clip_norm),
            optax.adamw(schedule, weight_decay=cfg.weight_decay, mask=decay_mask),
        )

    def _train(self, model: DeepKernelGP, data: gpx.Dataset, key: jax.Array) -> DeepKernelGP:
        """``n_steps`` AdamW steps on the (subset) negative log marginal likelihood."""
        n = data.n
        b = n if self.config.batch_size is None else min(self.config.batch_size, n)
        optim = self._optimizer(model)
        params, static = eqx.partition(model, eqx.is_array)

        def loss(p: DeepKernelGP, X: jax.Array, y: jax.Array) -> jax.Array:
            m = eqx.combine(p, static)
            batch = gpx.Dataset(X=self._features(m.net_params, X), y=y)
            return -gpx.objectives.conjugate_mll(m.gp, batch) * (n / b)

        @jax.jit
        def run(p, keys, X, y):  # data as arguments: not folded in as constants
            def step(carry, k):
                p, state = carry
                idx = jnp.arange(n) if b == n else jax.random.permutation(k, n)[:b]
                value, grads = jax.value_and_grad(loss)(p, X[idx], y[idx])
                updates, state = optim.update(grads, state, p)
                return (optax.apply_updates(p, updates), state), value

            (p, _), _ = jax.lax.scan(step, (p, optim.init(p)), keys)
            return p

        keys = jax.random.split(key, self.config.n_steps)
        params = run(params, keys, data.X, data.y)
        return eqx.combine(params, static)

    def fit(self, X: np.ndarray, y: np.ndarray, *, seed: int, knowledge: Knowledge = None) -> Self:
        """Train on ``X`` ``(n, d)``, ``y`` ``(n,)`` (original units) with run seed ``seed``."""
        X, y = check_xy(X, y)
        cfg = self.config
        self.scaler_ = Standardiser.fit(X, y)
        keys = jax_keys(seed, "dkl_init", "dkl_batches")
        with jax.enable_x64(True):
            Xs = jnp.asarray(self.scaler_.x(X))
            data = gpx.Dataset(X=Xs, y=jnp.asarray(self.scaler_.y(y))[:, None])
            net_params: Any = {}
            if cfg.feature_map == "mlp":
                net_params = self._network().init(keys["dkl_init"], Xs[:1], train=False)["params"]
                net_params = jax.tree.map(lambda a: a.astype(jnp.float64), net_params)
            kernel = gpx.kernels.RBF(
                lengthscale=jnp.asarray(cfg.base_kernel_lengthscale, jnp.float64),
                variance=jnp.asarray(cfg.base_kernel_variance, jnp.float64),
            )
            prior = gpx.gps.Prior(
                kernel=kernel, mean_function=gpx.mean_functions.Zero(), jitter=cfg.jitter
            )
            likelihood = gpx.likelihoods.Gaussian(
                obs_stddev=jnp.asarray(cfg.noise_std, jnp.float64)
            )
            model = DeepKernelGP(net_params=net_params, gp=prior * likelihood)

            model = self._train(model, data, keys["dkl_batches"])
            feats = gpx.Dataset(X=self._features(model.net_params, Xs), y=data.y)
            self.posterior_ = model.gp.condition(feats)
            self.net_params_ = model.net_params
            self.mll_ = float(gpx.objectives.conjugate_mll(model.gp, feats))
            self.noise_var_ = float(model.gp.likelihood.noise_vector(1)[0])
            self.kernel_variance_ = float(val(model.gp.prior.kernel.variance))
            self.lengthscale_ = float(jnp.ravel(val(model.gp.prior.kernel.lengthscale))[0])
        self.d_ = X.shape[1]
        self.fitted_ = True
        return self

    def predict(self, X: np.ndarray) -> Prediction:
        """Posterior at ``g(X)`` for ``X`` ``(m, d)``: mean, AU ``sigma^2``, EU ``s2_f``."""
        self._check_fitted()
        Xs = self.scaler_.x(check_x(X, self.d_))
        means, variances = [], []
        size = self.config.chunk_size
        with jax.enable_x64(True):
            for start in range(0, Xs.shape[0], size):
                feats = self._features(self.net_params_, jnp.asarray(Xs[start : start + size]))
                latent = self.posterior_(feats, covariance="diagonal")
                means.append(np.asarray(latent.mean).reshape(-1))
                variances.append(np.asarray(latent.variance).reshape(-1))
        return Prediction(
            mean=self.scaler_.mean_back(np.concatenate(means)),
            aleatoric=self.scaler_.var_back(np.full(Xs.shape[0], self.noise_var_)),
            epistemic=self.scaler_.var_back(np.maximum(np.concatenate(variances), 0.0)),
        )

    def predict_joint(self, X: np.ndarray) -> np.ndarray:
        """The latent posterior covariance at ``g(x)`` over batches ``X`` (B, tau, d):
        (B, tau, tau), original units (GPJax's dense predictive over the batches'
        distinct inputs)."""
        self._check_fitted()

        def covariance(U: np.ndarray) -> np.ndarray:
            with jax.enable_x64(True):
                Us = jnp.asarray(self.scaler_.x(check_x(U, self.d_)))
                feats = self._features(self.net_params_, Us)
                C = np.asarray(self.posterior_(feats, covariance="dense").covariance())
            return self.scaler_.var_back(C)

        return over_batches(X, covariance)
