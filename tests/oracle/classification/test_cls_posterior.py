"""The sampled targets against exact answers.

- Tiny problems (a few inputs with 20-40 repeated labels each, so the posterior is far
  from the prior): the posterior predictive and both AU targets at every pool point
  against numerical integration of the exact posterior on a dense grid (trapezoid rule;
  no code of the oracle is used), within 4 of the oracle's own Monte Carlo standard
  errors plus 2e-4.
- The cross-check sampler: elliptical slice sampling agrees with NUTS.
- "Risk = AU + EU": labels simulated from posterior draws (the latent at each pool point
  drawn given each posterior draw, a label drawn from it), their average log loss and
  Brier score of a fixed ``q`` against ``AU + EU(q)`` from the stored moments.
"""

import numpy as np
import pytest
from scipy import special
from scipy.integrate import trapezoid

from udora.oracle.classification.posterior import geometry, sample_posterior
from udora.oracle.classification.preset import Sampler
from udora.oracle.classification.targets import entropy

KERNEL = ({"type": "rbf", "variance": 2.0, "lengthscale": 1.0},)
FAST = Sampler(chains=4, warmup=300, draws=1000, extend=1000, max_draws=2000, batches=10)


def _rbf(Z):
    r2 = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    return 2.0 * np.exp(-r2 / 2)


def _within(estimate, exact, se, what):
    err = np.abs(np.asarray(estimate) - np.asarray(exact))
    assert np.all(err <= 4 * np.asarray(se) + 2e-4), (what, estimate, exact, se)


@pytest.mark.slow  # ~10-25 s
def test_binary_targets_match_the_exact_posterior(x64):
    Z = np.array([[-1.0], [1.0], [0.3]])
    unique = np.array([0, 1])
    counts = np.array([[6.0, 24.0], [21.0, 9.0]])  # (negatives, positives) per input
    mean = 0.3
    post = sample_posterior(geometry(KERNEL, (mean,), 1.0, Z, unique), counts, FAST, seed=0)
    m = post.moments

    # exact: a 3-d grid over (f0, f1, f2), prior N(mean, K) times the probit likelihood
    K = _rbf(Z)
    g01 = np.linspace(-3.5, 4.5, 121)
    g2 = np.linspace(-9.0, 9.0, 241)
    F0, F1, F2 = np.meshgrid(g01, g01, g2, indexing="ij")
    F = np.stack([F0, F1, F2], axis=-1) - mean
    logp = -0.5 * np.einsum("...i,ij,...j->...", F, np.linalg.inv(K), F)
    for j, (neg, pos) in enumerate(counts):
        f = (F0, F1)[j]
        logp += pos * special.log_ndtr(f) + neg * special.log_ndtr(-f)
    w = np.exp(logp - logp.max())

    def expect(values):
        num = trapezoid(trapezoid(trapezoid(values * w, g2), g01), g01)
        return num / trapezoid(trapezoid(trapezoid(w, g2), g01), g01)

    ses = m.risks(m.prob)
    for j, f in enumerate((F0, F1, F2)):
        p1 = special.ndtr(f)
        _within(m.prob[j, 1], expect(p1), m.standard_error(m.prob_batches)[j, 1], f"p at {j}")
        h = entropy(np.stack([1 - p1, p1], axis=-1))
        _within(m.entropy[j], expect(h), ses["au_log_se"][j], f"E H at {j}")
        sq = p1**2 + (1 - p1) ** 2
        _within(m.square[j], expect(sq), ses["au_brier_se"][j], f"E |p|^2 at {j}")
    assert post.record["failures"] == []


@pytest.mark.slow
def test_three_class_targets_match_the_exact_posterior(x64):
    """One training input with 40 labels and one input far from it (its posterior is
    the prior: the softmax of three independent N(m_c, 2) latents)."""
    Z = np.array([[0.0], [12.0]])
    unique = np.array([0])
    counts = np.array([[20.0, 12.0, 8.0]])
    mean = (0.2, 0.0, -0.3)
    post = sample_posterior(geometry(KERNEL, mean, 1.0, Z, unique), counts, FAST, seed=1)
    m = post.moments

    g = np.linspace(-7.5, 7.5, 121)
    F = np.stack(np.meshgrid(g, g, g, indexing="ij"), axis=-1) + np.asarray(mean)
    logprior = -0.25 * np.sum((F - np.asarray(mean)) ** 2, axis=-1)  # variance 2 each
    p = special.softmax(F, axis=-1)
    for which, logw in ((0, logprior + np.sum(counts[0] * np.log(p), axis=-1)), (1, logprior)):
        w = np.exp(logw - logw.max())

        def expect(values, w=w):
            return trapezoid(trapezoid(trapezoid(values * w, g), g), g) / trapezoid(
                trapezoid(trapezoid(w, g), g), g
            )

        se = m.standard_error(m.prob_batches)[which]
        _within(m.prob[which], [expect(p[..., c]) for c in range(3)], se, f"p at {which}")
        se_h = m.standard_error(m.entropy_batches)[which]
        _within(m.entropy[which], expect(entropy(p)), se_h, f"E H at {which}")
        se_q = m.standard_error(m.square_batches)[which]
        _within(m.square[which], expect(np.sum(p * p, axis=-1)), se_q, f"E |p|^2 at {which}")


@pytest.mark.slow
@pytest.mark.parametrize("n_classes", [2, 3], ids=["binary", "three-class"])
def test_risk_is_au_plus_eu_by_simulating_labels(x64, n_classes):
    rng = np.random.default_rng(5)
    Z = rng.standard_normal((40, 2))
    unique = np.arange(15)
    Ld = 1 if n_classes == 2 else n_classes
    counts = rng.integers(0, 4, size=(15, n_classes)).astype(float)
    wide = ({"type": "rbf", "variance": 3.0, "lengthscale": 1.0},)  # sd 1.7 far from data
    geo = geometry(wide, (0.0,) * Ld, 1.0, Z, unique)
    assert 0 < np.sum(geo.s > 1.5) < 40  # both of the probit entropy's integration rules
    post = sample_posterior(geo, counts, FAST, seed=2)
    m = post.moments
    q = 0.7 * m.prob[:, ::-1] + 0.3 / n_classes  # a prediction unlike the posterior's

    # simulate: every posterior draw, the latent at each pool point given it, a label
    v = post.chains.positions.reshape(-1, *post.chains.positions.shape[2:])
    mu = geo.mean[None, None, :] + np.einsum("un,kul->knl", geo.A, v)  # (M, N, L)
    f = mu + geo.s[None, :, None] * rng.standard_normal(mu.shape)
    if Ld == 1:
        p1 = special.ndtr(f[..., 0])
        probs = np.stack([1 - p1, p1], axis=-1)
    else:
        probs = special.softmax(f, axis=-1)
    u = rng.random(probs.shape[:2])
    y = np.minimum((u[..., None] > np.cumsum(probs, axis=-1)).sum(-1), n_classes - 1)
    log_loss = -np.log(q[np.arange(q.shape[0])[None, :], y])  # (M, N)
    onehot = np.eye(n_classes)[y]
    brier = np.sum((onehot - q[None]) ** 2, axis=-1)
    r = m.risks(q)
    M = y.shape[0]
    for loss, au, eu in ((log_loss, "au_log", "eu_log"), (brier, "au_brier", "eu_brier")):
        sim = loss.mean(axis=0)  # (N,)
        sim_se = loss.std(axis=0) / np.sqrt(M)
        target = r[au] + r[eu]
        target_se = np.hypot(r[f"{au}_se"], r[f"{eu}_se"])
        z = (sim - target) / np.hypot(sim_se, target_se)
        assert np.max(np.abs(z)) < 4.5, (au, z)
        assert abs(z.mean() * np.sqrt(z.size)) < 4.0, (au, z.mean())  # no shared bias


@pytest.mark.slow
@pytest.mark.parametrize("n_classes", [2, 3], ids=["binary", "three-class"])
def test_nuts_agrees_with_elliptical_slice_sampling(x64, n_classes):
    """The cross-check sampler: blackjax's elliptical slice sampler on the same whitened
    posterior (prior N(0, I), the label likelihood), 4 chains of 20000 draws; its pool
    moments (the same per-draw integrals, batch-means errors) against NUTS's."""
    import blackjax
    import jax
    import jax.numpy as jnp

    from udora.oracle.classification.link import label_loglik
    from udora.oracle.classification.posterior import batch_means, pool_draws

    rng = np.random.default_rng(7)
    Z = rng.standard_normal((30, 2))
    unique = np.arange(12)
    Ld = 1 if n_classes == 2 else n_classes
    counts = rng.integers(0, 5, size=(12, n_classes)).astype(float)
    geo = geometry(KERNEL, (0.1,) * Ld, 1.0, Z, unique)
    nuts = sample_posterior(geo, counts, FAST, seed=3).moments

    L, mean, c = jnp.asarray(geo.L), jnp.asarray(geo.mean), jnp.asarray(counts)
    D = 12 * Ld
    ess = blackjax.elliptical_slice(
        lambda x: label_loglik(mean[None, :] + L @ x.reshape(12, Ld), c),
        mean=jnp.zeros(D),
        cov=jnp.eye(D),
    )

    def chain(key):
        k0, k1 = jax.random.split(key)
        state = ess.init(jax.random.normal(k0, (D,)))

        def one(s, k):
            s, _ = ess.step(k, s)
            return s, s.position

        _, xs = jax.lax.scan(one, state, jax.random.split(k1, 20_000))
        return xs[2_000::4].reshape(-1, 12, Ld)  # burn-in dropped, thinned: 4500 draws

    draws = np.asarray(jax.jit(jax.vmap(chain))(jax.random.split(jax.random.PRNGKey(11), 4)))
    prob, ent, square = pool_draws(draws, geo, n_classes, jax.random.PRNGKey(12), 32)
    for name, ours, theirs in (
        ("prob", nuts.prob, prob),
        ("entropy", nuts.entropy, ent),
        ("square", nuts.square, square),
    ):
        their_b = batch_means(theirs, 10)
        se = np.hypot(
            nuts.standard_error(getattr(nuts, f"{name}_batches")),
            their_b.std(axis=0, ddof=1) / np.sqrt(their_b.shape[0]),
        )
        z = (ours - theirs.mean(axis=(0, 1))) / np.maximum(se, 1e-12)
        assert np.max(np.abs(z)) < 4.5, (name, z)
