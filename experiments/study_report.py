"""A study in the report: its runs picked out of a results table, and its section.

``udora report`` calls :func:`study_section` when the folder holds a ``study.yaml``
(:mod:`udora.experiments.study`); the statistics and figures are
:mod:`udora.experiments.ablation` and :mod:`udora.experiments.ablation_figures`.
"""

from __future__ import annotations

from pathlib import Path

from udora.experiments.study import Study, is_number, level_name


def study_table(table, study: Study):
    """The rows of a runs table (``load_runs``) that belong to ``study``, with the factor's
    column (named ``study.factor``) holding the level: its value on a numeric scale, its
    name on the ordinal one.

    A row belongs when its method, preset and seed are the study's and its factor cell
    equals one of the levels (numbers compared by value, lists as their compact JSON,
    which is how the table stores them).
    """
    import pandas as pd

    column = study.factor if study.factor in table else f"override.{study.factor}"
    if column not in table:
        return table.iloc[0:0]
    level = pd.Series(None, index=table.index, dtype=object)
    numeric = pd.to_numeric(table[column], errors="coerce")
    for name, value in zip(study.level_names(), study.level_values(), strict=True):
        if is_number(value):
            mask = numeric == float(value)
        else:
            mask = table[column].astype(object) == (
                value if isinstance(value, str) else level_name(value)
            )
        level[mask] = float(value) if study.scale != "ordinal" else name
    from udora.oracle.preset import load_preset

    presets = {load_preset(p).name for p in study.preset_names()}
    keep = (
        level.notna()
        & table["method"].isin(study.methods)
        & table["preset"].isin(presets)
        & table["seed"].isin(study.seeds)
    )
    return table[keep].assign(**{study.factor: level[keep]})


def study_section(table, study: Study, out_dir, md) -> list[str]:
    """The report's ablation section for ``study`` (:func:`udora.experiments.ablation.
    ablation_lines` on :func:`study_table`)."""
    from udora.experiments.ablation import ablation_lines

    rows = study_table(table, study)
    if rows.empty:
        return [f"## Ablation: {study.name}", "", "(no runs of this study in the folder)", ""]
    numeric = study.scale != "ordinal"
    levels = [float(v) for v in study.level_values()] if numeric else study.level_names()
    spec = {"name": study.name, "factor": study.factor, "levels": levels, "scale": study.scale}
    lines = ablation_lines(rows, spec, Path(out_dir), md)
    head = (f"Study `{study.name}`: `{study.factor}` at {', '.join(study.level_names())} "
            f"({study.scale} scale), {rows['method'].nunique()} methods, "
            f"{rows['preset'].nunique()} presets, seeds {sorted(set(rows['seed']))}.")  # fmt: skip
    return [lines[0], "", head, *lines[1:]]
