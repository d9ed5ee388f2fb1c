"""The GP marginal-likelihood fit as a flat, bounded problem for scipy's L-BFGS-B.

The model (GPJax): ``y = m + f(x) + eps``, ``f ~ GP(0, k)``, ``eps ~ N(0, s2)``, on
standardised data. The objective is the negative log marginal likelihood per point,
``-log N(y | m, K + s2 I) / n`` (GPJax ``conjugate_mll``), as a function of the flat vector
of GPJax's unconstrained parameters (softplus-inverse of each positive hyperparameter).

:data:`BOUNDS` is the box of the constrained values, in standardised units; it maps to
bounds on the unconstrained vector through the softplus. ``paramax.non_trainable`` leaves
(``alpha``, ``power``, arc-cosine weight and bias variances, a zero mean) are pinned by
equal lower and upper bounds. The local-optimum condition in the box is a small
*projected* gradient: components that push against an active bound are dropped.
Written by hand because GPJax's own ``fit_lbfgs`` (optax L-BFGS) takes no bounds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import equinox as eqx
import gpjax as gpx
import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize
from gpjax.parameters import NonNegativeReal, Real
from jax.flatten_util import ravel_pytree
from numpy.typing import ArrayLike

from udora.oracle.kernels import build_kernel
from udora.oracle.preset import Mean

NOISE_FLOOR = 1e-4  # lower bound of the noise variance, standardised units
# Box for the constrained values (standardised units), keyed by parameter name.
BOUNDS = {
    "lengthscale": (1e-2, 1e2),
    "period": (1e-2, 1e2),
    "variance": (1e-6, 10.0),  # kernel variances
    "obs_stddev": (1e-8, 2.0),  # noise variance above NOISE_FLOOR
    "constant": (-10.0, 10.0),  # constant mean
}
NONFINITE_LOSS = 1e10


class FlooredNoiseStd(NonNegativeReal):
    """Noise std ``sqrt(low + softplus(raw))``: its variance never falls below ``low``.

    A subclass of GPJax's NonNegativeReal because the Gaussian likelihood takes only that.
    """

    low: float = eqx.field(static=True)

    def __init__(self, variance: float, low: float):
        if not variance >= low:
            raise ValueError(f"noise variance {variance!r} is below the floor {low!r}")
        self.low = float(low)
        self._unconstrained = jnp.asarray(_softplus_inv(variance - low), dtype=float)

    def unwrap(self) -> jax.Array:
        return jnp.sqrt(self.low + jax.nn.softplus(self._unconstrained))


def gp_model(components: list[dict], d: int, mean: Mean, noise_var: float):
    """GPJax conjugate posterior of the kernel ``components`` on ``d`` inputs."""
    kernel = build_kernel(components, d)
    meanf = (
        gpx.mean_functions.Constant(constant=Real(jnp.asarray(mean.value, dtype=float)))
        if mean.type == "constant"
        else gpx.mean_functions.Zero()
    )
    prior = gpx.gps.Prior(mean_function=meanf, kernel=kernel)
    likelihood = gpx.likelihoods.Gaussian(obs_stddev=FlooredNoiseStd(noise_var, NOISE_FLOOR))
    return prior * likelihood


def objective(model, data) -> jax.Array:
    """Negative log marginal likelihood per data point (scalar)."""
    return -gpx.objectives.conjugate_mll(model, data) / data.n


def _softplus_inv(v: float) -> float:
    return float(v + np.log(-np.expm1(-v)))


@dataclass
class BoundedProblem:
    """The flat, box-bounded minimisation problem of one model structure.

    ``x`` is the ``(p,)`` vector of GPJax's unconstrained parameters; the data ``Z``
    ``(m, d)``, ``t`` ``(m,)`` are arguments of every call, so one compiled objective
    serves every start and subset of the same size.
    """

    lower: np.ndarray  # (p,)
    upper: np.ndarray  # (p,)
    value_and_grad: Callable  # (x (p,), X (m, d), y (m, 1)) -> (loss, (p,) gradient)
    flatten: Callable  # model -> (p,) unconstrained parameters
    rebuild: Callable  # (p,) -> model

    def start(self, model) -> np.ndarray:
        """``model``'s parameters ``(p,)``, clipped into the box."""
        return np.clip(self.flatten(model), self.lower, self.upper)

    def outside(self, x: np.ndarray) -> bool:
        """Whether ``x`` ``(p,)`` is non-finite or outside the box (beyond rounding)."""
        slack = 1e-9 * np.maximum(1.0, np.abs(self.upper))
        beyond = (x < self.lower - slack) | (x > self.upper + slack)
        return bool(not np.all(np.isfinite(x)) or np.any(beyond))

    def fun(self, x: np.ndarray, Z: np.ndarray, t: np.ndarray) -> tuple[float, np.ndarray]:
        """Loss and ``(p,)`` gradient at ``x``; a non-finite value reads as a large loss."""
        loss, grad = self.value_and_grad(jnp.asarray(x), jnp.asarray(Z), jnp.asarray(t)[:, None])
        loss, grad = float(loss), np.asarray(grad, dtype=float)
        if not (np.isfinite(loss) and np.all(np.isfinite(grad))):
            return NONFINITE_LOSS, np.zeros_like(grad)
        return loss, grad

    def solve(
        self, x: np.ndarray, Z: np.ndarray, t: np.ndarray, max_iters: int, gtol: float
    ) -> scipy.optimize.OptimizeResult:
        """L-BFGS-B from ``x`` (p,) in the box: stops when the projected gradient's largest
        component is below ``gtol``, after ``max_iters`` iterations, or when a step changes
        the loss by less than 1e-13 relative."""
        Zj, tj = jnp.asarray(Z), jnp.asarray(t)
        return scipy.optimize.minimize(
            lambda v: self.fun(v, Zj, tj),
            x,
            jac=True,
            method="L-BFGS-B",
            bounds=list(zip(self.lower, self.upper, strict=True)),
            options={"maxiter": max_iters, "gtol": gtol, "ftol": 1e-13, "maxcor": 20},
        )

    def projected_gradient(self, x: np.ndarray, Z: np.ndarray, t: np.ndarray) -> np.ndarray:
        """(p,) gradient with components pushing against an active bound set to zero."""
        _, g = self.fun(x, Z, t)
        at_low = (x <= self.lower + 1e-9 * np.maximum(1.0, np.abs(self.lower))) & (g > 0)
        at_high = (x >= self.upper - 1e-9 * np.maximum(1.0, np.abs(self.upper))) & (g < 0)
        return np.where(at_low | at_high, 0.0, g)


def parameter_key(path_key: str) -> str:
    """The parameter a leaf belongs to: its key path without the storage suffix.

    ``.prior.kernel.kernels[0].lengthscale._unconstrained`` ->
    ``.prior.kernel.kernels[0].lengthscale``; ``...constant.value`` -> ``...constant``.
    """
    for suffix in ("._unconstrained", ".value"):
        if path_key.endswith(suffix):
            return path_key[: -len(suffix)]
    return path_key


def bounded_problem(
    model, limits: Mapping[str, tuple[ArrayLike, ArrayLike]] | None = None
) -> BoundedProblem:
    """The box-constrained problem of ``model``'s structure (its kernel, mean and noise).

    Non-trainable leaves are pinned at ``model``'s values: models passed to
    :meth:`BoundedProblem.flatten` must share them (every start of one preset does).
    ``limits`` replaces the :data:`BOUNDS` box of single parameters: it maps a parameter
    key (:func:`parameter_key`, e.g. ``.prior.kernel.kernels[0].lengthscale``) to
    constrained ``(low, high)`` values, scalars or one per element of the leaf; equal low
    and high pin the parameter. A key that names no trainable parameter is an error.
    """
    limits = dict(limits or {})
    params, static = eqx.partition(model, eqx.is_array)
    _, unravel = ravel_pytree(params)
    lower, upper = [], []
    for path, leaf in jax.tree_util.tree_leaves_with_path(params):
        key = jax.tree_util.keystr(path)
        name = next((n for n in BOUNDS if f".{n}." in key or key.endswith(f".{n}")), None)
        size = int(np.size(leaf))
        if name is None or not key.endswith(("_unconstrained", ".value")):
            # fixed (paramax.non_trainable) leaf: pinned at its value
            lower += [float(v) for v in np.ravel(leaf)]
            upper += [float(v) for v in np.ravel(leaf)]
            continue
        lo, hi = limits.pop(parameter_key(key), BOUNDS[name])
        lo = np.broadcast_to(np.asarray(lo, dtype=float), (size,))
        hi = np.broadcast_to(np.asarray(hi, dtype=float), (size,))
        if np.any(hi < lo):
            raise ValueError(f"{parameter_key(key)}: upper bound below lower bound")
        if key.endswith("_unconstrained"):  # softplus-positive (noise: above the floor)
            lo = np.array([_softplus_inv(v) for v in lo])
            hi = np.array([_softplus_inv(v) for v in hi])
        lower += [float(v) for v in lo]
        upper += [float(v) for v in hi]
    if limits:
        raise ValueError(f"limits name no trainable parameter: {sorted(limits)}")

    def loss(x, X, y):  # data as arguments: not folded into the program as constants
        return objective(eqx.combine(unravel(x), static), gpx.Dataset(X=X, y=y))

    def flatten(m) -> np.ndarray:
        return np.asarray(ravel_pytree(eqx.partition(m, eqx.is_array)[0])[0], dtype=float)

    return BoundedProblem(
        lower=np.asarray(lower, dtype=float),
        upper=np.asarray(upper, dtype=float),
        value_and_grad=jax.jit(jax.value_and_grad(loss)),
        flatten=flatten,
        rebuild=lambda x: eqx.combine(unravel(jnp.asarray(x)), static),
    )


def minimise(
    model,
    Z: np.ndarray,
    t: np.ndarray,
    max_iters: int,
    gtol: float,
    limits: Mapping[str, tuple[ArrayLike, ArrayLike]] | None = None,
):
    """Minimise the per-point negative mll from ``model`` on ``Z`` ``(m, d)``, ``t``
    ``(m,)`` in the box (``limits`` as in :func:`bounded_problem`): (fitted model, loss)."""
    problem = bounded_problem(model, limits)
    res = problem.solve(problem.start(model), Z, t, max_iters, gtol)
    return problem.rebuild(res.x), float(res.fun)
