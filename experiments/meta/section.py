"""The report's meta-evaluation section (:func:`meta_section`), from the outputs of
:func:`udora.experiments.meta.outputs.write_meta`."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from udora.experiments.meta.outputs import (
    left_out_line,
    markdown,
    practitioner_configs,
    write_meta,
)
from udora.experiments.results.sections import ReportContext, ReportSection


def meta_section(table: pd.DataFrame, out: Path, data_dir: str | None = None) -> list[str]:
    """The report's meta-evaluation section, written under ``out / "meta"``, when some
    (preset, seed) has ok runs of at least 4 different methods; else no lines.

    The stored observable metrics, the block scores and the interval AUC as in
    ``udora meta`` (:func:`write_meta`, the usable cores sharing the block scores), without
    the number-of-points analysis (slow; run ``udora meta``). When the tasks cannot be
    rebuilt (a dataset is missing), the section ranks the stored metrics only and says why.
    """
    ok, _ = practitioner_configs(table)  # what write_meta ranks
    ok = ok[ok["status"] == "ok"]
    if ok.empty or ok.groupby(["preset", "seed"])["method"].nunique().max() < 4:
        return []
    title = "## Meta-evaluation: do observable metrics rank configs like the oracle?"
    note = []
    try:
        try:
            report = write_meta(
                table,
                out / "meta",
                data_dir=data_dir,
                keep_sizes=True,
                jobs=len(os.sched_getaffinity(0)),
            )
        except (FileNotFoundError, OSError, ValueError) as err:  # e.g. other data found now
            report = write_meta(table, out / "meta", rescore=False, keep_sizes=True)
            note = [
                f"The block scores and the interval AUC are left out: the tasks could not "
                f"be rebuilt ({err}).",
                "",
            ]
    except ValueError as err:  # e.g. every ranking undefined: say so, keep the report
        return [title, "", f"Not computed: {err}.", ""]
    pooled, cells = report["pooled"], report["cells"]
    n_cells = len(cells[["preset", "seed"]].drop_duplicates())
    lines = [
        title,
        "",
        f"Kendall's tau-b between the ranking of the configs by each observable metric "
        f"(rows) and by each oracle metric (columns), {n_cells} (preset, seed) cells with "
        "at least 4 configs, mean over seeds then presets, 95% bootstrap interval over "
        "presets (docs/metrics.md). "
        + left_out_line(report["left_out"])
        + " The same against the number of evaluation points: `udora meta RESULTS`.",
        "",
        *note,
        markdown(pooled),
        "![observable vs oracle tau](meta/meta_tau.png)",
        "",
    ]
    names = {p.name for p in report["written"]}
    if "meta_iauc.png" in names:
        lines += [
            "Interval AUC of each config's EU intervals on the exceedance task "
            "(f above its 0.9 quantile), the exact posterior as the `oracle` row:",
            "",
            "![interval AUC](meta/meta_iauc.png)",
            "",
            "![interval AUC over levels](meta/meta_iauc_curves.png)",
            "",
        ]
    by_size = out / "meta" / "meta_by_size.png"
    if by_size.is_file():  # written by `udora meta`, which this section does not rerun
        import datetime

        when = datetime.datetime.fromtimestamp(by_size.stat().st_mtime).strftime("%Y-%m-%d %H:%M")
        lines += [
            f"Agreement against the number of evaluation points, as `udora meta` wrote "
            f"it on {when} (rerun it after adding runs):",
            "",
            "![agreement by number of points](meta/meta_by_size.png)",
            "",
        ]
    return lines


def _write(ctx: ReportContext) -> list[str]:
    return meta_section(ctx.table, ctx.out, ctx.data_dir)


SECTION = ReportSection("meta", "Meta-evaluation", 30, _write)
