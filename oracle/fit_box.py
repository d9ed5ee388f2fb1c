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

from dataclasses import dataclass
from typing import Any

import equinox as eqx
import gpjax as gpx
import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize
from gpjax.parameters import NonNegativeReal, Real
from jax.flatten_util import ravel_pytree

from oracle.kernels import build_kernel
from oracle.preset import Mean

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
        self._unconstrained = jnp.log(jnp.expm1(jnp.asarray(variance - low, dtype=float)))

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
    """The flat, bounded minimisation problem of one model on one data subset."""

    x0: np.ndarray  # (p,) unconstrained parameters
    lower: np.ndarray  # (p,)
    upper: np.ndarray  # (p,)
    value_and_grad: Any  # (p,) -> (loss, (p,) gradient), jitted
    rebuild: Any  # (p,) -> model

    def fun(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        loss, grad = self.value_and_grad(jnp.asarray(x))
        loss, grad = float(loss), np.asarray(grad, dtype=float)
        if not (np.isfinite(loss) and np.all(np.isfinite(grad))):
            return NONFINITE_LOSS, np.zeros_like(grad)
        return loss, grad

    def solve(self, x: np.ndarray, max_iters: int, gtol: float) -> scipy.optimize.OptimizeResult:
        """L-BFGS-B from ``x`` (p,) in the box: stops when the projected gradient's largest
        component is below ``gtol``, after ``max_iters`` iterations, or when a step changes
        the loss by less than 1e-13 relative."""
        return scipy.optimize.minimize(
            self.fun,
            x,
            jac=True,
            method="L-BFGS-B",
            bounds=list(zip(self.lower, self.upper, strict=True)),
            options={"maxiter": max_iters, "gtol": gtol, "ftol": 1e-13, "maxcor": 20},
        )

    def projected_gradient(self, x: np.ndarray) -> np.ndarray:
        """(p,) gradient with components pushing against an active bound set to zero."""
        _, g = self.fun(x)
        at_low = (x <= self.lower + 1e-9 * np.maximum(1.0, np.abs(self.lower))) & (g > 0)
        at_high = (x >= self.upper - 1e-9 * np.maximum(1.0, np.abs(self.upper))) & (g < 0)
        return np.where(at_low | at_high, 0.0, g)


def bounded_problem(model, Z: np.ndarray, t: np.ndarray) -> BoundedProblem:
    """The box-constrained problem of ``model`` on inputs ``Z`` (m, d), targets ``t`` (m,)."""
    data = gpx.Dataset(X=jnp.asarray(Z), y=jnp.asarray(t)[:, None])
    params, static = eqx.partition(model, eqx.is_array)
    flat, unravel = ravel_pytree(params)
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
        lo, hi = BOUNDS[name]
        if key.endswith("_unconstrained"):  # softplus-positive (noise: above the floor)
            lo, hi = _softplus_inv(lo), _softplus_inv(hi)
        lower += [lo] * size
        upper += [hi] * size
    x0 = np.clip(np.asarray(flat, dtype=float), lower, upper)

    def loss(x, X, y):  # data as arguments: not folded into the program as constants
        return objective(eqx.combine(unravel(x), static), gpx.Dataset(X=X, y=y))

    value_and_grad = jax.jit(jax.value_and_grad(loss))
    return BoundedProblem(
        x0=x0,
        lower=np.asarray(lower, dtype=float),
        upper=np.asarray(upper, dtype=float),
        value_and_grad=lambda x: value_and_grad(x, data.X, data.y),
        rebuild=lambda x: eqx.combine(unravel(jnp.asarray(x)), static),
    )


def minimise(model, Z: np.ndarray, t: np.ndarray, max_iters: int, gtol: float):
    """Minimise the per-point negative mll from ``model``: (fitted model, final loss)."""
    problem = bounded_problem(model, Z, t)
    res = problem.solve(problem.x0, max_iters, gtol)
    return problem.rebuild(res.x), float(res.fun)
