"""A study in the report: its runs picked out of a results table, and its section.

``udora report`` calls :func:`study_section` when the folder holds a ``study.yaml``
(:mod:`udora.experiments.studies.study`); the statistics and figures are
:mod:`udora.experiments.studies.analysis` and :mod:`udora.experiments.studies.figures`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from udora.experiments.results.sections import ReportContext, ReportSection
from udora.experiments.studies import figures as figs
from udora.experiments.studies.analysis import METRICS, positions, runs, summarise
from udora.experiments.studies.figures import level_label as _label
from udora.experiments.studies.study import Study, is_number, read_study


def study_table(table, study: Study):
    """The rows of a runs table (``load_runs``) that belong to ``study``, with the factor's
    column (named ``study.factor``) holding the level: its value on a numeric scale, its
    name on the ordinal one.

    A row belongs when its method, preset and seed are the study's and its factor cell
    equals one of the levels (the table's typed override column: numbers compared by
    value, a list level with the sequence in the cell, item by item).
    """
    column = study.factor if study.factor in table else f"override.{study.factor}"
    if column not in table:
        return table.iloc[0:0]
    level = pd.Series(None, index=table.index, dtype=object)
    cells = table[column].astype(object)
    numeric = pd.to_numeric(cells, errors="coerce")
    for name, value in zip(study.level_names(), study.level_values(), strict=True):
        if is_number(value):
            mask = numeric == float(value)
        elif isinstance(value, list):
            mask = cells.map(lambda cell, v=value: _same_items(cell, v))
        else:
            mask = cells == value
        level[mask.to_numpy(dtype=bool)] = float(value) if study.scale != "ordinal" else name
    from udora.oracle.preset import load_preset

    presets = {load_preset(p).name for p in study.preset_names()}
    keep = (
        level.notna()
        & table["method"].isin(study.methods)
        & table["preset"].isin(presets)
        & table["seed"].isin(study.seeds)
    )
    return table[keep].assign(**{study.factor: level[keep]})


def _same_items(cell, value: list) -> bool:
    """Whether a list-valued cell (a tuple, or the array parquet reads it back as) holds
    the items of ``value``."""
    if isinstance(cell, str) or not isinstance(cell, tuple | list | np.ndarray):
        return False
    return len(cell) == len(value) and all(a == b for a, b in zip(cell, value, strict=True))


def study_section(table, study: Study, out_dir, md) -> list[str]:
    """The report's ablation section for ``study`` (:func:`udora.experiments.studies.analysis.
    ablation_lines` on :func:`study_table`)."""
    rows = study_table(table, study)
    if rows.empty:
        return [f"## Ablation: {study.name}", "", "(no runs of this study in the folder)", ""]
    numeric = study.scale != "ordinal"
    levels = [float(v) for v in study.level_values()] if numeric else study.level_names()
    spec = {"name": study.name, "factor": study.factor, "levels": levels, "scale": study.scale}
    lines = ablation_lines(rows, spec, Path(out_dir), md)
    head = (
        f"Study `{study.name}`: `{study.factor}` at {', '.join(study.level_names())} "
        f"({study.scale} scale), {rows['method'].nunique()} methods, "
        f"{rows['preset'].nunique()} presets, seeds {sorted(set(rows['seed']))}."
    )
    return [lines[0], "", head, *lines[1:]]


SHOWN = {
    "negative": "share negative",
    "significant_negative": "share significantly negative",
    "mean_slope": "mean slope",
    "w_levels": "W across levels",
    "one_minus_w_levels": "1 - W across levels",
    "w_presets": "W across presets",
    "one_minus_w_presets": "1 - W across presets",
    "shift_sd": "sd of shift",
}


def _w(x: float) -> str:
    return f"{x:.3f}" if np.isfinite(x) else "n/a"


def pair_table(slopes: pd.DataFrame) -> pd.DataFrame:
    """(methods, presets) of text: each cell's slope +- its standard error, ``*`` when
    significantly negative, ``n/a`` when undefined (fewer than two finite runs)."""

    def cell(r) -> str:
        if not np.isfinite(r.slope):
            return "n/a"
        se = f" ± {r.stderr:.3f}" if np.isfinite(r.stderr) else ""
        return f"{r.slope:+.3f}{se}{' *' if r.significant_negative else ''}"

    text = pd.Series([cell(r) for r in slopes.itertuples()], index=slopes.index)
    return text.unstack("preset").fillna("")


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%" if np.isfinite(x) else "n/a"


def _paragraphs(*parts: str) -> list[str]:
    return [line for part in parts for line in (part, "")]


def _metric_lines(name: str, metric: str, r: dict, xname: str, md: Callable) -> list[str]:
    """The text and tables of one metric's :func:`summarise` entry ``r``."""
    sh, ag, p = r["shares"], r["agreement"], r["paired"]
    return _paragraphs(
        f"### {name}: {metric}",
        f"{_pct(sh['negative'])} of {sh['pairs']} (method, preset) pairs have a negative "
        f"slope against {xname}, {_pct(sh['significant_negative'])} significantly; mean "
        f"slope {sh['mean_slope']:+.4f}. Per (method, preset), the slope ± its standard "
        "error (* significantly negative):",
        md(pair_table(r["slopes"])),
        "Per method, over presets:",
        md(r["by_method"].rename(columns=SHOWN)),
        "Per level: the mean over (method, preset) cells, its shift (the level's mean minus "
        "each cell's mean over levels, averaged over cells), the sd of that shift over cells, "
        "and the number of cells:",
        md(r["levels"].rename(index=_label, columns=SHOWN)),
        f"Kendall's W across levels {_w(ag['w_levels'])} (1 - W "
        f"{_w(ag['one_minus_w_levels'])}; {ag['presets']} presets, at least "
        f"{ag['methods_levels']} methods); across presets {_w(ag['w_presets'])} (1 - W "
        f"{_w(ag['one_minus_w_presets'])}; {ag['levels']} levels, at least "
        f"{ag['methods_presets']} methods). W needs at least two methods ranked by at least "
        "two raters; n/a otherwise.",
        *(
            ()
            if p is None
            else (
                f"{_label(p['second'])} - {_label(p['first'])}: mean {p['mean']:+.4f} (sd "
                f"{p['sd']:.4f}) over {p['n']} pairs; {p['positive']} positive, {p['negative']} "
                f"negative, sign test p = {p['p_value']:.3g}.",
            )
        ),
    )


def ablation_lines(table, study: dict, out_dir: Path, md: Callable) -> list[str]:
    """The markdown lines of the report section "## Ablation: <name>", figures saved.

    ``study``: ``name``, ``factor``, ``levels``, ``scale``, optional ``default_level`` and
    ``metrics`` (default :data:`METRICS`). ``md(frame, index=True)`` renders a table. Per
    metric the section gives the slope shares, the mean slope per method, the per-level
    means and shifts, W and 1 - W both ways and, for two levels, the paired differences;
    each figure is written as PNG and PDF into ``out_dir`` and the PNG is linked.
    """
    name, factor, scale = study["name"], study["factor"], study["scale"]
    levels, default = list(study["levels"]), study.get("default_level")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = "ablation_" + re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").lower()
    xname = {"log2": f"log2({factor})", "linear": factor, "ordinal": f"{factor} (level index)"}
    result = summarise(table, factor, levels, scale, default, study.get("metrics", METRICS))
    w_keys = ("w_levels", "one_minus_w_levels", "w_presets", "one_minus_w_presets")
    head = pd.DataFrame.from_dict(
        {m: {**r["shares"], **{k: r["agreement"][k] for k in w_keys}} for m, r in result.items()},
        orient="index",
    ).rename_axis("metric")
    unset = f"; runs that leave it unset ran at {default!r}" if default is not None else ""
    lines = _paragraphs(
        f"## Ablation: {name}",
        f"`{factor}` over {', '.join(map(_label, levels))}{unset}. Per (method, preset): OLS "
        f"slope against {xname[scale]} on every ok run (significant: 95% t interval, n - 2 "
        "df, below 0); "
        "shift = a level's seed mean minus the mean over levels (cells complete over levels). "
        "W across levels: raters = levels, mean over presets; across presets: the reverse.",
        md(head.rename(columns=SHOWN)),
    )
    for metric, r in result.items():
        lines += _metric_lines(name, metric, r, xname[scale], md)
        per_run = runs(table, factor, levels, metric, default)
        pos = positions(levels, scale)
        drawn = figs.study_figures(r, per_run, levels, pos, metric, factor, xname[scale])
        links = [
            f"![{metric} {k}]({figs.save(f, out, f'{stem}_{k}_{metric}')})"
            for k, f in drawn.items()
        ]
        lines += _paragraphs(" ".join(links))
    return lines


def _write(ctx: ReportContext) -> list[str]:
    study = read_study(ctx.results_dir)
    return study_section(ctx.table, study, ctx.out, ctx.markdown) if study is not None else []


SECTION = ReportSection("ablation", "Ablation", 20, _write)
