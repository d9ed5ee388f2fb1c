"""Random features of a preset's kernel: ``E[phi(x)^T phi(y)] = k(x, y)``, component by component.

docs/design.md, "Ground-truth families". For a kernel component with spec ``c`` (in the
units of :mod:`oracle.kernels`) and ``D`` features, :func:`component_features` draws the
random parameters once and returns the map ``phi: Z (N, d) -> (N, D)``:

- stationary components, ``k = variance * rho(x - y)``: Bochner's theorem,
  ``phi_j(x) = sqrt(2 variance / D) cos(omega_j^T x + b_j)``, ``b_j ~ U(0, 2 pi)`` and
  ``omega_j`` from the spectral measure of ``rho`` in lengthscale units ``u = x / l``:
  ``rbf`` a standard normal; ``matern12/32/52`` a multivariate Student t with ``2 nu``
  degrees of freedom (``g sqrt(2 nu / chi2_{2 nu})``); ``rational_quadratic`` a normal
  scaled by ``sqrt(tau)``, ``tau ~ Gamma(alpha, rate alpha)`` (the kernel is that scale
  mixture of squared exponentials); ``powered_exponential`` with power 1 (``exp(-r)``, the
  Matern-1/2) or 2 (``exp(-r^2)``, a squared exponential at ``l / sqrt 2``);
  ``periodic`` a squared exponential on ``(cos(2 pi x_j / p), sin(2 pi x_j / p))`` at
  lengthscale ``2 l_j``, since ``sin^2(pi t / p)`` is a quarter of that pair's squared
  distance;
- ``linear``: the exact finite basis ``phi(x) = sqrt(variance) x`` (d features, no draw);
- ``arccosine`` of order n: ``phi_j(x) = sqrt(2 variance / D) H(g_j^T u)(g_j^T u)^n`` with
  ``u = (sqrt(w) x, sqrt(b))`` and ``g_j`` standard normal (Cho & Saul, 2009: the kernel is
  twice the expectation of that product).

Everything is float64 numpy; the parameters come from the Generator passed in.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from udora.errors import UserError
from udora.oracle.kernels import parse_kernel

FeatureMap = Callable[[np.ndarray], np.ndarray]

_MATERN_NU = {"matern12": 0.5, "matern32": 1.5, "matern52": 2.5}


def _lengthscales(spec, d: int) -> np.ndarray:
    ls = np.asarray(spec.lengthscales(), dtype=np.float64)
    return np.broadcast_to(ls, (d,)) if ls.size == 1 else ls


def _cosines(omega: np.ndarray, variance: float, rng: np.random.Generator) -> FeatureMap:
    """``sqrt(2 variance / D) cos(u omega^T + b)`` of inputs already in lengthscale units."""
    count = omega.shape[0]
    phase = rng.uniform(0.0, 2.0 * np.pi, count)
    scale = np.sqrt(2.0 * variance / count)
    return lambda U: scale * np.cos(U @ omega.T + phase)


def _spectral(kind: str, spec, count: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` frequencies (count, dim) of the unit-lengthscale kernel ``kind``."""
    g = rng.standard_normal((count, dim))
    if kind == "rbf":
        return g
    if kind in _MATERN_NU:
        dof = 2.0 * _MATERN_NU[kind]
        return g * np.sqrt(dof / rng.chisquare(dof, count))[:, None]
    if kind == "rational_quadratic":
        tau = rng.gamma(spec.alpha, 1.0 / spec.alpha, count)
        return g * np.sqrt(tau)[:, None]
    if kind == "powered_exponential":
        if spec.power == 2.0:  # exp(-r^2) = exp(-(sqrt(2) r)^2 / 2)
            return g * np.sqrt(2.0)
        if spec.power == 1.0:  # exp(-r): the Matern-1/2's t with 1 degree of freedom
            return g / np.sqrt(rng.chisquare(1.0, count))[:, None]
        raise UserError(f"powered_exponential: random features need power 1 or 2, got {spec.power}")
    raise UserError(f"no spectral measure for kernel component {kind!r}")


def component_features(spec, d: int, count: int, rng: np.random.Generator) -> FeatureMap:
    """The feature map ``Z (N, d) -> (N, D)`` of one parsed kernel component (module doc);
    ``count`` random features (``linear``: its d exact ones)."""
    kind = spec.type
    if kind == "linear":
        return lambda Z: np.sqrt(spec.variance) * np.asarray(Z, dtype=np.float64)
    if kind == "arccosine":
        w = np.broadcast_to(np.asarray(spec.weight_variance, dtype=np.float64), (d,))
        G = rng.standard_normal((count, d + 1))
        scale, n = np.sqrt(2.0 * spec.variance / count), spec.order

        def arc(Z: np.ndarray) -> np.ndarray:
            Z = np.asarray(Z, dtype=np.float64)
            U = np.hstack([Z * np.sqrt(w), np.full((Z.shape[0], 1), np.sqrt(spec.bias_variance))])
            proj = U @ G.T
            return scale * np.where(proj > 0.0, proj**n, 0.0)

        return arc
    ls = _lengthscales(spec, d)
    if kind == "periodic":
        omega = _spectral("rbf", spec, count, 2 * d, rng)
        wide = np.repeat(2.0 * ls, 2)  # (cos, sin) of dimension j share lengthscale 2 l_j
        to_circle = 2.0 * np.pi / spec.period

        def circle(Z: np.ndarray) -> np.ndarray:
            A = np.asarray(Z, dtype=np.float64) * to_circle
            return np.stack([np.cos(A), np.sin(A)], axis=2).reshape(A.shape[0], -1)

        cos = _cosines(omega, spec.variance, rng)
        return lambda Z: cos(circle(Z) / wide)
    omega = _spectral(kind, spec, count, d, rng)
    cos = _cosines(omega, spec.variance, rng)
    return lambda Z: cos(np.asarray(Z, dtype=np.float64) / ls)


def kernel_features(
    components: list[dict], d: int, count: int, rng: np.random.Generator
) -> FeatureMap:
    """The features of a sum of kernel components: each component's, side by side
    (:func:`component_features`, ``count`` each), so ``E[Phi Phi^T]`` is the kernel's Gram.

    Args:
        components: kernel component dicts as in a preset (validated here).
        d: input dimension; count: random features per random component.
        rng: draws every component's parameters, in component order.

    Returns:
        ``phi``: (N, d) standardised inputs -> (N, D_total) features, float64.
    """
    maps = [component_features(spec, d, count, rng) for spec in parse_kernel(components, d)]
    return lambda Z: np.hstack([m(Z) for m in maps])
