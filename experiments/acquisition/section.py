"""The report's joint and acquisition section: the runs' joint metrics per method
(docs/metrics.md, "Joint predictions") and, when the folder holds ``udora acquire``'s
rows, the active-learning curves: each method's posterior risk on the evaluation set per
round and strategy, relative to its round-0 risk (docs/joint_and_acquisition.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from udora.experiments.acquisition.study import ROWS
from udora.experiments.results.sections import ReportContext, ReportSection
from udora.experiments.run.words import plural
from udora.oracle.joint import DESIGNS


def joint_table(table: pd.DataFrame) -> pd.DataFrame:
    """(methods, share and excess per design): means over the runs that have them; a
    method without a covariance has NaN (its share is 0 by construction)."""
    cols = [f"joint_{m}_{d}" for d in DESIGNS for m in ("share", "excess")]
    present = [c for c in cols if c in table]
    if not present or table[present].isna().all().all():
        return pd.DataFrame()
    return table.groupby("method")[present].mean()


def relative_risk(rows: pd.DataFrame) -> pd.DataFrame:
    """(method, strategy, round) -> mean over presets of the seed-mean risk over the same
    chain's round-0 risk."""
    ok = rows[rows["status"] == "ok"]
    if ok.empty or "risk" not in ok:
        return pd.DataFrame()
    keys = ["preset", "method", "seed", "strategy"]
    first = ok[ok["round"] == 0].set_index(keys)["risk"]
    rel = ok.set_index(keys)["risk"] / first.reindex(ok.set_index(keys).index).to_numpy()
    ok = ok.assign(relative=rel.to_numpy())
    per_preset = ok.groupby(["method", "strategy", "round", "preset"])["relative"].mean()
    return per_preset.groupby(["method", "strategy", "round"]).mean().unstack("round")


def _figure(curves: pd.DataFrame, out) -> str:
    import matplotlib.pyplot as plt

    from udora.experiments.studies.figures import save

    methods = sorted(curves.index.get_level_values("method").unique())
    cols = min(4, len(methods))
    rows = int(np.ceil(len(methods) / cols))
    fig, axes = plt.subplots(
        rows, cols, figsize=(3.2 * cols, 2.6 * rows), squeeze=False, layout="constrained"
    )
    for ax, method in zip(axes.ravel(), methods, strict=False):
        for strategy, line in curves.loc[method].iterrows():
            ax.plot(line.index, line.to_numpy(), marker="o", label=strategy)
        ax.set_title(method, fontsize=9)
        ax.set_xlabel("round")
        ax.set_ylabel("risk / round-0 risk")
    for ax in axes.ravel()[len(methods) :]:
        ax.axis("off")
    axes.ravel()[0].legend(fontsize=7)
    return save(fig, out, "acquisition_curves")


def _write(ctx: ReportContext) -> list[str]:
    lines: list[str] = []
    joint = joint_table(ctx.table)
    if not joint.empty:
        lines += [
            "## Joint predictions",
            "",
            "Mean over runs of each design's share of the total correlation captured and "
            'joint excess per point (docs/metrics.md, "Joint predictions"); a method '
            "without a covariance is empty: it captures none (the zero line).",
            "",
            ctx.markdown(joint),
            "",
        ]
    path = ctx.results_dir / ROWS
    if path.is_file():
        rows = pd.read_parquet(path)
        curves = relative_risk(rows)
        presets = plural(rows["preset"].nunique(), "preset")
        lines += [
            "## Active learning",
            "",
            f"`udora acquire` rows ({len(rows)}; {presets}): the "
            "posterior risk on the evaluation set after each round, over the same chain's "
            "round-0 risk, mean over presets of seed means.",
            "",
            ctx.markdown(curves.reset_index(), index=False),
            "",
        ]
        if not curves.empty:
            lines += [f"![active-learning curves]({_figure(curves, ctx.out)})", ""]
    return lines


SECTION = ReportSection("joint", "Joint & acquisition", 35, _write)
