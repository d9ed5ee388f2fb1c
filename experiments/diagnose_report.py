"""The summary of a ``udora diagnose`` folder: a table per method and size, and figures.

Every ok ``decomposition.json`` under the folder is one row (:func:`collect`). Rows are
averaged over presets only within one group: the same method, overrides (hence config and
``n``), seed, M and K (never across configs). The pooled standard error of a mean over P
presets is ``sqrt(sum se_p^2) / P`` (independent draws per preset). Written by
:func:`write_summary`: ``summary.csv`` (one row per diagnosis), ``summary.md`` (the group
means) and the figures (PNG and PDF): ``errors_by_n`` when a method has several sizes
(the paper's Figure 3 layout) and ``shares`` (estimation vs approximation share per method).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from udora.experiments.diagnose import RECORD

GROUP = ["method", "label", "n_train", "seed", "draws", "scale"]
VALUES = ["estimation", "approximation", "sum", "eu_target"]


def collect(folder: str | Path) -> pd.DataFrame:
    """One row per ok diagnosis under ``folder``: identity, normalised pool means and
    their standard errors, the sum check's z and the estimation share."""
    rows = []
    for path in sorted(Path(folder).glob(f"*/*/*/*/{RECORD}")):
        record = json.loads(path.read_text())
        if record.get("status") != "ok":
            continue
        norm = record["normalised"]
        rows.append({
            **{k: record[k] for k in ("preset", *GROUP)},
            **{k: norm[k] for k in VALUES},
            **{f"{k}_se": norm[f"{k}_se"] for k in ("estimation", "approximation", "sum")},
            "sum_check_z": record["sum_check"]["z"],
            "estimation_share": record["shares"]["estimation_share"],
            "seconds": sum(record["timings"].get(k, 0.0) for k in ("fit", "draws", "references")),
        })  # fmt: skip
    columns = ["preset", *GROUP, *VALUES, "estimation_se", "approximation_se", "sum_se",
               "sum_check_z", "estimation_share", "seconds"]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def _pooled_se(se: pd.Series) -> float:
    values = se.to_numpy(dtype=float)
    return float(np.sqrt(np.nansum(values**2)) / values.size)


def group_means(rows: pd.DataFrame) -> pd.DataFrame:
    """Means over presets per :data:`GROUP`, pooled standard errors, the largest |z| of
    the sum check and the number of presets."""
    if rows.empty:
        return pd.DataFrame(columns=[*GROUP, "presets", *VALUES])
    out = []
    for key, part in rows.groupby(GROUP, sort=True, dropna=False):
        entry = dict(zip(GROUP, key, strict=True))
        entry["presets"] = len(part)
        for name in VALUES:
            entry[name] = float(part[name].mean())
        for name in ("estimation", "approximation", "sum"):
            entry[f"{name}_se"] = _pooled_se(part[f"{name}_se"])
        entry["max_abs_z"] = float(part["sum_check_z"].abs().max())
        entry["estimation_share"] = entry["estimation"] / entry["sum"]
        entry["seconds"] = float(part["seconds"].sum())
        out.append(entry)
    return pd.DataFrame(out)


def _cell(value: float, se: float) -> str:
    return f"{value:.4f} ± {se:.4f}" if math.isfinite(se) else f"{value:.4f}"


def markdown(groups: pd.DataFrame) -> str:
    """The group means as a Markdown table (values normalised by the target variance)."""
    lines = [
        "| method | n | presets | estimation | approximation | est. + approx. | EU target "
        "| max abs z | estimation share | config |",
        "|---|---:|---:|---|---|---|---:|---:|---:|---|",
    ]
    for _, g in groups.iterrows():
        lines.append(
            f"| {g['method']} | {g['n_train']} | {g['presets']} "
            f"| {_cell(g['estimation'], g['estimation_se'])} "
            f"| {_cell(g['approximation'], g['approximation_se'])} "
            f"| {_cell(g['sum'], g['sum_se'])} | {g['eu_target']:.4f} | {g['max_abs_z']:.2f} "
            f"| {g['estimation_share']:.2f} | {g['label']}, seed {g['seed']}, "
            f"M {g['draws']}, K {g['scale']} |"
        )
    return "\n".join(lines) + "\n"


def _save(fig: Any, stem: Path) -> list[Path]:
    fig.tight_layout()
    paths = [stem.with_suffix(".png"), stem.with_suffix(".pdf")]
    for path in paths:
        fig.savefig(path, dpi=150)
    return paths


def errors_by_n_figure(groups: pd.DataFrame, stem: Path) -> list[Path]:
    """Normalised estimation (solid) and approximation (dashed) against n, one colour per
    method, MC standard errors as bars; symlog y (pointwise-averaged estimation can be
    slightly negative)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for i, (method, part) in enumerate(groups.groupby("method", sort=True)):
        part = part.sort_values("n_train")
        colour = f"C{i}"
        for name, style in (("estimation", "-"), ("approximation", "--")):
            ax.errorbar(part["n_train"], part[name], yerr=part[f"{name}_se"], fmt=f"o{style}",
                        color=colour, capsize=3, label=f"{method}: {name}")  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=1e-3)
    ax.set(xlabel="training points n", ylabel="error / Var(y) (mean over presets)",
           title="Estimation and approximation error against n")  # fmt: skip
    ax.legend(fontsize=8)
    paths = _save(fig, stem)
    plt.close(fig)
    return paths


def shares_figure(groups: pd.DataFrame, stem: Path) -> list[Path]:
    """Per method (one row per group), the normalised estimation and approximation means
    as stacked horizontal bars, with the EU target as a tick."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = groups.sort_values("estimation_share")
    labels = [f"{g.method} (n={g.n_train})" for g in groups.itertuples()]
    y = np.arange(len(groups))
    fig, ax = plt.subplots(figsize=(6.4, 1.2 + 0.42 * len(groups)))
    est = groups["estimation"].to_numpy(dtype=float)
    app = groups["approximation"].to_numpy(dtype=float)
    ax.barh(y, app, color="C1", label="approximation")
    ax.barh(y, est, left=app, color="C0", label="estimation")
    ax.plot(groups["eu_target"], y, "k|", markersize=14, label="EU target")
    ax.set_yticks(y, labels, fontsize=8)
    ax.set(xlabel="error / Var(y) (mean over presets)",
           title="Where the epistemic risk comes from")  # fmt: skip
    ax.legend(fontsize=8, loc="lower right")
    paths = _save(fig, stem)
    plt.close(fig)
    return paths


def write_summary(folder: str | Path) -> dict[str, Any]:
    """Write summary.csv, summary.md and the figures under ``folder``; what was written."""
    folder = Path(folder)
    rows = collect(folder)
    groups = group_means(rows)
    written = []
    rows.to_csv(folder / "summary.csv", index=False)
    written.append(folder / "summary.csv")
    text = (f"# Diagnostics: {folder.name}\n\nValues are pool means normalised by the "
            "variance of the pool's targets, averaged over presets (docs/diagnostics.md).\n\n"
            + markdown(groups))  # fmt: skip
    (folder / "summary.md").write_text(text)
    written.append(folder / "summary.md")
    if not groups.empty:
        if groups.groupby("method")["n_train"].nunique().max() > 1:
            written += errors_by_n_figure(groups, folder / "errors_by_n")
        written += shares_figure(groups, folder / "shares")
    return {"rows": rows, "groups": groups, "written": written}
