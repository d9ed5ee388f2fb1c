"""Fit a preset's kernel family to its real data by exact marginal likelihood (GPJax).

Model on standardised data (features and target z-scored over the whole table, by the
same :class:`~udora.oracle.standardise.Standardiser` the oracle uses):
``y = m + f(x) + eps``, ``f ~ GP(0, k)``, ``eps ~ N(0, s2)`` homoscedastic, with ``k`` the
preset's kernel family and ``m`` a constant where the preset has one. The objective is
the negative log marginal likelihood ``-log N(y | m, K + s2 I)`` per data point (GPJax's
``conjugate_mll``) on a seeded random subset of at most ``subset`` rows.

The optimiser is scipy's L-BFGS-B on GPJax's unconstrained parameters, inside the box
:data:`oracle.fit_box.BOUNDS` (the problem itself lives in :mod:`oracle.fit_box`).
Without the box the likelihood of several presets climbs ridges that never end
(diamonds: RBF variance and lengthscales both growing past 1e4, which approximates a
polynomial) or collapses a lengthscale toward zero (seoul_bike's periodic kernel reached
1e-154), and an unbounded L-BFGS then spends its time in line searches. The box is wide
in standardised units: a lengthscale of 100 makes a z-scored feature irrelevant, a kernel
variance of 10 is ten times the target variance. A fit is converged when the projected
gradient (the gradient with components that push against an active bound removed) is
below ``gtol``; that is the local-optimum condition :func:`mll_and_grad` reports. A
non-finite objective is answered with a large value so the line search backs off
instead of failing.

The likelihood has poor local optima (docs/presets.md): the noise variance starts at a
sizeable fraction of the target variance and is bounded below by ``fit_box.NOISE_FLOOR``;
lengthscales start near sqrt(d). Several restarts are screened on a smaller sub-subset and
the best is refined on the full subset. ``alpha`` (rational quadratic) and ``power``
(powered exponential) are fixed at the preset's values, as are the arc-cosine weight and
bias variances (the paper reports them at 1 for both arc-cosine presets): they are
``paramax.non_trainable`` leaves, pinned here by equal lower and upper bounds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gpjax as gpx
import jax
import numpy as np
from gpjax.parameters import val

from udora.errors import UserError
from udora.oracle.data import load_table
from udora.oracle.fit_box import (
    NONFINITE_LOSS,
    BoundedProblem,
    bounded_problem,
    gp_model,
    minimise,
)
from udora.oracle.preset import Preset
from udora.oracle.standardise import Standardiser
from udora.oracle.task import stream

POLISH_TOL = 1e-9  # a restart of L-BFGS-B that gains less per point than this ends the fit
RESTART_INITS = (  # (noise variance, lengthscale multiplier of sqrt(d))
    (0.5, 1.0),
    (0.2, 0.5),
    (0.1, 2.0),
)
SCREEN_ROWS = 500
MIN_ROWS = 10  # smallest subset a fit accepts


@dataclass(frozen=True)
class FitResult:
    """Fitted hyperparameters (standardised units) and how they were obtained."""

    kernel: list[dict[str, Any]]
    mean_value: float
    noise_variance: float
    mll_per_point: float
    rows: int
    seed: int
    seconds: float
    restarts: list[float]

    @classmethod
    def of(cls, kernel, mean_value, noise_variance, loss, rows, seed, t0, screened) -> FitResult:
        """From a finished fit: ``loss`` is -mll per point, ``t0`` its start
        (``time.perf_counter``), ``screened`` the screened starts' ``(loss, x)`` pairs."""
        return cls(
            kernel=kernel,
            mean_value=mean_value,
            noise_variance=noise_variance,
            mll_per_point=-loss,
            rows=rows,
            seed=seed,
            seconds=time.perf_counter() - t0,
            restarts=[-s[0] for s in screened],
        )

    def record(self) -> dict[str, Any]:
        """The ``fit`` block written into the preset YAML."""
        return {
            "subset": self.rows,
            "seed": self.seed,
            "noise_variance": self.noise_variance,
            "mll_per_point": self.mll_per_point,
            "seconds": round(self.seconds, 1),
            "backend": jax.default_backend(),
        }


def standardised_subset(
    preset: Preset, subset: int, seed: int, data_dir: str | Path | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The seeded random subset (rows <= subset) of the z-scored real table: (m, d), (m,).

    Exact duplicate records (same covariates AND target) are dropped first, keeping the
    first: in an exact GP likelihood they read as repeated noise-free observations and drive
    the noise variance to its floor (white_wine has 937 such rows; with them its fit
    interpolates at noise 1e-4 with lengthscales ~0.5). Rows that share covariates but not
    the target stay: they are information about the noise. Z-scoring uses the whole table
    (every row, duplicates included): the :class:`Standardiser` the oracle uses too.
    """
    X, y = load_table(preset, data_dir)
    std = Standardiser.fit(X, y)
    Z, t = std.x(X), std.y(y)
    _, first = np.unique(np.column_stack([X, y]), axis=0, return_index=True)
    unique = np.sort(first)
    rows = min(subset, unique.size)
    idx = unique[stream(seed, "fit_subset").permutation(unique.size)[:rows]]
    return Z[idx], t[idx]


def _start(preset: Preset, noise_var: float, ls_mult: float) -> list[dict[str, Any]]:
    comps = []
    for comp in preset.kernel:
        c = dict(comp)
        if "lengthscale" in c:
            c["lengthscale"] = [float(np.sqrt(preset.d) * ls_mult)] * preset.d
        if c["type"] == "periodic":
            c["period"] = 1.0
        c["variance"] = (1.0 - noise_var) / len(preset.kernel)
        comps.append(c)
    return comps


def extract(model, template: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], float, float]:
    """Fitted (components, mean value, noise variance) of a GPJax posterior model."""
    kernel = model.prior.kernel
    parts = kernel.kernels if isinstance(kernel, gpx.kernels.SumKernel) else [kernel]
    out = []
    for part, comp in zip(parts, template, strict=True):
        c = dict(comp)
        c["variance"] = float(val(part.variance))
        for name in ("lengthscale", "period"):
            if name in c:
                value = np.atleast_1d(np.asarray(val(getattr(part, name)), dtype=float))
                c[name] = [float(v) for v in value] if name == "lengthscale" else float(value[0])
        out.append(c)
    mean = float(np.asarray(val(model.prior.mean_function.constant)).reshape(-1)[0])
    noise_var = float(val(model.likelihood.obs_stddev)) ** 2
    return out, mean, noise_var


def fit_preset(
    preset: Preset,
    *,
    subset: int = 2000,
    seed: int = 0,
    data_dir: str | Path | None = None,
    max_iters: int = 1000,
    gtol: float = 1e-8,
    polish: int = 20,
    progress: Callable[[str], None] | None = None,
) -> FitResult:
    """Fit ``preset``'s kernel family, constant mean (if any) and noise to its real data.

    Restarts (:data:`RESTART_INITS`) are screened on the first ``SCREEN_ROWS`` rows of the
    subset; the best is refined on all of it, then L-BFGS-B is restarted from its own
    result (up to ``polish`` times) until a restart gains less than :data:`POLISH_TOL`
    per point: on flat ridges (diamonds, white_wine) one L-BFGS-B run stops on ``gtol``
    with a restart still gaining 1e-2. Returns a :class:`FitResult`.
    """
    if subset < MIN_ROWS:
        raise UserError(f"subset must be at least {MIN_ROWS} rows, got {subset}")
    t0 = time.perf_counter()
    say = progress or (lambda line: None)
    Z, t = standardised_subset(preset, subset, seed, data_dir)
    with jax.enable_x64(True):
        starts = [
            gp_model(_start(preset, noise_var, mult), preset.d, preset.mean, noise_var)
            for noise_var, mult in RESTART_INITS
        ]
        problem = bounded_problem(starts[0])  # compiled once per data size, for all runs
        Zs, ts = Z[:SCREEN_ROWS], t[:SCREEN_ROWS]
        screened = []
        for (noise_var, mult), model in zip(RESTART_INITS, starts, strict=True):
            res = problem.solve(problem.start(model), Zs, ts, max_iters, gtol)
            screened.append((float(res.fun), res.x))
            say(
                f"start (noise {noise_var}, lengthscales {mult} sqrt(d)) on "
                f"{Zs.shape[0]} rows: mll/pt {-res.fun:.5f} "
                f"[{time.perf_counter() - t0:.0f} s]"
            )
        best = min(range(len(screened)), key=lambda i: screened[i][0])
        template = _start(preset, *RESTART_INITS[best])
        x, loss = refine(problem, screened[best][1], Z, t, max_iters, gtol, polish, say, t0)
        if not loss < NONFINITE_LOSS:
            raise RuntimeError(
                f"preset {preset.name!r}: the marginal likelihood is not finite at any start"
            )
        kernel, mean, noise_var = extract(problem.rebuild(x), template)
    mean_value = mean if preset.mean.type == "constant" else 0.0
    return FitResult.of(kernel, mean_value, noise_var, loss, Z.shape[0], seed, t0, screened)


def refine(
    problem: BoundedProblem,
    x: np.ndarray,
    Z: np.ndarray,
    t: np.ndarray,
    max_iters: int,
    gtol: float,
    polish: int,
    say: Callable[[str], None],
    t0: float,
) -> tuple[np.ndarray, float]:
    """L-BFGS-B from ``x`` (p,) on all of ``Z``, ``t``, then restarted from its own result
    (fresh curvature, up to ``polish`` times) until a restart gains less than
    :data:`POLISH_TOL` per point: (best x (p,), its loss)."""
    loss = np.inf
    for run in range(1 + polish):
        res = problem.solve(x, Z, t, max_iters, gtol)
        gain = loss - float(res.fun)
        if gain > 0:
            x, loss = res.x, float(res.fun)
        label = "refine" if run == 0 else f"restart {run}"
        say(
            f"{label} on {Z.shape[0]} rows: mll/pt {-loss:.7f}, {res.nit} iterations "
            f"[{time.perf_counter() - t0:.0f} s]"
        )
        if gain < POLISH_TOL:
            break
    return x, loss


def mll_and_grad(preset: Preset, data_dir: str | Path | None = None) -> tuple[float, float]:
    """Per-point log marginal likelihood at the preset's written fit, and its gradient norm.

    Uses the subset and seed recorded in the preset's ``fit`` block. Returns
    ``(mll, ||projected d mll / d theta||)`` over the unconstrained parameters, the
    projection dropping components that push against an active bound of the fit box.
    Written values outside the box are an error (they were not fitted in it).
    """
    if not preset.fit:
        raise UserError(f"preset {preset.name!r} has no fit block; run `udora presets fit`")
    Z, t = standardised_subset(preset, preset.fit["subset"], preset.fit["seed"], data_dir)
    with jax.enable_x64(True):
        model = gp_model(list(preset.kernel), preset.d, preset.mean, preset.fit["noise_variance"])
        return mll_at(bounded_problem(model), model, Z, t, f"preset {preset.name!r}: written fit")


def mll_at(problem, model, Z: np.ndarray, t: np.ndarray, what: str) -> tuple[float, float]:
    """``(mll per point, ||projected gradient||)`` of ``problem`` at ``model``'s values.

    ``Z`` (m, d) and ``t`` (m,) are the standardised subset. Values outside the problem's
    box are an error naming ``what`` (they were not fitted in it). Call inside
    ``jax.enable_x64(True)``.
    """
    x = problem.flatten(model)
    if problem.outside(x):
        raise UserError(f"{what} lies outside its fit box")
    loss, _ = problem.fun(x, Z, t)
    return -loss, float(np.linalg.norm(problem.projected_gradient(x, Z, t)))


def refit_from_written(
    preset: Preset, data_dir: str | Path | None = None, max_iters: int = 50, gtol: float = 1e-7
) -> float:
    """Per-point log marginal likelihood after L-BFGS-B restarted AT the written fit.

    With the recorded subset; at a local optimum this cannot exceed :func:`mll_and_grad`'s
    value by more than the optimiser's tolerance.
    """
    if not preset.fit:
        raise UserError(f"preset {preset.name!r} has no fit block; run `udora presets fit`")
    Z, t = standardised_subset(preset, preset.fit["subset"], preset.fit["seed"], data_dir)
    with jax.enable_x64(True):
        model = gp_model(list(preset.kernel), preset.d, preset.mean, preset.fit["noise_variance"])
        _, loss = minimise(model, Z, t, max_iters, gtol)
    return -loss
