"""The summary of a ``udora diagnose`` folder: a table per method and size, and figures.

Every ok ``decomposition.json`` under the folder is one row (:func:`collect`). Rows are
averaged over presets only within one group: the same method, full config, other
overrides, ``--n`` level (or each preset's own ``n_train``, as a benchmark grid does),
seed, M and K (never across configs). The pooled standard error of a
mean over P presets is ``sqrt(sum se_p^2) / P`` (independent draws per preset). Written by
:func:`write_summary`: ``summary.csv`` (one row per diagnosis), ``summary.md`` (the group
means, and the means over n on matched presets) and the figures (PNG and PDF):
``errors_by_n`` when a config has several n (the paper's Figure 3 layout; only presets
that have every n) and ``shares`` (estimation vs approximation per group).
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from udora.errors import UserError
from udora.experiments.diagnostics.diagnose import RECORD
from udora.experiments.results.figures import save_figure
from udora.experiments.run.overrides import Overrides
from udora.oracle.atomic import write_text

SERIES = ["method", "config", "setting", "seed", "draws", "scale"]  # one config, all n
GROUP = [*SERIES, "n"]  # n: the --n level, 0 for each preset's own n_train
VALUES = ["estimation", "approximation", "sum", "eu_target"]
# the exact projection form of an affine class (blr, gp_linear; diagnostics/projection.py)
PROJECTION = ["estimation", "approximation", "in_class_variance", "finite_k"]


def _setting(overrides: Overrides) -> str:
    """The overrides other than ``preset.n_train`` as ``k=v,...`` (``default`` if none)."""
    task = {k: v for k, v in overrides.task.items() if k != "n_train"}
    rest = replace(overrides, task=task).flat()
    if not rest:
        return "default"
    return ",".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in sorted(rest.items()))


def collect(folder: str | Path) -> pd.DataFrame:
    """One row per ok diagnosis of the current schema under ``folder``: identity, the
    method's full config (JSON), the other overrides, normalised pool means and their
    standard errors, the sum check and the estimation share."""
    from udora.experiments.diagnostics.diagnose import is_current, load_diagnosis

    rows = []
    for path in sorted(Path(folder).glob(f"*/*/*/*/{RECORD}")):
        record = load_diagnosis(path.parent)  # None when damaged: not an ok diagnosis
        if record is None or record.get("status") != "ok" or not is_current(record):
            continue
        norm = record["normalised"]
        proj = (record.get("projection") or {}).get("normalised", {})
        overrides = Overrides.from_flat(record["overrides"])
        rows.append(
            {
                "preset": record["preset"],
                "method": record["method"],
                "config": json.dumps(record["config"], sort_keys=True),
                "setting": _setting(overrides),
                "seed": record["seed"],
                "draws": record["draws"],
                "scale": record["scale"],
                "n": int(overrides.task.get("n_train", 0)),
                "n_train": record["n_train"],
                **{k: norm[k] for k in VALUES},
                **{f"{k}_se": norm[f"{k}_se"] for k in ("estimation", "approximation", "sum")},
                "sum_check_z": record["sum_check"]["z"],
                "sum_check_p": record["sum_check"]["p"],
                "estimation_share": record["shares"]["estimation_share"],
                **{f"projection_{k}": proj.get(k, np.nan) for k in PROJECTION},
                "seconds": sum(
                    record["timings"].get(k, 0.0) for k in ("fit", "draws", "references")
                ),
                "folder": str(path.parent.relative_to(folder)),
            }
        )
    columns = [
        "preset",
        *GROUP,
        "n_train",
        *VALUES,
        "estimation_se",
        "approximation_se",
        "sum_se",
        "sum_check_z",
        "sum_check_p",
        "estimation_share",
        *[f"projection_{k}" for k in PROJECTION],
        "seconds",
        "folder",
    ]
    return pd.DataFrame(rows, columns=columns)


def _pooled_se(se: pd.Series) -> float:
    values = se.to_numpy(dtype=float)
    return float(np.sqrt(np.nansum(values**2)) / values.size)


def group_means(rows: pd.DataFrame, matched: bool = False) -> pd.DataFrame:
    """Means over presets per :data:`GROUP` (one method config, n, seed, M, K), pooled
    standard errors, the largest |z| of the sum check and the presets averaged.

    With ``matched``, each series (:data:`SERIES`: every n of one config) keeps only the
    presets it has at all of its n, so a curve over n compares the same presets.

    Raises:
        ValueError: a group holds one preset twice (two task identities: another data
            table, say); its folders are named.
    """
    if rows.empty:
        return pd.DataFrame(columns=[*GROUP, "presets", *VALUES])
    if matched:
        keep = []
        for _, series in rows.groupby(SERIES, sort=False):
            sizes = series.groupby("preset")["n"].nunique()
            full = sizes[sizes == series["n"].nunique()].index
            keep.append(series[series["preset"].isin(full)])
        rows = pd.concat(keep)
    out = []
    for key, part in rows.groupby(GROUP, sort=True):
        twice = part[part["preset"].duplicated(keep=False)]
        if not twice.empty:
            raise UserError(
                f"{twice['preset'].iloc[0]} appears twice in one group (another task "
                f"identity?): {', '.join(twice['folder'])}; keep one"
            )
        entry = dict(zip(GROUP, key, strict=True))
        entry["presets"] = len(part)
        entry["preset_names"] = ",".join(sorted(part["preset"]))
        for name in VALUES:
            entry[name] = float(part[name].mean())
        for name in ("estimation", "approximation", "sum"):
            entry[f"{name}_se"] = _pooled_se(part[f"{name}_se"])
        entry["max_abs_z"] = float(part["sum_check_z"].abs().max())
        entry["min_p"] = float(part["sum_check_p"].min())
        entry["estimation_share"] = entry["estimation"] / entry["sum"]
        for name in PROJECTION:
            column = part.get(f"projection_{name}", pd.Series(np.nan, index=part.index))
            values = column.to_numpy(dtype=float)
            entry[f"projection_{name}"] = (
                float(values.mean()) if np.isfinite(values).all() else np.nan
            )
        entry["seconds"] = float(part["seconds"].sum())
        out.append(entry)
    return pd.DataFrame(out)


def _value(value: float) -> str:
    """A number, or n/a (a class without an intercept: docs/diagnostics.md)."""
    return f"{value:.4f}" if math.isfinite(value) else "n/a"


def _cell(value: float, se: float) -> str:
    return f"{value:.4f} ± {se:.4f}" if math.isfinite(se) else f"{value:.4f}"


def markdown(groups: pd.DataFrame) -> str:
    """The group means as a Markdown table (values normalised by the target variance)."""
    lines = [
        "| method | setting | n | presets | estimation | approximation | est. + approx. "
        "| EU target | max abs z | min p | estimation share | seed, M, K |",
        "|---|---|---:|---:|---|---|---|---:|---:|---:|---:|---|",
    ]
    for _, g in groups.iterrows():
        lines.append(
            f"| {g['method']} | {g['setting']} | {g['n'] or 'preset'} | {g['presets']} "
            f"| {_cell(g['estimation'], g['estimation_se'])} "
            f"| {_cell(g['approximation'], g['approximation_se'])} "
            f"| {_cell(g['sum'], g['sum_se'])} | {g['eu_target']:.4f} | {g['max_abs_z']:.2f} "
            f"| {g['min_p']:.3f} | {g['estimation_share']:.2f} "
            f"| {g['seed']}, {g['draws']}, {g['scale']} |"
        )
    exact = groups[groups.get("projection_estimation", pd.Series(dtype=float)).notna()]
    if not exact.empty:
        lines += [
            "",
            "The projection form (Equations 28-30, exact for an affine class) beside the "
            "Monte Carlo split: the Monte Carlo approximation is smaller by the in-class "
            "share of the posterior variance, tr(P C P) / N, plus the finite-K remainder "
            '(docs/diagnostics.md, "Two readings of Appendix B").',
            "",
            "| method | setting | n | presets | projection estimation | projection approximation "
            "| Monte Carlo estimation | Monte Carlo approximation | in-class variance "
            "| finite-K remainder |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for _, g in exact.iterrows():
            lines.append(
                f"| {g['method']} | {g['setting']} | {g['n'] or 'preset'} | {g['presets']} "
                f"| {g['projection_estimation']:.4f} | {g['projection_approximation']:.4f} "
                f"| {g['estimation']:.4f} | {g['approximation']:.4f} "
                f"| {_value(g['projection_in_class_variance'])} "
                f"| {_value(g['projection_finite_k'])} |"
            )
    return "\n".join(lines) + "\n"


def _series_labels(groups: pd.DataFrame) -> dict[tuple, str]:
    """A legend label per series: the method, plus what tells its series apart."""
    labels = {}
    for key, _ in groups.groupby(SERIES, sort=True):
        entry = dict(zip(SERIES, key, strict=True))
        same = groups[groups["method"] == entry["method"]].groupby(SERIES).ngroups
        extra = (
            f" [{entry['setting']}, seed {entry['seed']}, M {entry['draws']}, K {entry['scale']}]"
            if same > 1
            else ""
        )
        labels[key] = f"{entry['method']}{extra}"
    return labels


def errors_by_n_figure(groups: pd.DataFrame, stem: Path) -> list[Path]:
    """Normalised estimation (solid, circles) and approximation (dashed, squares) against n,
    one colour per series (one method config), MC standard errors as bars; log y, or symlog
    when a mean minus its error is not positive (estimation is a difference of errors and
    can be slightly negative). ``groups`` should be matched over n."""
    import matplotlib.pyplot as plt  # Agg: set by udora.experiments.results.figures

    labels = _series_labels(groups)
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for i, (key, part) in enumerate(groups.groupby(SERIES, sort=True)):
        part = part.sort_values("n")
        for name, style in (("estimation", "o-"), ("approximation", "s--")):
            ax.errorbar(
                part["n"],
                part[name],
                yerr=part[f"{name}_se"],
                fmt=style,
                color=f"C{i}",
                capsize=3,
                label=f"{labels[key]}: {name}",
            )
    ax.set_xscale("log")
    means = groups[["estimation", "approximation"]].to_numpy(dtype=float)
    low = means - groups[["estimation_se", "approximation_se"]].fillna(0).to_numpy(dtype=float)
    if np.all(low > 0):
        ax.set_yscale("log")
    else:  # a mean below zero (estimation is a difference): linear around zero
        ax.set_yscale("symlog", linthresh=1e-3)
    presets = sorted(set(",".join(groups["preset_names"]).split(",")))
    ax.set(
        xlabel="training points n",
        ylabel="error / Var(y), mean over presets",
        title=f"Estimation and approximation error against n\n({len(presets)} presets "
        "with every n)",
    )
    ax.legend(fontsize=8)
    return save_figure(fig, stem)


def shares_figure(groups: pd.DataFrame, stem: Path) -> list[Path]:
    """Per group, the normalised estimation and approximation means as stacked horizontal
    bars, with the EU target as a tick."""
    import matplotlib.pyplot as plt  # Agg: set by udora.experiments.results.figures

    labels = _series_labels(groups)
    groups = groups.sort_values("estimation_share")
    names = [
        labels[tuple(g[k] for k in SERIES)] + (f" (n={g['n']})" if g["n"] else "")
        for _, g in groups.iterrows()
    ]
    y = np.arange(len(groups))
    fig, ax = plt.subplots(figsize=(7.6, 1.6 + 0.42 * len(groups)))
    est = groups["estimation"].to_numpy(dtype=float)
    app = groups["approximation"].to_numpy(dtype=float)
    ax.barh(y, app, color="C1", label="approximation")
    ax.barh(y, est, left=app, color="C0", label="estimation")
    ax.plot(groups["eu_target"], y, "k|", markersize=14, label="EU target")
    ax.set_yticks(y, names, fontsize=8)
    ax.set(xlabel="error / Var(y), mean over presets", title="Where the epistemic risk comes from")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return save_figure(fig, stem)


def write_summary(folder: str | Path) -> dict[str, Any]:
    """Write summary.csv, summary.md and the figures under ``folder``; returns the rows,
    the group means and the paths written."""
    folder = Path(folder)
    rows = collect(folder)
    groups = group_means(rows)
    written = [folder / "summary.csv", folder / "summary.md"]
    write_text(written[0], rows.to_csv(index=False))
    text = (
        f"# Diagnostics: {folder.name}\n\nPool means normalised by the variance of the "
        "pool's targets, averaged over presets within one method config, n, seed, M "
        "and K (docs/diagnostics.md).\n\n" + markdown(groups)
    )
    by_n = group_means(rows, matched=True)
    by_n = by_n[by_n["n"] > 0] if not by_n.empty else by_n  # --n levels only
    several = not by_n.empty and by_n.groupby(SERIES)["n"].nunique().max() > 1
    if several:
        text += "\n## Against n, over the presets that have every n\n\n" + markdown(by_n)
    write_text(written[1], text)
    if not groups.empty:
        if several:
            written += errors_by_n_figure(by_n, folder / "errors_by_n")
        written += shares_figure(groups, folder / "shares")
    return {"rows": rows, "groups": groups, "by_n": by_n, "written": written}
