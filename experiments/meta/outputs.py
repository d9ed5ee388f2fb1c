"""``udora meta RESULTS``: the tables and the figure of :mod:`udora.experiments.meta.taus`.

Writes under the output folder: ``meta_cells.csv`` (tau per preset, seed, observable and
oracle metric), ``meta_pooled.csv`` (pooled tau with its bootstrap interval),
``meta.md`` (the pooled taus as an observable x oracle table), ``meta_tau.png``/``.pdf``
(the same as a heatmap, annotated) and, when asked, ``meta_by_size.csv`` and its figure
(agreement with the EU ranking against the number of evaluation points), and
``meta_iauc.csv`` with the figures ``meta_iauc`` (interval AUC of every config's EU
intervals on the exceedance task f > its 0.9 quantile at the 90% level, the exact
posterior as reference) and ``meta_iauc_curves`` (the three regions over nominal levels).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from udora.errors import UserError
from udora.experiments.meta.cells import (
    cell_early,
    load_cells,
    submit_subsample_taus,
    with_block_metrics,
)
from udora.experiments.meta.iauc import iauc_frame
from udora.experiments.meta.pool import CellPool
from udora.experiments.meta.taus import cell_taus, pooled_taus, sides
from udora.experiments.results.figures import OKABE_ITO, save_figure
from udora.experiments.results.store import kind_of
from udora.oracle.atomic import write_text


def tau_matrix(pooled: pd.DataFrame, column: str = "tau", kind: str = "regression") -> pd.DataFrame:
    """``column`` of the pooled rows as an observable x oracle frame, in the order of the
    kind's two sides (:func:`udora.experiments.meta.taus.sides`; metrics without a value
    left out)."""
    observable, oracle = sides(kind)
    wide = pooled.pivot(index="observable", columns="oracle", values=column)
    rows = [m for m in observable if m in wide.index]
    cols = [m for m in oracle if m in wide.columns]
    return wide.loc[rows, cols]


def markdown(pooled: pd.DataFrame, kind: str = "regression") -> str:
    """Pooled tau and its 95% interval per observable (rows) and oracle metric (columns)."""
    tau, low, high = (tau_matrix(pooled, c, kind) for c in ("tau", "low", "high"))
    lines = [
        "| observable | " + " | ".join(tau.columns) + " |",
        "|---|" + "---|" * len(tau.columns),
    ]
    for obs in tau.index:
        cells = [
            f"{tau.loc[obs, c]:+.2f} [{low.loc[obs, c]:+.2f}, {high.loc[obs, c]:+.2f}]"
            if np.isfinite(tau.loc[obs, c])
            else "n/a"
            for c in tau.columns
        ]
        lines.append(f"| {obs} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def heatmap(pooled: pd.DataFrame, stem: Path, title: str, kind: str = "regression") -> list[Path]:
    """The pooled taus as an annotated heatmap (diverging, -1 to 1); PNG and PDF."""
    import matplotlib.pyplot as plt  # Agg: set by udora.experiments.results.figures

    tau = tau_matrix(pooled, kind=kind)
    fig, ax = plt.subplots(figsize=(1.2 + 0.95 * tau.shape[1], 1.4 + 0.42 * tau.shape[0]))
    image = ax.imshow(tau.to_numpy(dtype=float), cmap="RdBu", vmin=-1.0, vmax=1.0)
    ax.set_xticks(range(tau.shape[1]), tau.columns, rotation=40, ha="right", fontsize=8)
    ax.set_yticks(range(tau.shape[0]), tau.index, fontsize=8)
    for i in range(tau.shape[0]):
        for j in range(tau.shape[1]):
            value = tau.iat[i, j]
            if np.isfinite(value):
                ax.text(
                    j,
                    i,
                    f"{value:+.2f}",
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white" if abs(value) > 0.6 else "black",
                )
    ax.set(xlabel="oracle metric", ylabel="observable metric", title=title)
    fig.colorbar(image, ax=ax, label="Kendall's tau-b (mean over presets)")
    return save_figure(fig, stem)


def size_figure(
    by_size: pd.DataFrame, stem: Path, oracle: str, kind: str = "regression"
) -> list[Path]:
    """Mean tau over cells against the number of evaluation points, one line per
    observable metric; PNG and PDF."""
    import matplotlib.pyplot as plt  # Agg: set by udora.experiments.results.figures

    mean = by_size.groupby(["observable", "size"])["tau"].mean().unstack("observable")
    fig, ax = plt.subplots(figsize=(7.6, 4.6))
    for i, obs in enumerate(m for m in sides(kind)[0] if m in mean.columns):
        # 8 colours, then a new line style and marker: each (colour, style) pair once
        style, marker = (("-", "o"), ("--", "s"), (":", "^"))[(i // 8) % 3]
        ax.plot(mean.index, mean[obs], ls=style, marker=marker, color=OKABE_ITO[i % 8], label=obs)
    ax.set_xscale("log")
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set(
        xlabel="evaluation points (random subsets of the pool; a size past N: all N)",
        ylabel=f"Kendall's tau with {oracle} (mean over cells)",
        title="How many points an observable metric needs",
    )
    ax.legend(
        fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, handlelength=3.5
    )  # long enough to show the dashes
    return save_figure(fig, stem)


def iauc_figure(regions: pd.DataFrame, stem: Path, level: float = 0.9) -> list[Path]:
    """The three ranking regions per config at one nominal level, mean over cells, as
    stacked horizontal bars sorted by P(I1 > I0); the exact posterior's row is ``oracle``."""
    import matplotlib.pyplot as plt  # Agg: set by udora.experiments.results.figures

    at = regions[np.isclose(regions["level"], level)]
    mean = at.groupby("config")[["above", "overlap", "below"]].mean().sort_values("above")
    fig, ax = plt.subplots(figsize=(7.6, 1.6 + 0.36 * len(mean)))
    left = np.zeros(len(mean))
    for name, colour, label in (
        ("above", "#2166ac", "P(I1 > I0): confidently right"),
        ("overlap", "#bbbbbb", "P(overlap)"),
        ("below", "#b2182b", "P(I1 < I0): confidently wrong"),
    ):
        ax.barh(range(len(mean)), mean[name], left=left, color=colour, label=label)
        left += mean[name].to_numpy()
    ax.set_yticks(range(len(mean)), mean.index, fontsize=8)
    ax.set(
        xlim=(0, 1),
        xlabel="share of (exceeding, not exceeding) pairs, mean over cells",
        title=f"Ranking f's top decile with EU intervals ({level:.0%} nominal)",
    )
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return save_figure(fig, stem)


def iauc_curves_figure(regions: pd.DataFrame, stem: Path) -> list[Path]:
    """The three-region curves over nominal levels: one small panel per config (the exact
    posterior's ``oracle`` first, then by P(I1 > I0) at 90%), the regions stacked, mean
    over cells; PNG and PDF."""
    import matplotlib.pyplot as plt  # Agg: set by udora.experiments.results.figures

    mean = regions.groupby(["config", "level"])[["above", "overlap", "below"]].mean()
    at90 = (
        mean.xs(0.9, level="level")["above"]
        if 0.9 in mean.index.get_level_values(1)
        else (mean.groupby("config")["above"].mean())
    )
    order = sorted(at90.index, key=lambda c: (c != "oracle", -at90[c]))
    cols = 4
    rows = -(-len(order) // cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(10.0, 1.0 + 1.9 * rows), sharex=True, sharey=True, squeeze=False
    )
    colours = {"above": "#2166ac", "overlap": "#bbbbbb", "below": "#b2182b"}
    labels = {"above": "P(I1 > I0)", "overlap": "P(overlap)", "below": "P(I1 < I0)"}
    for ax, config in zip(axes.flat, order, strict=False):
        part = mean.loc[config]
        ax.stackplot(
            part.index,
            *(part[k] for k in colours),
            colors=list(colours.values()),
            labels=list(labels.values()),
        )
        ax.set_title(config, fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in axes.flat[len(order) :]:
        ax.set_visible(False)
    for j in range(cols):  # the lowest panel of each column carries the x axis
        shown = [ax for ax in axes[:, j] if ax.get_visible()]
        if shown:
            shown[-1].tick_params(labelbottom=True)
            shown[-1].set_xlabel("nominal level of mu +- z sqrt(e)", fontsize=7)
    for ax in axes[:, 0]:
        ax.set_ylabel("share of pairs", fontsize=7)
    axes.flat[0].legend(fontsize=6, loc="lower left")
    fig.suptitle(
        "Interval AUC regions of EU intervals over nominal levels (f > its 0.9 "
        "quantile; mean over cells)",
        fontsize=10,
    )
    return save_figure(fig, stem)


def write_meta(
    table: pd.DataFrame,
    out: str | Path,
    *,
    min_methods: int = 4,
    n_boot: int = 2000,
    sizes: tuple[int, ...] = (),
    repeats: int = 20,
    rescore: bool = True,
    data_dir: str | None = None,
    keep_sizes: bool = False,
    progress: Callable[[str], None] | None = None,
    jobs: int = 1,
    by_size: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """Compute and write the meta-evaluation of a results table (``load_runs``) under
    ``out``; returns the cells, the pooled rows and the paths written. With ``rescore``,
    each (preset, seed) task is rebuilt once from the runs' folders (:func:`load_cells`)
    for the block energy and variogram scores of runs with members
    (:func:`udora.experiments.meta.cells.block_metrics`), ranked with the stored observable
    metrics, for the interval AUC and for ``sizes``; without it only the stored metrics
    are ranked; files an earlier call wrote and this one does not are removed (the
    ``meta_by_size`` ones only without ``keep_sizes``). ``progress(step)`` is called as
    each long step starts. With ``sizes``,
    also the taus of observable metrics computed on that many pool points against the
    EU ranking (:func:`udora.experiments.meta.cells.subsample_taus`): ``meta_by_size.csv`` and
    the figure ``meta_by_size``; and the interval AUC of every config
    (:func:`udora.experiments.meta.iauc.iauc_regions`): ``meta_iauc.csv`` and its figures.
    ``jobs`` processes share the block scores and the rescoring of subsets. ``by_size``:
    the by-size rows computed before from the runs' folders (a classification release's
    ``meta_by_size.csv``, whose table has no run folders to rescore), written and drawn
    as they are instead of ``sizes``.

    Raises:
        ValueError: no (preset, seed) cell has ``min_methods`` configs to rank.
    """
    out = Path(out)
    kind = kind_of(table)  # one kind: their metrics differ
    out.mkdir(parents=True, exist_ok=True)
    if kind != "regression":
        return _write_kind_meta(
            table,
            out,
            kind,
            min_methods,
            n_boot,
            sizes,
            repeats,
            rescore,
            keep_sizes,
            progress,
            by_size,
        )
    stale = (
        []
        if rescore
        else [
            "meta_iauc.csv",
            "meta_iauc.png",
            "meta_iauc.pdf",
            "meta_iauc_curves.png",
            "meta_iauc_curves.pdf",
        ]
    )
    given, by_size = by_size, None  # rows computed before (a release's), else rescored
    if not (sizes and rescore) and given is None and not keep_sizes:
        stale += ["meta_by_size.csv", "meta_by_size.png", "meta_by_size.pdf"]
    for name in stale:  # outputs of an earlier call that this one does not write
        (out / name).unlink(missing_ok=True)
    with CellPool(jobs) as pool:  # one set of processes for the blocks and the subsets
        table, left_out = practitioner_configs(table)
        step = progress or (lambda _: None)
        early: list = []  # each cell's block values and interval AUC, computed as it loads
        start = lambda k, cell: early.append(pool.submit(cell_early, k, cell))  # noqa: E731
        loaded = load_cells(table, min_methods, data_dir, progress, start) if rescore else []
        step("ranking the configs")
        regions_rows = []
        for cell, future in zip(loaded, early, strict=True):
            values, rows = future.result()
            cell.scored_blocks.update(values)
            regions_rows += rows
        if rescore:
            table = with_block_metrics(table, loaded)  # the values above: nothing computed
        subsets = None
        if sizes and rescore and given is None:  # runs while this process ranks and draws
            subsets = submit_subsample_taus(
                loaded, pool, sizes, repeats, 0, "spearman_eu", min_methods
            )
        cells, pooled, written = _ranked(table, out, "regression", min_methods, n_boot, left_out)
        regions = None
        if rescore:
            step("interval AUC")
            regions = iauc_frame(regions_rows)
            write_text(out / "meta_iauc.csv", regions.to_csv(index=False))
            written.append(out / "meta_iauc.csv")
            if not regions.empty:
                written += iauc_figure(regions, out / "meta_iauc")
                written += iauc_curves_figure(regions, out / "meta_iauc_curves")
        if subsets is not None:
            step(f"rescoring subsets of {', '.join(map(str, sizes))} points")
        by_size = subsets() if subsets is not None else given
        if by_size is not None:
            write_text(out / "meta_by_size.csv", by_size.to_csv(index=False))
            written.append(out / "meta_by_size.csv")
            if not by_size.empty:
                written += size_figure(by_size, out / "meta_by_size", "spearman_eu")
                _append_text(out / "meta.md", size_markdown(by_size, "spearman_eu"))
        elif keep_sizes:
            _kept_sizes(out, "regression")
        return {
            "cells": cells,
            "pooled": pooled,
            "by_size": by_size,
            "iauc": regions,
            "written": written,
            "left_out": left_out,
        }


def _write_kind_meta(
    table: pd.DataFrame,
    out: Path,
    kind: str,
    min_methods: int,
    n_boot: int,
    sizes: tuple[int, ...],
    repeats: int,
    rescore: bool,
    keep_sizes: bool,
    progress: Callable[[str], None] | None,
    given: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """:func:`write_meta` for a kind other than regression (classification): the taus of
    its observable and oracle sides (:func:`udora.experiments.meta.taus.sides`), pooled,
    and with ``sizes`` the observables rescored on subsets
    (:func:`udora.experiments.meta.kind_sizes.subsample_taus`); the regression kind's
    block scores and interval AUC have no counterpart here."""
    from udora.experiments.meta.kind_sizes import subsample_taus

    stale = ["meta_iauc.csv", "meta_iauc.png", "meta_iauc.pdf", "meta_iauc_curves.png"]
    stale += ["meta_iauc_curves.pdf"]
    if not (sizes and rescore) and given is None and not keep_sizes:
        stale += ["meta_by_size.csv", "meta_by_size.png", "meta_by_size.pdf"]
    for name in stale:
        (out / name).unlink(missing_ok=True)
    step = progress or (lambda _: None)
    table, left_out = practitioner_configs(table)
    step("ranking the configs")
    cells, pooled, written = _ranked(table, out, kind, min_methods, n_boot, left_out)
    by_size = given
    if given is None and sizes and rescore:
        step(f"rescoring subsets of {', '.join(map(str, sizes))} points")
        by_size = subsample_taus(table, kind, sizes, repeats, 0, "spearman_eu", min_methods)
    if by_size is not None:
        write_text(out / "meta_by_size.csv", by_size.to_csv(index=False))
        written.append(out / "meta_by_size.csv")
        if not by_size.empty:
            written += size_figure(by_size, out / "meta_by_size", "spearman_eu", kind)
            _append_text(out / "meta.md", size_markdown(by_size, "spearman_eu", kind))
    elif keep_sizes:
        _kept_sizes(out, kind)
    return {
        "cells": cells,
        "pooled": pooled,
        "by_size": by_size,
        "iauc": None,
        "written": written,
        "left_out": left_out,
    }


def _kept_sizes(out: Path, kind: str) -> None:
    """With ``keep_sizes``, meta.md keeps the by-size section of the rows an earlier call
    left in ``out`` (the report's section does not rescore them)."""
    kept = out / "meta_by_size.csv"
    if kept.is_file():
        rows = pd.read_csv(kept, float_precision="round_trip")
        if not rows.empty:
            _append_text(out / "meta.md", size_markdown(rows, "spearman_eu", kind))


def _append_text(path: Path, text: str) -> None:
    """``text`` after ``path``'s, written whole (atomically) as every file here is."""
    write_text(path, path.read_text() + "\n" + text)


def _ranked(
    table: pd.DataFrame,
    out: Path,
    kind: str,
    min_methods: int,
    n_boot: int,
    left_out: dict[str, str],
) -> tuple[pd.DataFrame, pd.DataFrame, list[Path]]:
    """(cells, pooled, files written): the taus of ``kind``'s two sides per cell, pooled,
    written as meta_cells.csv, meta_pooled.csv, meta.md and the heatmap."""
    cells = cell_taus(table, min_methods=min_methods, kind=kind)
    if cells.empty:
        raise UserError(
            f"no (preset, seed) has {min_methods} or more ok configs to rank; "
            "the meta-evaluation needs several methods on the same preset and seed"
        )
    pooled = pooled_taus(cells, n_boot=n_boot)
    written = [out / "meta_cells.csv", out / "meta_pooled.csv", out / "meta.md"]
    write_text(written[0], cells.to_csv(index=False))
    write_text(written[1], pooled.to_csv(index=False))
    presets = cells["preset"].nunique()
    n_cells = len(cells[["preset", "seed"]].drop_duplicates())
    which = "" if kind == "regression" else f" ({kind})"
    text = (
        f"# Which observable metrics rank methods like the oracle{which}\n\n"
        f"Kendall's tau-b between rankings of the configs, {n_cells} (preset, seed) cells "
        f"on {presets} presets, averaged over seeds then presets; 95% bootstrap interval "
        "over presets (docs/meta_evaluation.md). "
        + left_out_line(left_out)
        + "\n\n"
        + markdown(pooled, kind)
    )
    title = f"Observable vs oracle rankings ({presets} presets)"
    drawn = heatmap(pooled, out / "meta_tau", title, kind)
    if drawn:
        text += "\n![observable against oracle taus](meta_tau.png)\n"
    write_text(written[2], text)
    return cells, pooled, written + drawn


def size_markdown(by_size: pd.DataFrame, oracle: str, kind: str = "regression") -> str:
    """The by-size section of meta.md: per observable (rows: the kind's, which
    ``meta_by_size.png`` draws, then any other in the rows) and number of evaluation
    points (columns), the mean tau over cells against ``oracle`` on the whole pool
    ("n/a" where no cell has one), and the figure."""
    mean = by_size.groupby(["observable", "size"])["tau"].mean().unstack("size")
    known = [m for m in sides(kind)[0] if m in mean.index]  # the kind's order, then others
    order = known + sorted(set(mean.index) - set(known))
    lines = [
        "## By number of evaluation points",
        "",
        f"Mean Kendall's tau-b over (preset, seed) cells between each observable computed "
        f"on random subsets of the pool and {oracle} on the whole pool (a size at least "
        "the pool is the whole pool, once).",
        "",
        "| observable | " + " | ".join(str(c) for c in mean.columns) + " |",
        "|---|" + "---|" * len(mean.columns),
    ]
    for obs in order:
        lines.append(
            f"| {obs} | "
            + " | ".join("n/a" if np.isnan(v) else f"{v:+.2f}" for v in mean.loc[obs].to_numpy())
            + " |"
        )
    return "\n".join([*lines, "", "![taus by number of points](meta_by_size.png)", ""])


def practitioner_configs(table: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str]]:
    """(the runs of the configs ``udora meta`` and the report's meta section rank, {config
    left out: why}). Methods that read the task's generating prior (``uses_task_prior``,
    ``gp_oracle``) are left out: no practitioner has it, so how metrics order them answers
    no practical question. ``gp_linear`` fits its own kernel and stays. A run with a
    ``--set method_seed`` override replicates its config at another fit seed (the noise
    floor, :mod:`udora.experiments.rankings.noise`): ranked beside it, it would count one
    method twice in its cell."""
    from udora.methods.registry import method_infos

    # read without importing the built-in modules (ngboost's import alone takes seconds)
    prior = {info.name: info.uses_task_prior for info in method_infos()}

    def reads_prior(method: str) -> bool:
        return prior.get(method, False)  # a plugin not installed here: ranked like any

    method = table["method"] if "method" in table else table["config"]  # a table of labels
    pairs = pd.DataFrame({"config": table["config"], "method": method})
    pairs = pairs.drop_duplicates().sort_values("config")
    left_out = {
        c: "reads the task's generating prior, which no practitioner has"
        for c, m in pairs.itertuples(index=False)
        if reads_prior(m)
    }
    if "has_split" in table:  # total-only external runs have no AU/EU to rank
        total_only = ~table["has_split"].astype(bool)
        for c in sorted(set(table.loc[total_only, "config"])):
            left_out[c] = "total-only predictions (no AU/EU split)"
    from udora.experiments.results.store import method_seed_variants

    for c in sorted(method_seed_variants(table) - set(left_out)):  # replicates a config
        left_out[c] = "a method_seed variant (noise floor)"  # the rankings' words
    return table[~table["config"].isin(list(left_out))], left_out


def left_out_line(left_out: dict[str, str]) -> str:
    """One sentence naming the configs left out and why ("" when none)."""
    if not left_out:
        return ""
    grouped: dict[str, list[str]] = {}  # one clause per reason: a noise floor is dozens
    for config, why in left_out.items():
        grouped.setdefault(why, []).append(config)
    parts = [
        f"{', '.join(configs)}: {why}"
        if len(configs) <= 3
        else f"{len(configs)} configs ({', '.join(configs[:2])}, ...): {why}"
        for why, configs in grouped.items()
    ]
    return f"Left out of the rankings: {'; '.join(parts)}."
