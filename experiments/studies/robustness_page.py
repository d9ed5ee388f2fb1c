"""docs/robustness.md from a ground-truth study's results folder (``udora robustness``);
its files (the runs' table, the commands) are :mod:`udora.experiments.studies.robustness_files`.

The statistics are :mod:`udora.experiments.studies.robustness`; this module writes them as
a page with the rank-shift figure, the paper's conclusions checked family by family, and
every failed run with its error.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from udora.errors import UserError
from udora.experiments.results.figures import save_figure
from udora.experiments.results.sections import markdown_table as _frame_table
from udora.experiments.studies.robustness import GP, family_of, rank_matrix, robustness
from udora.experiments.studies.robustness_files import (
    PAGE,
    csv,
    how_lines,
    is_tuned,
    load_study_runs,
    source_name,
    table_path,
    write_table,
)
from udora.oracle.atomic import write_text
from udora.scoring import registry

# The source paper's conclusions about methods that a ranking can test (§5 and §7): a
# statement, its methods, and what "holds" means for their mean EU rank among M methods.
PAPER = (
    ("deep ensembles are among the strongest for EU", ("nn_ensemble",), "top third"),
    (
        "NN-Ens, NN-Dropout, NN-Bag and NN-FSP are the most useful neural EU rankings",
        ("nn_ensemble", "nn_dropout", "nn_bagging", "fsp_laplace"),
        "top half",
    ),
    ("DEUP is comparatively weak for EU", ("deup",), "bottom half"),
    ("NGBoost-Bag is the clearest non-neural EU ranking", ("ngboost_bag",), "top half"),
    (
        "deep ensembles, FSP-Laplace and CatBoost-KGB are the most reliable starting points",
        ("nn_ensemble", "fsp_laplace", "catboost_kgb"),
        "top half",
    ),
)


def markdown_table(head: list[str], rows: list[list[str]]) -> list[str]:
    """The lines of a Markdown table of text cells."""
    return _frame_table(pd.DataFrame(rows, columns=head), index=False).splitlines()


def _holds(rank: float, methods: int, rule: str) -> bool:
    cut = {"top third": methods / 3, "top half": methods / 2}.get(rule)
    return rank <= cut if cut is not None else rank > methods / 2


def _interval(row) -> str:
    if not np.isfinite(row.tau):
        return "n/a"
    return f"{row.tau:.2f} [{row.low:.2f}, {row.high:.2f}]"


def _tau_lines(taus: pd.DataFrame, families: list[str]) -> list[str]:
    rows = []
    for metric, part in taus.groupby("metric", sort=False):
        by = {r.comparison: r for r in part.itertuples(index=False)}
        ceiling = by.get("gp (ceiling)")
        cells = [metric]
        for f in families:
            r = by.get(f)
            if r is None:
                cells.append("n/a")
                continue
            gap = getattr(r, "gap_low", float("nan"))
            beyond = np.isfinite(gap) and gap > 0  # the ceiling minus it, above 0
            cells.append(_interval(r) + (" **below the ceiling**" if beyond else ""))
        cells.append(_interval(ceiling) if ceiling is not None else "n/a")
        cells += [str(part["presets"].max()), str(part["methods"].max())]
        rows.append(cells)
    head = ["metric", *[f"GP vs {f}" for f in families], "GP vs GP (ceiling)", "presets", "methods"]
    return markdown_table(head, rows)


def _shift_figure(
    shifts: pd.DataFrame, families: list[str], docs: Path, seeds: list[int], page: str
) -> str | None:
    import matplotlib.pyplot as plt

    eu = shifts[shifts["metric"] == "EU Spearman"].sort_values("rank_gp")
    if eu.empty:
        return None
    fig, ax = plt.subplots(figsize=(7, 0.32 * len(eu) + 1.4))
    y = np.arange(len(eu))
    marks = ["o", "s", "^", "D"]
    for i, f in enumerate(families):
        ax.scatter(eu[f"rank_{f}"], y, marker=marks[i % 4], label=f, zorder=3)
    ax.scatter(eu["rank_gp"], y, marker="|", s=200, color="black", label="gp", zorder=4)
    ax.set_yticks(y, eu["method"])
    ax.invert_yaxis()
    ax.set_xlabel(f"mean EU-Spearman rank over presets (1 = best), seeds {seeds}")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    save_figure(fig, docs / "img" / f"{page}_eu_ranks")
    plt.close(fig)
    return f"img/{page}_eu_ranks.png"


def write_robustness_page(
    results: str | Path,
    docs: str | Path,
    reference_seeds=(2, 3),
    other_seeds=(0, 1),
    n_boot: int = 2000,
    page: str = PAGE,
) -> Path:
    """Write ``docs/<page>.md`` (and its figure) from the study in ``results`` (a
    results folder or the page's own table). From a folder it also writes the runs'
    table, ``docs/data/<page>_runs.parquet`` (every column but the run folder's path),
    from which the page regenerates without the folder."""
    table = load_study_runs(results)
    docs = Path(docs)
    (docs / "img").mkdir(parents=True, exist_ok=True)
    if Path(results).is_dir():
        write_table(table, docs / table_path(page))
    fam = family_of(table)
    families = [f for f in sorted(fam.unique()) if f != GP]
    if not families:
        raise UserError(
            f"{results}: no run under another ground truth than the GP "
            "(preset.truth); run the truth study (docs/robustness.md)"
        )
    taus, shifts = robustness(table, reference_seeds, other_seeds, n_boot)
    if taus.empty:
        raise UserError(
            f"{results}: the GP has no complete ranking at seeds "
            f"{list(reference_seeds)} and {list(other_seeds)}"
        )
    ok = table["status"] == "ok"
    tuned = is_tuned(table)
    configs = (
        "tuned configs (each family's own: `udora tune --set preset.truth=FAMILY` on "
        "the validation split of a tuning seed that is never scored)"
        if tuned
        else "their default configs"
    )
    page_opt = "" if page == PAGE else f" --page {page}"
    lines = [
        "# Beyond one prior: do the rankings survive other ground truths?"
        + (" (tuned configs)" if tuned else ""),
        "",
        f"Generated by `udora robustness {source_name(results, docs, page)} --docs docs{page_opt} "
        f"--reference-seeds {csv(reference_seeds)} --other-seeds {csv(other_seeds)}` "
        f"(the study's folder, or its runs' table `{table_path(page).as_posix()}` beside "
        f"this page, which regenerates the page without the folder) from {len(table)} "
        f"runs ({int(ok.sum())} ok, {int((~ok).sum())} failed): {table['preset'].nunique()} "
        f"presets, {table['method'].nunique()} methods at {configs}, the "
        f"families {', '.join([GP, *families])}. The GP is ranked at seeds "
        f"{list(reference_seeds)} (the reference) and {list(other_seeds)}; every other "
        f"family at {list(other_seeds)}. How the study was run: the end of this page.",
        "",
        "## How much a change of prior moves the rankings",
        "",
        "Kendall's tau-b between the reference ranking (mean rank over presets) and each "
        "other, with a 95 % bootstrap interval over presets. The ceiling compares the GP "
        "with itself at other seeds (no shared task): what noise alone allows. Every "
        "ranking of a metric is taken on the same presets and methods and the bootstrap "
        "draws the same presets for each, so a family is marked **below the ceiling** "
        "when the 95 % interval of the ceiling's tau minus its own lies above 0.",
        "",
        *_tau_lines(taus, families),
        "",
    ]
    figure = _shift_figure(shifts, families, docs, list(other_seeds), page)
    eu = shifts[shifts["metric"] == "EU Spearman"].sort_values("rank_gp")
    if not eu.empty:
        lines += [
            "## Rank shifts (EU Spearman)",
            "",
            "Mean rank over presets (1 = best) under the GP and each family at the same "
            "seeds (same pools, training inputs and noise: only the truth differs), and the "
            "shift between the two GP seed sets, the size a shift must exceed to mean more "
            "than noise.",
            "",
        ]
        head = ["method", "gp", *[f"{f} (shift)" for f in families], "GP other seeds (shift)"]
        rows = [
            [
                r["method"],
                f"{r['rank_gp']:.2f}",
                *[f"{r[f'rank_{f}']:.2f} ({r[f'shift_{f}']:+.2f})" for f in families],
                f"{r['shift_gp_seeds']:+.2f}",
            ]
            for _, r in eu.iterrows()
        ]
        lines += [*markdown_table(head, rows), ""]
        if figure:
            lines += [f"![EU ranks per family]({figure})", ""]
        lines += _paper_lines(table, families, other_seeds)
    failed = table[~ok]
    lines += ["## Failed runs", ""]
    if failed.empty:
        lines += ["None.", ""]
    else:
        rows = [
            [f, r.preset, r.method, str(r.seed), str(r.error).splitlines()[0][:160]]
            for f, r in zip(fam[~ok], failed.itertuples(index=False), strict=True)
        ]
        lines += [*markdown_table(["family", "preset", "method", "seed", "error"], rows), ""]
    lines += how_lines(table, reference_seeds, other_seeds, families, tuned, page)
    path = docs / f"{page}.md"
    write_text(path, "\n".join(lines))
    return path


def _paper_lines(table: pd.DataFrame, families: list[str], seeds) -> list[str]:
    """The paper's conclusions about EU rankings, checked under every family."""
    columns = [GP, *families]
    ranks = {
        f: rank_matrix(table, f, seeds, "spearman_eu", registry.metric("spearman_eu").better)
        for f in columns
    }
    rows = []
    for statement, methods, rule in PAPER:
        cells = [statement, rule]
        for f in columns:
            r = ranks[f]
            present = [m for m in methods if m in r.columns]
            if r.empty or len(present) < len(methods):
                cells.append("n/a")
                continue
            mean = r.rank(axis=1).mean(axis=0)
            ok = all(_holds(mean[m], r.shape[1], rule) for m in methods)
            cells.append(
                ("holds" if ok else "fails")
                + " ("
                + ", ".join(f"{mean[m]:.1f}" for m in methods)
                + f" of {r.shape[1]})"
            )
        rows.append(cells)
    return [
        "## The paper's conclusions, family by family",
        "",
        "Each statement of the source paper (§5, §7) about EU rankings, with the methods' "
        "mean EU ranks (out of the methods ranked) and the rule it is checked by.",
        "",
        *markdown_table(["statement", "rule", *columns], rows),
        "",
    ]
