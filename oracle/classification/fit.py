"""Fit a classification preset's kernel on the real labels, and the GP classifier it gives.

Model on standardised covariates: ``f ~ GP(m, k)`` with ``k`` one stationary family plus a
linear component (``[{type: <family>, variance: a, lengthscale: [l_1..l_d]}, {type:
linear, variance: v}]``, the regression presets' format, evaluated by the project's GPJax
kernels through :func:`udora.oracle.kernels.build_kernel`); binary labels through the
probit, multiclass labels through the softmax of C latent functions that share ``k`` and
have one constant mean each.

Hyperparameters ``theta = (log l (d,), log a, log v, means)`` maximise the approximate log
marginal likelihood per point: log Z_EP (binary, :func:`approx.ep_binary`) or the Laplace
log q (multiclass, :func:`approx.laplace_multiclass`), by scipy's L-BFGS-B with JAX
gradients (:func:`approx.ep_objective`, :func:`approx.laplace_objective`). EP sites and
the Laplace mode are warm-started from the previous evaluation. Softmax is unchanged by a
common shift of the C means, so the last mean is pinned at 0 while fitting and the means
are reported centred (they sum to 0).

The box matters: on near-separable data (banknote, segment, pendigits) the evidence keeps
growing with the amplitude until the labels are almost deterministic. The amplitude ``a``
is bounded by ``amplitude_bounds`` (default latent sd at most 3) and the linear variance
``v`` by ``linear_bounds`` (default ``(1e-6, a_max / d)``: the linear part's prior
variance at a z-scored point, ``v ||x||^2``, averages ``v d``). The record says which
bounds are active at the optimum.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize
from scipy.special import ndtri

from udora.errors import UserError
from udora.oracle.classification import approx
from udora.oracle.kernels import build_kernel
from udora.oracle.streams import stream

Family = Literal["rbf", "matern32", "matern52", "rational_quadratic"]
FAMILIES: tuple[Family, ...] = ("rbf", "matern32", "matern52", "rational_quadratic")
AMPLITUDE_BOUNDS = (0.05, 9.0)  # stationary variance: latent sd in [0.22, 3]
LENGTHSCALE_BOUNDS = (1e-2, 1e2)  # standardised units, as the regression fit's box
MEAN_BOUNDS = (-5.0, 5.0)
LINEAR_FLOOR = 1e-6
NONFINITE_LOSS = 1e10
MC_DRAWS = 2000  # Monte Carlo draws per point of the softmax class probabilities


@dataclass(frozen=True)
class ClassifierFit:
    """A fitted classification kernel.

    ``kernel``: component dicts that :func:`~udora.oracle.kernels.parse_kernel` accepts;
    ``mean``: the constant prior mean (binary) or the (C,) class means, centred;
    ``record``: JSON-able account of the fit (family, rows, seed, bounds, convergence).
    """

    kernel: list[dict[str, Any]]
    mean: float | tuple[float, ...]
    record: dict[str, Any]


def default_rows(n_classes: int) -> int:
    """Rows a fit uses by default: 1000 for binary; ``max(300, 2000 // C)`` for C > 2
    classes (500 for C = 4, 300 from C = 7), since every Laplace evaluation factors and
    inverts C matrices of n x n (600 fit rows, C = 4: about 7 s per evaluation on one core).
    """
    return 1000 if n_classes == 2 else max(300, 2000 // n_classes)


def _components(family: str, d: int, theta: np.ndarray) -> list[dict[str, Any]]:
    stat: dict[str, Any] = {
        "type": family,
        "variance": float(np.exp(theta[d])),
        "lengthscale": [float(v) for v in np.exp(theta[:d])],
    }
    if family == "rational_quadratic":
        stat["alpha"] = 1.0
    return [stat, {"type": "linear", "variance": float(np.exp(theta[d + 1]))}]


def _means(theta: jax.Array, d: int, n_classes: int) -> jax.Array:
    """() for binary, (C,) with the last pinned at 0 for multiclass."""
    if n_classes == 2:
        return theta[d + 2]
    return jnp.concatenate([theta[d + 2 :], jnp.zeros(1, theta.dtype)])


def _objective(template, d: int, n_classes: int) -> Callable:
    """Jitted ``(theta, Z, labels, init) -> ((loss, state), grad)``: loss = -log Z / n."""

    def loss(theta, Z, labels, init):
        kernel = eqx.tree_at(
            lambda k: (k.kernels[0].lengthscale, k.kernels[0].variance, k.kernels[1].variance),
            template,
            (jnp.exp(theta[:d]), jnp.exp(theta[d]), jnp.exp(theta[d + 1])),
        )
        K = kernel.cross_covariance(Z, Z)
        means = _means(theta, d, n_classes)
        sg = jax.lax.stop_gradient
        if n_classes == 2:
            state = approx.ep_binary(sg(K), labels, sg(means), init=init)
            value = approx.ep_objective(K, labels, means, state)
        else:
            state = approx.laplace_multiclass(sg(K), labels, sg(means), init=init)
            value = approx.laplace_objective(K, labels, means, state)
        return -value / Z.shape[0], state

    return jax.jit(jax.value_and_grad(loss, has_aux=True))


def _start(family: str, d: int, labels: np.ndarray, n_classes: int, lower, upper) -> np.ndarray:
    """Lengthscales sqrt(d), amplitude 1, linear variance 0.5 / d, means from class rates."""
    counts = np.bincount(labels, minlength=n_classes) + 0.5
    rates = counts / counts.sum()
    if n_classes == 2:
        means = [float(ndtri(rates[1]) * np.sqrt(2.5))]  # latent sd ~ sqrt(1 + 1 + 0.5)
    else:
        means = list(np.log(rates[:-1] / rates[-1]))
    x = np.r_[np.full(d, 0.5 * np.log(d)), 0.0, np.log(0.5 / d), means]
    return np.clip(x, lower, upper)


def fit_kernel(
    Z: np.ndarray,
    labels: np.ndarray,
    n_classes: int,
    *,
    family: Family,
    amplitude_bounds: tuple[float, float] = AMPLITUDE_BOUNDS,
    linear_bounds: tuple[float, float] | None = None,
    lengthscale_bounds: tuple[float, float] = LENGTHSCALE_BOUNDS,
    rows: int | None = None,
    seed: int = 0,
    max_iters: int = 200,
    gtol: float = 1e-5,
    ftol: float = 1e-9,
) -> ClassifierFit:
    """Fit ``family`` + linear and the constant mean(s) by EP (binary) or Laplace (C > 2).

    Args:
        Z: (N, d) standardised covariates; labels: (N,) integers in 0..C-1.
        n_classes: C >= 2 (2: probit EP; more: softmax Laplace).
        family: the stationary component, one of :data:`FAMILIES`.
        amplitude_bounds: box of the stationary variance a.
        linear_bounds: box of the linear variance v; default ``(1e-6, a_max / d)``.
        lengthscale_bounds: box of every lengthscale.
        rows: fit on at most this many rows drawn with ``seed`` (all rows if None; the
            seed is otherwise only recorded: the fit itself is deterministic).
        max_iters, gtol, ftol: L-BFGS-B's iteration cap, projected-gradient tolerance and
            relative-decrease tolerance on the per-point objective.

    Returns:
        :class:`ClassifierFit`.
    """
    if family not in FAMILIES:
        raise UserError(f"unknown kernel family {family!r}; valid: {', '.join(FAMILIES)}")
    Z = np.asarray(Z, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    n_all, d = Z.shape
    if labels.shape != (n_all,) or labels.min() < 0 or labels.max() >= n_classes:
        raise UserError(f"labels must be (N,) = ({n_all},) integers in 0..{n_classes - 1}")
    t0 = time.perf_counter()
    if rows is not None and rows < n_all:
        idx = np.sort(stream(seed, "classification_fit").permutation(n_all)[:rows])
        Z, labels = Z[idx], labels[idx]
    amp_lo, amp_hi = amplitude_bounds
    lin_lo, lin_hi = linear_bounds or (LINEAR_FLOOR, amp_hi / d)
    n_means = 1 if n_classes == 2 else n_classes - 1
    lower = np.log(np.r_[np.full(d, lengthscale_bounds[0]), amp_lo, lin_lo])
    upper = np.log(np.r_[np.full(d, lengthscale_bounds[1]), amp_hi, lin_hi])
    lower = np.r_[lower, np.full(n_means, MEAN_BOUNDS[0])]
    upper = np.r_[upper, np.full(n_means, MEAN_BOUNDS[1])]
    with jax.enable_x64(True):
        template = build_kernel(_components(family, d, np.zeros(d + 2)), d)
        value_and_grad = _objective(template, d, n_classes)
        Zj, lj = jnp.asarray(Z), jnp.asarray(labels)
        zeros = jnp.zeros(Z.shape[0])
        init = (zeros, zeros) if n_classes == 2 else jnp.zeros((n_classes, Z.shape[0]))
        warm: dict[str, Any] = {"init": init, "evals": 0, "inner_max": 0, "unconverged": 0}

        def fun(x):
            (loss, state), grad = value_and_grad(jnp.asarray(x), Zj, lj, warm["init"])
            loss, grad = float(loss), np.asarray(grad, dtype=np.float64)
            warm["evals"] += 1
            if not (np.isfinite(loss) and np.all(np.isfinite(grad))):
                return NONFINITE_LOSS, np.zeros_like(grad)
            steps, last = _inner(state)
            warm["inner_max"] = max(warm["inner_max"], steps)
            warm["unconverged"] += int(not last)
            warm["init"] = (state.tau, state.nu) if n_classes == 2 else state.a
            warm["state"] = state
            return loss, grad

        x0 = _start(family, d, labels, n_classes, lower, upper)
        res = scipy.optimize.minimize(
            fun,
            x0,
            jac=True,
            method="L-BFGS-B",
            bounds=list(zip(lower, upper, strict=True)),
            options={"maxiter": max_iters, "gtol": gtol, "ftol": ftol, "maxcor": 20},
        )
        loss, _ = fun(res.x)  # the state of the optimum, not of the last line-search trial
    x = np.asarray(res.x)
    means = np.asarray(_means(jnp.asarray(x), d, n_classes), dtype=np.float64)
    mean = float(means) if n_classes == 2 else tuple(float(v) for v in means - means.mean())
    record = {
        "family": family,
        "method": "EP (probit, parallel, damped)" if n_classes == 2 else "Laplace (softmax)",
        "rows": int(Z.shape[0]),
        "seed": int(seed),
        "log_evidence_per_point": -float(loss),
        "bounds": {
            "amplitude": list(amplitude_bounds),
            "linear": [lin_lo, lin_hi],
            "lengthscale": list(lengthscale_bounds),
        },
        "active": _active(x, lower, upper, d),
        "optimiser": {
            "iterations": int(res.nit),
            "evaluations": int(warm["evals"]),
            "success": bool(res.success),
            "message": str(res.message),
        },
        "inner": {
            "max_steps": int(warm["inner_max"]),
            "unconverged_evaluations": int(warm["unconverged"]),
            "final_steps": _inner(warm["state"])[0],
        },
        "seconds": round(time.perf_counter() - t0, 2),
    }
    return ClassifierFit(_components(family, d, x), mean, record)


def _inner(state) -> tuple[int, bool]:
    """(EP sweeps or Newton steps, whether the inner loop met its tolerance)."""
    if isinstance(state, approx.EPState):
        return int(state.sweeps), float(state.change) <= approx.EP_TOL
    return int(state.iterations), float(state.gain) <= approx.NEWTON_TOL


def _active(x, lower, upper, d) -> dict[str, Any]:
    """Which bounds hold at ``x`` (log space, to 1e-6): 'lower', 'upper' or None."""

    def side(i):
        if x[i] <= lower[i] + 1e-6:
            return "lower"
        if x[i] >= upper[i] - 1e-6:
            return "upper"
        return None

    return {
        "amplitude": side(d),
        "linear": side(d + 1),
        "lengthscales_at_bound": [i for i in range(d) if side(i) is not None],
        "means_at_bound": [i - d - 2 for i in range(d + 2, x.size) if side(i) is not None],
    }


def predict_log_proba(
    kernel: Sequence[dict[str, Any]],
    mean: float | Sequence[float],
    Z_train: np.ndarray,
    labels_train: np.ndarray,
    Z_test: np.ndarray,
    *,
    seed: int = 0,
    n_draws: int = MC_DRAWS,
) -> np.ndarray:
    """Log class probabilities (m, C) of the GP classifier with a given kernel and mean.

    Binary (``mean`` a number): EP on the training labels, ``p(1 | x) = Phi(mu / sqrt(1 +
    s^2))`` (GPML Alg. 3.6). Multiclass (``mean`` C numbers): the Laplace approximation and
    ``E[softmax(f*)]`` over its Gaussian latent predictive by ``n_draws`` Monte Carlo draws
    per point from ``seed`` (GPML Alg. 3.4).

    Args:
        kernel: component dicts (:func:`~udora.oracle.kernels.parse_kernel`'s format).
        mean: the constant prior mean (binary) or the (C,) class means.
        Z_train: (n, d) standardised covariates; labels_train: (n,) in 0..C-1.
        Z_test: (m, d) standardised covariates.

    Returns:
        (m, C) log probabilities, C = 2 for binary.
    """
    Z_train = np.asarray(Z_train, dtype=np.float64)
    d = Z_train.shape[1]
    with jax.enable_x64(True):
        k = build_kernel(list(kernel), d)
        Zs, Zt = jnp.asarray(Z_train), jnp.asarray(Z_test, dtype=jnp.float64)
        labels = jnp.asarray(labels_train)
        K = k.cross_covariance(Zs, Zs)
        K_cross = k.cross_covariance(Zt, Zs)
        k_diag = jax.vmap(k)(Zt, Zt)
        if np.ndim(mean) == 0:
            m = jnp.asarray(float(mean))
            state = approx.ep_binary(K, labels, m)
            mu, var = approx.ep_predict(K, K_cross, k_diag, m, state)
            return np.asarray(approx.probit_log_proba(mu, var))
        means = jnp.asarray(mean, dtype=jnp.float64)
        state = approx.laplace_multiclass(K, labels, means)
        mu, cov = approx.laplace_predict(K, K_cross, k_diag, labels, means, state)
        key = jax.random.key(seed)
        return np.asarray(approx.softmax_mc_log_proba(mu, cov, key=key, n_draws=n_draws))


def predict_proba(
    kernel: Sequence[dict[str, Any]],
    mean: float | Sequence[float],
    Z_train: np.ndarray,
    labels_train: np.ndarray,
    Z_test: np.ndarray,
    *,
    seed: int = 0,
    n_draws: int = MC_DRAWS,
) -> np.ndarray:
    """Class probabilities (m, C): ``exp`` of :func:`predict_log_proba` (same arguments)."""
    return np.exp(
        predict_log_proba(kernel, mean, Z_train, labels_train, Z_test, seed=seed, n_draws=n_draws)
    )


def held_out_scores(log_proba: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """Log loss (mean negative log probability of the true class) and accuracy: (m, C), (m,)."""
    labels = np.asarray(labels)
    picked = log_proba[np.arange(labels.size), labels]
    return {
        "log_loss": float(-np.mean(picked)),
        "accuracy": float(np.mean(np.argmax(log_proba, axis=1) == labels)),
    }


def split_rows(
    n: int, n_classes: int, *, rows: int | None = None, held_out: float = 0.2, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """The split :func:`select_family` uses: ``(fit rows, held-out rows)``, sorted indices.

    ``min(rows, n)`` rows (default :func:`default_rows`) are drawn from ``range(n)`` with
    ``seed``; the first ``round(held_out * rows)`` of the draw are held out.
    """
    rows = min(rows or default_rows(n_classes), n)
    draw = stream(seed, "classification_select").permutation(n)[:rows]
    n_held = round(held_out * rows)
    if n_held < 1 or rows - n_held < 2:
        raise UserError(f"held_out={held_out} of {rows} rows leaves no held-out or fit rows")
    return np.sort(draw[n_held:]), np.sort(draw[:n_held])


def select_family(
    Z: np.ndarray,
    labels: np.ndarray,
    n_classes: int,
    *,
    families: Sequence[Family] = FAMILIES,
    rows: int | None = None,
    held_out: float = 0.2,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    **fit_options: Any,
) -> ClassifierFit:
    """Fit each family on fit rows and keep the one with the lowest held-out log loss.

    The rows are split by :func:`split_rows` (``rows`` drawn with ``seed``, a fraction
    ``held_out`` of them held out, the rest the fit rows). Each family is fitted on the fit
    rows (:func:`fit_kernel`, ``fit_options`` passed on) and scored on the held-out rows by
    :func:`predict_log_proba` (MC seed ``seed``). The chosen fit is not refitted on the
    held-out rows.

    Returns:
        The chosen family's :class:`ClassifierFit`, its record extended by ``selection``
        (every family's held-out log loss, accuracy, evidence and seconds) and ``rows``.
    """
    say = progress or (lambda line: None)
    Z = np.asarray(Z, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    fit_rows, held = split_rows(Z.shape[0], n_classes, rows=rows, held_out=held_out, seed=seed)
    n_held = held.size
    fits, table = {}, {}
    for family in families:
        fit = fit_kernel(
            Z[fit_rows], labels[fit_rows], n_classes, family=family, seed=seed, **fit_options
        )
        lp = predict_log_proba(
            fit.kernel, fit.mean, Z[fit_rows], labels[fit_rows], Z[held], seed=seed
        )
        scores = held_out_scores(lp, labels[held])
        table[family] = {
            **scores,
            "log_evidence_per_point": fit.record["log_evidence_per_point"],
            "active": fit.record["active"],
            "seconds": fit.record["seconds"],
        }
        fits[family] = fit
        say(
            f"{family}: held-out log loss {scores['log_loss']:.4f}, accuracy "
            f"{scores['accuracy']:.3f} [{fit.record['seconds']:.0f} s]"
        )
    best = min(table, key=lambda f: table[f]["log_loss"])
    record = {
        **fits[best].record,
        "rows": {"fit": int(fit_rows.size), "held_out": int(n_held)},
        "split": {"held_out": held_out, "seed": seed, "stream": "classification_select"},
        "selection": table,
    }
    return ClassifierFit(fits[best].kernel, fits[best].mean, record)
