"""Paper-constrained kernels: the paper's variances, mean and fixed parameters, with the ARD
lengthscales fitted by marginal likelihood inside the paper's reported range.

The paper reports, per preset, each component's variance, the period and fixed
parameters (alpha, power), the mean, and one lengthscale range ``[min, max]``
(``paper.kernel[i].ls`` in the YAML). The free fit (:mod:`oracle.fit`) moves all of them;
here the variances, the period and a constant mean are pinned at the paper's values by
equal lower and upper bounds, and each lengthscale of a stationary component is bounded by
the paper's range instead of :data:`oracle.fit_box.BOUNDS`. Everything else is the free
fit's: the same objective, the same seeded subset of de-duplicated rows, the homoscedastic
noise variance fitted above ``fit_box.NOISE_FLOOR``, three starts screened on
``SCREEN_ROWS`` rows, then refined and restarted until a restart gains less than
``POLISH_TOL`` per point. The result is written as the preset's ``kernel_paper`` block
(``mean_paper`` where the mean differs, ``fit_paper`` its record) and selected per run by
``kernel=paper`` (:func:`oracle.preset.select_kernel`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np

from udora.errors import UserError
from udora.oracle.fit import (
    MIN_ROWS,
    SCREEN_ROWS,
    FitResult,
    extract,
    mll_at,
    refine,
    standardised_subset,
)
from udora.oracle.fit_box import NONFINITE_LOSS, bounded_problem, gp_model
from udora.oracle.kernels import STATIONARY_TYPES
from udora.oracle.preset import Mean, Preset

PINNED = ("variance", "period", "alpha", "power", "weight_variance", "bias_variance")


def paper_mean(preset: Preset) -> Mean:
    """The paper's mean: a constant at ``paper.mean`` where the preset's mean is constant."""
    value = float(preset.paper.get("mean", 0.0))
    if preset.mean.type == "constant":
        return Mean(type="constant", value=value)
    if value != 0.0:
        raise UserError(f"preset {preset.name!r}: zero mean but the paper's mean is {value}")
    return Mean()


def paper_components(preset: Preset) -> tuple[list[dict[str, Any]], list[tuple[float, float]]]:
    """The preset's components with the paper's pinned values, and each one's lengthscale
    range ``(lo, hi)`` (``(nan, nan)`` for a component without lengthscales).

    The lengthscales are left as the free fit's (clipped into the range): a start.
    """
    ref = preset.paper.get("kernel") or []
    if [c.get("type") for c in ref] != [c["type"] for c in preset.kernel]:
        raise UserError(
            f"preset {preset.name!r}: paper.kernel does not list the kernel's components"
        )
    comps, ranges = [], []
    for comp, paper in zip(preset.kernel, ref, strict=True):
        c = dict(comp)
        for key in PINNED:
            if key in paper:
                c[key] = paper[key]
        if comp["type"] in STATIONARY_TYPES:
            if "ls" not in paper:
                raise UserError(
                    f"preset {preset.name!r}: the paper reports no lengthscale range for "
                    f"component {comp['type']!r}"
                )
            lo, hi = (float(v) for v in paper["ls"])
            ls = np.broadcast_to(np.asarray(comp["lengthscale"], dtype=float), (preset.d,))
            c["lengthscale"] = [float(v) for v in np.clip(ls, lo, hi)]
            ranges.append((lo, hi))
        else:
            ranges.append((float("nan"), float("nan")))
        comps.append(c)
    return comps, ranges


def paper_limits(
    components: list[dict[str, Any]], ranges: list[tuple[float, float]], mean: Mean
) -> dict[str, tuple[float, float]]:
    """:func:`oracle.fit_box.bounded_problem` limits: variances, period and a constant mean
    pinned at ``components``' and ``mean``'s values, lengthscales within ``ranges``."""
    limits = {}
    for i, (comp, (lo, hi)) in enumerate(zip(components, ranges, strict=True)):
        prefix = f".prior.kernel.kernels[{i}]" if len(components) > 1 else ".prior.kernel"
        limits[f"{prefix}.variance"] = (comp["variance"], comp["variance"])
        if "period" in comp:
            limits[f"{prefix}.period"] = (comp["period"], comp["period"])
        if "lengthscale" in comp:
            limits[f"{prefix}.lengthscale"] = (lo, hi)
    if mean.type == "constant":
        limits[".prior.mean_function.constant"] = (mean.value, mean.value)
    return limits


def _starts(
    comps: list[dict[str, Any]], ranges: list[tuple[float, float]], free_noise: float
) -> list[tuple[str, float, list[dict[str, Any]]]]:
    """(label, noise variance, components): the free fit's lengthscales clipped into the
    range, the range's geometric middle, its upper end."""
    out = [("free fit's lengthscales clipped", max(free_noise, 1e-3), comps)]
    for label, noise, pick in (
        ("geometric middle", 0.5, lambda lo, hi: float(np.sqrt(lo * hi))),
        ("upper end", 0.2, lambda lo, hi: hi),
    ):
        moved = []
        for c, (lo, hi) in zip(comps, ranges, strict=True):
            c = dict(c)
            if "lengthscale" in c:
                c["lengthscale"] = [pick(lo, hi)] * len(c["lengthscale"])
            moved.append(c)
        out.append((f"lengthscales at the {label}", noise, moved))
    return out


def fit_paper_kernel(
    preset: Preset,
    *,
    subset: int | None = None,
    seed: int | None = None,
    data_dir: str | Path | None = None,
    max_iters: int = 1000,
    gtol: float = 1e-8,
    polish: int = 20,
    progress: Callable[[str], None] | None = None,
) -> tuple[FitResult, Mean]:
    """Fit ``preset``'s lengthscales (inside the paper's range) and noise, the rest pinned at
    the paper's values. ``subset`` and ``seed`` default to the free fit's (its ``fit``
    block). Returns the :class:`~oracle.fit.FitResult` (its kernel is the ``kernel_paper``
    block) and the mean."""
    free = preset.fit or {}
    subset = int(free.get("subset", 2000) if subset is None else subset)
    seed = int(free.get("seed", 0) if seed is None else seed)
    if subset < MIN_ROWS:
        raise UserError(f"subset must be at least {MIN_ROWS} rows, got {subset}")
    t0 = time.perf_counter()
    say = progress or (lambda line: None)
    comps, ranges = paper_components(preset)
    mean = paper_mean(preset)
    Z, t = standardised_subset(preset, subset, seed, data_dir)
    with jax.enable_x64(True):
        starts = _starts(comps, ranges, float(free.get("noise_variance", 0.5)))
        models = [gp_model(c, preset.d, mean, noise) for _, noise, c in starts]
        problem = bounded_problem(models[0], paper_limits(comps, ranges, mean))
        Zs, ts = Z[:SCREEN_ROWS], t[:SCREEN_ROWS]
        screened = []
        for (label, noise, _), model in zip(starts, models, strict=True):
            res = problem.solve(problem.start(model), Zs, ts, max_iters, gtol)
            screened.append((float(res.fun), res.x))
            say(
                f"start ({label}, noise {noise:.3g}) on {Zs.shape[0]} rows: "
                f"mll/pt {-res.fun:.5f} [{time.perf_counter() - t0:.0f} s]"
            )
        best = min(range(len(screened)), key=lambda i: screened[i][0])
        x, loss = refine(problem, screened[best][1], Z, t, max_iters, gtol, polish, say, t0)
        if not loss < NONFINITE_LOSS:
            raise RuntimeError(f"preset {preset.name!r}: the marginal likelihood is not finite")
        kernel, _, noise_var = extract(problem.rebuild(x), comps)
        for c, pinned, (lo, hi) in zip(kernel, comps, ranges, strict=True):
            c.update({k: pinned[k] for k in PINNED if k in pinned})  # exact, not round-tripped
            if "lengthscale" in c:
                c["lengthscale"] = [float(v) for v in np.clip(c["lengthscale"], lo, hi)]
        # the record's likelihood is the one at the written (rounded, clipped) values
        loss, _ = problem.fun(problem.flatten(gp_model(kernel, preset.d, mean, noise_var)), Z, t)
    result = FitResult.of(kernel, mean.value, noise_var, loss, Z.shape[0], seed, t0, screened)
    return result, mean


def paper_record(result: FitResult) -> dict[str, Any]:
    """The ``fit_paper`` block: the fit record, marked as the paper-constrained variant."""
    return {"variant": "paper", **result.record()}


def _written_problem(preset: Preset, data_dir: str | Path | None):
    if preset.kernel_paper is None or not preset.fit_paper:
        raise UserError(
            f"preset {preset.name!r} has no kernel_paper block; run "
            f"`udora presets fit {preset.name} --paper --write`"
        )
    _, ranges = paper_components(preset)
    comps = list(preset.kernel_paper)
    mean = preset.mean_paper or preset.mean
    rec = preset.fit_paper
    Z, t = standardised_subset(preset, rec["subset"], rec["seed"], data_dir)
    model = gp_model(comps, preset.d, mean, rec["noise_variance"])
    return model, paper_limits(comps, ranges, mean), Z, t


def paper_mll_and_grad(preset: Preset, data_dir: str | Path | None = None) -> tuple[float, float]:
    """Per-point log marginal likelihood at the written ``kernel_paper`` (its record's subset
    and seed) and the norm of its projected gradient in the paper-constrained box."""
    with jax.enable_x64(True):
        model, limits, Z, t = _written_problem(preset, data_dir)
        problem = bounded_problem(model, limits)
        return mll_at(problem, model, Z, t, f"preset {preset.name!r}: kernel_paper")


def paper_refit_from_written(
    preset: Preset, data_dir: str | Path | None = None, max_iters: int = 50, gtol: float = 1e-7
) -> float:
    """Per-point log marginal likelihood after L-BFGS-B restarted AT the written
    ``kernel_paper`` inside the paper-constrained box (a local optimum gains nothing)."""
    with jax.enable_x64(True):
        model, limits, Z, t = _written_problem(preset, data_dir)
        problem = bounded_problem(model, limits)
        res = problem.solve(problem.start(model), Z, t, max_iters, gtol)
    return -float(res.fun)
