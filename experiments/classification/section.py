"""The report's classification section (docs/running.md, "The report"): the runs of
classification tasks only, never mixed with regression ones.

A leaderboard of the classification metrics with a leaderboard role
(:mod:`udora.scoring.classification`), each config's mean over presets of its seed means
(seeds are averaged first, within a preset; configs are never averaged together) with
the number of presets, the GP references (``gp_oracle``, ``gp_approx``) in a table of
their own below it, never ranked; the primary metric per preset with its Monte Carlo standard error;
and two figures per config, averaged over its runs: the calibration of the EU (binned
estimate against binned target, nats) and the EU risk-coverage curve, dashed beside the
curve of the oracle's order of the config's own EU target.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from udora.experiments.results.figures import config_styles, plt, save_figure
from udora.experiments.results.figures_summary import REFERENCE, families
from udora.experiments.results.sections import ReportContext, ReportSection
from udora.oracle.classification.preset import CLASSIFICATION
from udora.scoring.registry import metric, names


def leaderboard(table: pd.DataFrame) -> pd.DataFrame:
    """Per config: the mean over presets of each leaderboard metric's seed mean, and the
    number of presets; ``table`` holds ok classification runs."""
    cols = [c for c in names(CLASSIFICATION, "leaderboard") if c in table.columns]
    per_preset = table.groupby(["config", "preset"])[cols].mean()
    board = per_preset.groupby("config").mean()
    board["presets"] = per_preset.groupby("config").size()
    primary = names(CLASSIFICATION, "ranked")[0]
    return board.sort_values(primary, ascending=metric(primary).better == "lower")


def _mean_curve(curves: list[dict], x: str, y: str) -> tuple[np.ndarray, np.ndarray] | None:
    pairs = [(c[x], c[y]) for c in curves if c.get(x) and c.get(y)]
    if not pairs:
        return None
    xs = np.array([[np.nan if v is None else v for v in p[0]] for p in pairs], dtype=float)
    ys = np.array([[np.nan if v is None else v for v in p[1]] for p in pairs], dtype=float)
    return np.nanmean(xs, axis=0), np.nanmean(ys, axis=0)


def figures(table: pd.DataFrame, curves: dict, out) -> list:
    """The EU calibration and EU risk-coverage figures; their PNG paths."""
    by_config: dict[str, list[dict]] = {}
    for row in table.itertuples(index=False):
        found = curves.get((row.preset, row.method, row.config, row.seed))
        if found:
            by_config.setdefault(row.config, []).append(found)
    if not by_config:
        return []
    styles = config_styles(sorted(by_config))
    fig, (calib, rc) = plt.subplots(1, 2, figsize=(10, 4.2))
    for config, runs in sorted(by_config.items()):
        style = styles[config]
        if (c := _mean_curve(runs, "calib_eu_target", "calib_eu_estimate")) is not None:
            calib.plot(*c, marker=style["marker"], color=style["color"], label=config, ms=4)
        if (r := _mean_curve(runs, "rc_coverage", "rc_eu")) is not None:
            rc.plot(*r, color=style["color"], label=config)
        if (best := _mean_curve(runs, "rc_coverage", "rc_eu_oracle")) is not None:
            rc.plot(*best, color=style["color"], ls="--", lw=0.8, alpha=0.7)
    calib.set(xscale="log", yscale="log", xlabel="EU target E KL(p_f || q), bin mean (nats)")
    calib.set(ylabel="method's EU, bin mean (nats)", title="EU calibration")
    lims = [*calib.get_xlim(), *calib.get_ylim()]
    calib.plot([min(lims), max(lims)], [min(lims), max(lims)], color="black", lw=0.8)
    rc.set(xlabel="coverage (most certain first, by the method's EU; dashed: by its target)")
    rc.set(ylabel="retained mean EU target (nats)", title="EU risk-coverage")
    rc.legend(fontsize=7)
    stem = out / "classification_eu_calibration_risk_coverage"
    return [p for p in save_figure(fig, stem) if p.suffix == ".png"]


def classification_section(ctx: ReportContext) -> list[str]:
    """The section's Markdown lines; [] when the folder has no ok classification run."""
    ok = ctx.table[ctx.table["status"] == "ok"]
    if ok.empty:
        return []
    family = families(ok)
    is_reference = ok["config"].map(family).eq(REFERENCE)
    board = leaderboard(ok[~is_reference]) if (~is_reference).any() else None
    references = leaderboard(ok[is_reference]) if is_reference.any() else None
    primary = names(CLASSIFICATION, "ranked")[0]
    per_preset = ok.groupby(["config", "preset"])[primary].mean().unstack()
    se = f"se.{primary}"
    lines = [
        "## Classification",
        "",
        "Classification tasks (a latent GP's sampled posterior; docs/design.md, "
        '"Classification"). Each config\'s mean over presets of its seed means; '
        '`presets` says over how many. Metrics: docs/metrics.md, "Classification".',
        "",
    ]
    if board is not None:
        lines += [ctx.markdown(board), ""]
    if references is not None:
        lines += [
            "GP references, not ranked (the task's own prior: `gp_oracle` samples its exact "
            "posterior again, `gp_approx` approximates it by EP or Laplace):",
            "",
            ctx.markdown(references),
            "",
        ]
    lines += [
        f"{metric(primary).label} per preset (seed means):",
        "",
        ctx.markdown(per_preset),
        "",
    ]
    if se in ok.columns:
        err = ok.groupby(["config", "preset"])[se].mean().unstack()
        lines += [
            f"Monte Carlo standard error of the {metric(primary).label} (the oracle's "
            "batch-means jackknife, seed means):",
            "",
            ctx.markdown(err),
            "",
        ]
    for path in figures(ok, ctx.curves, ctx.out):
        lines += [f"![{path.stem}]({os.path.relpath(path, ctx.out)})", ""]
    if ctx.baseline is None:
        return lines
    from udora.experiments.rankings import beside
    from udora.experiments.results.sections import Page, SectionText

    summary, page = beside.beside_baseline(
        ctx.table, ctx.baseline, ctx.markdown, CLASSIFICATION, BESIDE_PAGE
    )
    title = f"{beside.TITLE} (classification)"
    return SectionText(lines + summary, (Page(BESIDE_PAGE, title, tuple(page)),))


BESIDE_PAGE = "baseline_classification"  # beside report.md, as the regression kind's page
SECTION = ReportSection(
    "classification",
    "Classification",
    50,
    classification_section,
    kind=CLASSIFICATION,
    pages=(BESIDE_PAGE,),
)
