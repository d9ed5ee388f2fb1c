"""GP prior sampling and the exact posterior with known heteroscedastic noise.

docs/design.md, "Latent function and posterior".

All functions take standardised inputs ``Z`` and work in float64 (they enter
``jax.enable_x64(True)`` themselves); the kernel is a GPJax kernel built by
:func:`oracle.kernels.build_kernel` inside the same context.

Posterior, with ``A = K_SS + diag(sigma_eps(X_S)^2) = L L^T``:

    m_S(x) = m + k_xS A^-1 (y_S - m),      s2_f(x) = k(x, x) - ||L^-1 k_Sx||^2.

Evaluation points are processed in fixed-size chunks inside one compiled ``lax.map``,
so memory is O(chunk * n) whatever the number of evaluation points.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np

# Relative jitters tried, in order, until a Cholesky factor is finite.
JITTERS = (0.0, 1e-12, 1e-11, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3)
# Memory budget of one evaluation chunk's cross-covariance work, in float64 entries.
_CHUNK_ENTRIES = 2**25


def gram(kernel, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Cross-covariance ``k(A, B)``: (N, d), (M, d) -> (N, M), float64."""
    with jax.enable_x64(True):
        return np.asarray(_cross(kernel, jnp.asarray(A), jnp.asarray(B)))


@jax.jit
def _cross(kernel, A, B):
    return kernel.cross_covariance(A, B)


@jax.jit
def _cholesky(K, jitter):
    scale = jnp.mean(jnp.diag(K))
    return jnp.linalg.cholesky(K + jitter * scale * jnp.eye(K.shape[0], dtype=K.dtype))


def cholesky_with_jitter(K: np.ndarray) -> tuple[np.ndarray, float]:
    """Lower Cholesky factor of ``K + j * mean(diag K) * I`` with the smallest working j.

    Args:
        K: (n, n) symmetric positive semi-definite matrix.

    Returns:
        ``(L, j)``: L (n, n) and the relative jitter ``j`` in :data:`JITTERS` that worked.
    """
    with jax.enable_x64(True):
        Kj = jnp.asarray(K, dtype=jnp.float64)
        for j in JITTERS:
            L = _cholesky(Kj, j)
            if bool(jnp.all(jnp.isfinite(L))):
                return np.asarray(L), j
    raise np.linalg.LinAlgError(
        f"Cholesky failed for every jitter up to {JITTERS[-1]} x mean diagonal"
    )


def sample_joint(kernel, Z: np.ndarray, mean: float, z: np.ndarray) -> tuple[np.ndarray, float]:
    """Joint prior draw ``f = m + L z`` at ``Z`` (N, d) from standard normals ``z`` (N,).

    Returns ``(f (N,), jitter)``.
    """
    L, jitter = cholesky_with_jitter(gram(kernel, Z, Z))
    return mean + L @ z, jitter


@dataclass(frozen=True)
class Conditioner:
    """A GP conditioned on observations at ``Z_S`` with independent Gaussian noise.

    ``chol`` (n, n) factors ``K_SS + diag(noise_var)``; ``alpha`` (n,) = A^-1 (y_S - m).
    """

    kernel: object
    Z_S: np.ndarray
    chol: np.ndarray
    alpha: np.ndarray
    mean: float
    jitter: float

    @classmethod
    def fit(
        cls, kernel, Z_S: np.ndarray, y_S: np.ndarray, noise_var: np.ndarray, mean: float
    ) -> Conditioner:
        """Condition on ``y_S`` (n,) at ``Z_S`` (n, d) with noise variances ``noise_var`` (n,).

        Zero noise is allowed (noise-free conditioning, e.g. on joint prior draws); the
        smallest working jitter is then added and reported.
        """
        K = gram(kernel, Z_S, Z_S) + np.diag(np.asarray(noise_var, dtype=np.float64))
        L, jitter = cholesky_with_jitter(K)
        resid = np.asarray(y_S, dtype=np.float64) - mean
        with jax.enable_x64(True):
            alpha = jsl.cho_solve((jnp.asarray(L), True), jnp.asarray(resid))
        return cls(kernel, np.asarray(Z_S), L, np.asarray(alpha), float(mean), jitter)

    def predict(self, Z: np.ndarray, chunk: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and latent variance at ``Z`` (M, d); returns two (M,) arrays.

        Variances are clipped at 0 (round-off can make them slightly negative).
        """
        Z = np.asarray(Z, dtype=np.float64)
        m, d = Z.shape
        n = self.Z_S.shape[0]
        if chunk is None:
            chunk = int(np.clip(_CHUNK_ENTRIES // (n * max(d, 1)), 256, 4096))
        n_chunks = -(-m // chunk)
        padded = np.zeros((n_chunks * chunk, d))
        padded[:m] = Z
        with jax.enable_x64(True):
            mu, var = _predict_chunks(
                self.kernel,
                jnp.asarray(self.Z_S),
                jnp.asarray(self.chol),
                jnp.asarray(self.alpha),
                jnp.asarray(padded).reshape(n_chunks, chunk, d),
            )
            mu = np.asarray(mu).reshape(-1)[:m] + self.mean
            var = np.asarray(var).reshape(-1)[:m]
        return mu, np.maximum(var, 0.0)


@jax.jit
def _predict_chunks(kernel, Z_S, L, alpha, Zc):
    def one(Zb):
        Kxs = kernel.cross_covariance(Zb, Z_S)  # (chunk, n)
        V = jsl.solve_triangular(L, Kxs.T, lower=True)  # (n, chunk)
        return Kxs @ alpha, jax.vmap(kernel)(Zb, Zb) - jnp.sum(V * V, axis=0)

    return jax.lax.map(one, Zc)


def sample_conditional_marginals(
    kernel, Z: np.ndarray, Z_S: np.ndarray, f_S: np.ndarray, mean: float, z: np.ndarray
) -> tuple[np.ndarray, float]:
    """Draw ``f`` at ``Z`` (M, d) from the exact marginals ``f(x) | f(Z_S) = f_S``.

    Each point is drawn independently from ``N(m + k_xS K_SS^-1 (f_S - m), k_xx - ...)``
    with standard normals ``z`` (M,). Returns ``(f (M,), jitter of K_SS)``.
    """
    cond = Conditioner.fit(kernel, Z_S, f_S, np.zeros(Z_S.shape[0]), mean)
    mu, var = cond.predict(Z)
    return mu + np.sqrt(var) * z, cond.jitter


def sample_posterior_paths(
    kernel,
    Z: np.ndarray,
    train_idx: np.ndarray,
    y_S: np.ndarray,
    noise_var_S: np.ndarray,
    mean: float,
    z_prior: np.ndarray,
    z_noise: np.ndarray,
) -> tuple[np.ndarray, float]:
    """Joint draws of ``f | S`` over all of ``Z`` by pathwise conditioning (Matheron's rule).

    With a joint prior draw ``f0 = m + L z_prior`` over ``Z`` (N, d) and noise
    ``e = sigma_S z_noise`` at the training points ``Z[train_idx]`` (n of them, repeats
    allowed), ``g = f0 + K_{Z S} A^-1 (y_S - f0_S - e)``, ``A = K_SS + diag(noise_var_S)``,
    is an exact draw from the posterior given ``y_S`` (Wilson et al., 2020). No posterior
    covariance is factored: only the prior Gram of ``Z`` (N x N) and ``A`` (n x n).

    Args:
        kernel: a GPJax kernel built inside ``jax.enable_x64(True)``.
        Z: (N, d) standardised inputs; train_idx: (n,) indices into ``Z``.
        y_S: (n,) observed targets; noise_var_S: (n,) their noise variances.
        mean: the prior's constant mean.
        z_prior: (N, M) and z_noise: (n, M) standard normals, one column per draw.

    Returns:
        ``(G (M, N), jitter of the prior Gram)``.
    """
    idx = np.asarray(train_idx)
    L, jitter = cholesky_with_jitter(gram(kernel, Z, Z))
    f0 = mean + L @ z_prior  # (N, M)
    cond = Conditioner.fit(kernel, Z[idx], y_S, noise_var_S, mean)
    resid = (np.asarray(y_S, dtype=np.float64) - mean)[:, None] - (f0[idx] - mean)
    resid -= np.sqrt(np.asarray(noise_var_S, dtype=np.float64))[:, None] * z_noise
    with jax.enable_x64(True):
        weights = np.asarray(jsl.cho_solve((jnp.asarray(cond.chol), True), jnp.asarray(resid)))
    return (f0 + gram(kernel, Z, Z[idx]) @ weights).T, jitter
