"""Simulation-based calibration (Talts et al. 2018) of the classification sampler.

Each replication draws a latent function from the prior at fixed inputs (u training
inputs, 2 more), labels from it, and posterior draws given the labels with the sampler
under test (or a negative control); the rank of each true statistic among its thinned
draws is uniform on 0..draws exactly when the draws come from the posterior. A
thousand replications run at once (``jax.vmap`` over tasks).

Statistics: the latent (class 0's for multiclass) at 3 training and 2 non-training
inputs, the probability of class 0 at one non-training input (for binary, of class 1)
and the training log-likelihood.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from scipy.stats import chisquare

from udora.oracle.classification.link import label_loglik
from udora.oracle.classification.sampler import log_density, sample_chains

STATISTICS = ("f_train_0", "f_train_1", "f_train_2", "f_new_0", "f_new_1", "p_new", "loglik")


def problem(seed: int, u: int, d: int = 2, variance: float = 2.0, lengthscale: float = 1.0):
    """Fixed inputs: ``u`` training and 2 non-training points in d dimensions, their RBF
    Gram (u + 2, u + 2), the training block's factor and the non-training conditionals
    (``A = L^-1 K_U,new`` (u, 2), ``s`` (2,))."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((u + 2, d))
    r2 = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1) / lengthscale**2
    K = variance * np.exp(-r2 / 2) + 1e-9 * np.eye(u + 2)
    L = np.linalg.cholesky(K[:u, :u])
    A = np.linalg.solve(L, K[:u, u:])
    s = np.sqrt(np.diag(K[u:, u:]) - (A * A).sum(0))
    return K, L, A, s


def _probs(f: jax.Array) -> jax.Array:
    """Class probabilities (..., C) of latent values (..., L)."""
    if f.shape[-1] == 1:
        p1 = jax.scipy.special.ndtr(f[..., 0])
        return jnp.stack([1.0 - p1, p1], axis=-1)
    return jax.nn.softmax(f, axis=-1)


def simulate(key, K, u: int, n_classes: int, labels_per_input: int):
    """A prior draw of the latent at all u + 2 inputs (u + 2, L) and the training label
    counts (u, C)."""
    Ld = 1 if n_classes == 2 else n_classes
    k_f, k_y = jax.random.split(key)
    f = jnp.linalg.cholesky(K) @ jax.random.normal(k_f, (K.shape[0], Ld))
    p = _probs(f[:u])  # (u, C)
    y = jax.random.categorical(k_y, jnp.log(p)[:, None, :], shape=(u, labels_per_input))
    counts = jnp.sum(jax.nn.one_hot(y, n_classes), axis=1)
    return f, counts


def statistics(f_train, f_new, counts, binary: bool):
    """The SBC statistics of one latent function: (len(STATISTICS),)."""
    p = _probs(f_new[1:2])[0]
    p_stat = p[1] if binary else p[0]
    return jnp.concatenate(
        [f_train[:3, 0], f_new[:, 0], p_stat[None], label_loglik(f_train, counts)[None]]
    )


def run(
    n_rep: int,
    n_classes: int,
    *,
    seed: int = 0,
    u: int = 20,
    d: int = 2,
    labels_per_input: int = 2,
    draws: int = 99,
    thin: int = 4,
    warmup: int = 300,
    variance: float = 2.0,
    sampler_scale: float = 1.0,
    laplace: bool = False,
) -> dict[str, np.ndarray]:
    """Ranks (n_rep,) of each statistic among ``draws`` thinned posterior draws, at ``u``
    training inputs in ``d`` dimensions with ``labels_per_input`` labels each.

    ``sampler_scale`` multiplies the prior's amplitude inside the sampler only (2: the
    posterior with the amplitude doubled, a negative control); ``laplace`` replaces the
    sampler by draws from the Laplace approximation (the other negative control).
    """
    K, L, A, s = problem(seed, u, d=d, variance=variance)
    binary = n_classes == 2
    Ld = 1 if binary else n_classes
    Lj, Aj, sj = jnp.asarray(L), jnp.asarray(A), jnp.asarray(s)
    mean = jnp.zeros(Ld)

    def one(key):
        k_sim, k_post, k_new = jax.random.split(key, 3)
        f, counts = simulate(k_sim, jnp.asarray(K), u, n_classes, labels_per_input)
        if laplace:
            v = _laplace_draws(k_post, Lj, mean, counts, draws)
        else:
            init = jax.random.normal(k_post, (1, u, Ld))
            _, _, pos, _, _ = sample_chains(
                k_post, sampler_scale * Lj, mean, counts, init, warmup, draws * thin
            )
            v = pos[0, ::thin] * sampler_scale  # whitened in the sampler's own prior
        f_train = jnp.einsum("ij,kjl->kil", Lj, v)  # (draws, u, L)
        mu = jnp.einsum("ij,kil->kjl", Aj, v)  # (draws, 2, L)
        eps = jax.random.normal(k_new, mu.shape)
        f_new = mu + sj[None, :, None] * eps
        truth = statistics(f[:u], f[u:], counts, binary)
        drawn = jax.vmap(lambda a, b: statistics(a, b, counts, binary))(f_train, f_new)
        return jnp.sum(drawn < truth[None, :], axis=0)

    keys = jax.random.split(jax.random.PRNGKey(seed), n_rep)
    with jax.enable_x64(True):
        ranks = np.asarray(jax.jit(jax.vmap(one))(keys))
    return {name: ranks[:, j] for j, name in enumerate(STATISTICS)}


def _laplace_draws(key, L, mean, counts, draws: int):
    """Draws (draws, u, L) of the whitened latent from the Laplace approximation: the
    mode by Newton's method on the log density, the covariance its negative inverse
    Hessian (computed by JAX, dense)."""
    logdensity = log_density(L, mean, counts)
    shape = (L.shape[0], mean.shape[0])
    flat = lambda x: logdensity(x.reshape(shape))  # noqa: E731
    grad, hess = jax.grad(flat), jax.hessian(flat)

    def newton(x, _):
        return x - jnp.linalg.solve(hess(x), grad(x)), None

    mode, _ = jax.lax.scan(newton, jnp.zeros(shape[0] * shape[1]), None, length=30)
    chol = jnp.linalg.cholesky(jnp.linalg.inv(-hess(mode)))
    z = jax.random.normal(key, (draws, mode.shape[0]))
    return (mode[None, :] + z @ chol.T).reshape(draws, *shape)


def p_values(ranks: dict[str, np.ndarray], draws: int = 99, bins: int = 20) -> dict[str, float]:
    """Chi-squared p-value of each statistic's ranks (0..draws) in ``bins`` equal bins."""
    out = {}
    for name, r in ranks.items():
        counts = np.bincount(r * bins // (draws + 1), minlength=bins)
        out[name] = float(chisquare(counts).pvalue)
    return out
