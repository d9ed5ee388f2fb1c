"""Gaussian posteriors over a softmax head's weights: curvature, draws and calibration.

The logits of a softmax head are linear in its weights, ``f(x) = W^T phi(x)`` with ``W``
``(P, C)`` (:mod:`methods.nn.last_layer`). Its weights are flattened row-major, ``w =
vec(W)`` with index ``p C + c`` (as ``jax.flatten_util.ravel_pytree`` does), and a
last-layer posterior moves them in the span of a basis ``B`` ``(PC, J)``,
``w = w_MAP + B a``: the identity for last-layer Laplace, the function-space prior's
pull-back ``S (x) I_C`` for FSP-Laplace. With the cross-entropy GGN of the fit split,

    G = sum_i (phi_i phi_i^T) (x) (diag(p_i) - p_i p_i^T),     p_i = softmax(f_MAP(x_i)),

(laplax ``create_ggn_mv`` with its cross-entropy loss Hessian at ``W_MAP``, dense with
``create_full_curvature``) and ``G_a = B^T G B``, the posterior of ``a`` at prior
precision ``lambda`` and temperature ``T`` is

    a ~ N(0, (G_a / T + lambda I)^-1) = N(0, U diag(1 / (g / T + lambda)) U^T),

with ``G_a = U diag(g) U^T`` factored once, so every grid point of the calibration reuses
one eigendecomposition (laplax's ``set_posterior_fn`` would factor the ``J x J`` matrix at
each of them; here ``J = PC`` reaches 1690 for 26 classes). K draws share fixed standard
normals ``z_k`` (``K, J``) in the coordinates of ``a``, and each draw is their image under
the covariance's symmetric square root, ``a_k = U diag(1 / sqrt(g / T + lambda)) U^T z_k``:
unlike ``U (z_k / sqrt(...))`` it does not depend on the basis the eigendecomposition
picks for a repeated eigenvalue, and ``G`` always has one (softmax's shift invariance
gives it P null directions), which another CPU or LAPACK picks otherwise. The calibration
objective is the validation log loss of the K-draw predictive,
``-(1/|V|) sum_i log((1/K) sum_k softmax(f_k(x_i))_{y_i})``, with the same ``z`` at every
grid point (common random numbers: the objective is smooth in ``lambda`` and ``T``), and
the prediction averages those K draws' probabilities.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from laplax.curv.full import create_full_curvature
from laplax.curv.ggn import create_ggn_mv


def _softmax_head(input: jax.Array, params: dict[str, jax.Array]) -> jax.Array:
    """laplax model function: the logits ``W^T phi`` ``(C,)`` of one ``phi`` ``(P,)``."""
    return input @ params["W"]


@jax.jit
def softmax_head_ggn(phi: jax.Array, W: jax.Array) -> jax.Array:
    """Dense cross-entropy GGN ``(PC, PC)`` of a softmax head at ``W`` ``(P, C)`` over the
    rows of ``Phi`` ``(n, P)`` (summed over the rows; module docstring)."""
    data = {"input": phi, "target": jnp.zeros(phi.shape[0], jnp.int32)}  # unused by the GGN
    mv = create_ggn_mv(_softmax_head, {"W": W}, data, loss_fn="cross_entropy")
    return create_full_curvature(mv, {"W": W})


@jax.jit
def _val_log_loss(E, logits_v, y_v, z, g, prior_prec, temperature) -> jax.Array:
    """Validation log loss of the K-draw predictive (module docstring)."""
    step = z / jnp.sqrt(g / temperature + prior_prec)[None, :]  # (K, J)
    logits = logits_v[None] + jnp.einsum("kj,jvc->kvc", step, E)
    log_p = jax.nn.log_softmax(logits, axis=-1)
    at_y = jnp.take_along_axis(log_p, y_v[None, :, None], axis=-1)[..., 0]  # (K, V)
    return -jnp.mean(jax.scipy.special.logsumexp(at_y, axis=0) - jnp.log(z.shape[0]))


@dataclass(frozen=True)
class SoftmaxHeadPosterior:
    """The factored posterior of ``a`` and what its calibration and draws need.

    ``W_map`` ``(P, C)``; ``basis`` ``(PC, J)`` (None: the identity); ``g`` ``(J,)`` and
    ``U`` ``(J, J)`` the eigenpairs of ``G_a``; ``z`` ``(K, J)`` the fixed standard
    normals in the eigenbasis, ``z_a U`` for the normals ``z_a`` given to :meth:`build` in
    the coordinates of ``a`` (module docstring). Float64 throughout (build and use inside
    ``jax.enable_x64``).
    """

    W_map: np.ndarray
    basis: np.ndarray | None
    g: np.ndarray
    U: np.ndarray
    z: np.ndarray

    @classmethod
    def build(
        cls,
        phi_fit: np.ndarray,
        W_map: np.ndarray,
        z: np.ndarray,
        basis: np.ndarray | None = None,
    ) -> SoftmaxHeadPosterior:
        """Curvature from ``Phi`` ``(n, P)`` of the fit split at ``W_map`` ``(P, C)``,
        projected on ``basis`` ``(PC, J)`` and factored; ``z`` ``(K, J)`` standard normals
        in the coordinates of ``a``."""
        W_map = np.asarray(W_map, np.float64)
        G = np.asarray(softmax_head_ggn(jnp.asarray(phi_fit, jnp.float64), jnp.asarray(W_map)))
        if basis is not None:
            G = basis.T @ G @ basis
        g, U = np.linalg.eigh(0.5 * (G + G.T))
        # the normals in the eigenbasis: every use maps them back through U^T, so a draw
        # is U D U^T z, the same whichever basis eigh picked for a repeated eigenvalue
        return cls(W_map, basis, np.maximum(g, 0.0), U, np.asarray(z, np.float64) @ U)

    def _directions(self) -> np.ndarray:
        """``(PC, J)``: the weight change of each eigendirection of ``a``."""
        return self.U if self.basis is None else self.basis @ self.U

    def val_log_loss(self, phi_v: np.ndarray, y_v: np.ndarray) -> Callable[[float, float], float]:
        """``(lambda, T) -> `` validation log loss at ``Phi_V`` ``(v, P)``, labels ``(v,)``."""
        P, C = self.W_map.shape
        D = self._directions().T.reshape(-1, P, C)  # (J, P, C)
        E = jnp.asarray(np.einsum("vp,jpc->jvc", phi_v, D))
        logits_v = jnp.asarray(phi_v @ self.W_map)
        y = jnp.asarray(y_v, jnp.int32)
        z, g = jnp.asarray(self.z), jnp.asarray(self.g)

        def objective(prior_prec: float, temperature: float) -> float:
            return _val_log_loss(E, logits_v, y, z, g, prior_prec, temperature)

        return objective

    def draws(self, prior_prec: float, temperature: float) -> np.ndarray:
        """The K sampled heads ``(K, P, C)``:
        ``W_MAP + reshape(B U diag(1 / sqrt(g / T + lambda)) U^T z_k)``."""
        step = self.z / np.sqrt(self.g / temperature + prior_prec)[None, :]
        P, C = self.W_map.shape
        return self.W_map[None] + (step @ self._directions().T).reshape(-1, P, C)
