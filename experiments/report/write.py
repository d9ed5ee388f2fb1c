"""``udora report``: tables, figures and report.md from a results folder.

Every table and figure keys runs by (preset,) method and config label
(``nn_ensemble[width=64]``); seeds are the only thing averaged (docs/running.md,
"The report"; docs/design.md, "The life of a run").
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from udora.errors import UserError
from udora.experiments.publish.artefact import (
    SHIPPED,
    primary_rows,
    read_release,
    release_folder,
    released_tuned_files,
)
from udora.experiments.report.gaps import footnotes, grouped
from udora.experiments.report.pages import write_site
from udora.experiments.report.sections import registered
from udora.experiments.results import figures, figures_summary
from udora.experiments.results.sections import ReportContext, SectionText, markdown_table
from udora.experiments.results.store import UnreadableRunWarning, load_runs, of_kind
from udora.experiments.results.summaries import (
    HEADLINE,
    configs,
    method_summary,
    per_dataset,
    ranking_agreement,
)
from udora.experiments.run.words import plural
from udora.oracle.atomic import write_figure, write_parquet, write_text
from udora.oracle.kinds import REGRESSION


def _save(fig, out: Path, stem: str) -> str:
    for ext in ("png", "pdf"):
        write_figure(out / f"{stem}.{ext}", fig, dpi=130)
    plt.close(fig)
    return f"{stem}.png"


def write_report(
    results_dir: str | Path,
    out_dir: str | Path | None = None,
    data_dir: str | None = None,
    progress: Callable[[str], None] | None = None,
    baseline: str | Path | None = None,
) -> Path:
    """Write results.parquet/.csv, figures (PNG+PDF) and report.md; returns report.md.

    Each capability's section (:func:`udora.experiments.report.sections.registered`:
    tuning, ablation, meta-evaluation, diagnostics) adds its lines when the folder has its
    records; ``data_dir`` is where a section rebuilds tasks (default the data loader's).
    ``progress(step)`` is called as each long step starts (the command line shows it).
    ``baseline`` (``"release"``, a results folder or table;
    :func:`udora.experiments.publish.artefact.load_baseline`) adds the comparison of these
    runs with it to the rankings section; it is read before anything is written.

    ``results_dir`` may also be a release folder or ``"release"`` (the shipped release;
    default report folder ``./release-report``): its table and curves are read, checked
    against the manifest, and every section works from the table.

    An unreadable result.json is skipped with a warning naming its path (and listed in
    report.md). Raises FileNotFoundError when no run can be read, and
    :class:`~udora.experiments.run.records.OldResultsError` for a folder of udora 0.1.0.
    """
    step = progress or (lambda _: None)
    frozen = None
    if baseline is not None:
        from udora.experiments.publish.artefact import load_baseline

        step("reading the baseline")
        frozen = load_baseline(baseline)
    step("reading and checking the runs")
    release = release_folder(results_dir)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnreadableRunWarning)
        if release is not None:  # a release: its table, checked against its manifest
            table, curves, _ = read_release(release)
            table = primary_rows(table).assign(run_dir="")  # sections read the table
            if "tuned_file" in table:  # a shipped config: in the release's own tuned/
                table["tuned_file"] = released_tuned_files(release, table)
        else:
            table, curves = load_runs(results_dir)
    skipped = [str(w.message) for w in caught if issubclass(w.category, UnreadableRunWarning)]
    for w in caught:  # pass every warning on to the caller, as if not caught
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if out_dir is not None:
        out = Path(out_dir)
    else:  # never into the installed package
        out = (
            Path("release-report") if str(results_dir) == SHIPPED else Path(results_dir) / "report"
        )
    loaded, (table, rounds) = table, _without_study_rounds(table)
    _check_report_folder(out)
    out.mkdir(parents=True, exist_ok=True)
    write_text(out / MARKER, "written by udora report; a later report may replace its files\n")
    write_parquet(out / "results.parquet", loaded)
    write_text(out / "results.csv", loaded.to_csv(index=False))

    everything, table = table, of_kind(table, REGRESSION)
    lines = _header(everything, skipped) + rounds
    if not table.empty:  # the regression core: leaderboard, figures, per-preset tables
        step(f"tables and figures of {plural(len(table), 'run')}")
        images = _regression_core(table, curves, out, lines)
    else:
        images = {}
    context = ReportContext(Path(results_dir), out, table, curves, data_dir, frozen)
    sections, pages = {}, {}
    for section in registered():
        part = of_kind(everything, section.kind)
        if part.empty:
            continue
        step(f"the {section.title.lower()} section")
        written = section.write(dataclasses.replace(context, table=part))
        if isinstance(written, SectionText):
            for own in written.pages:
                if own.name not in section.pages:
                    raise ValueError(
                        f"section {section.name!r} wrote page {own.name!r}, which its "
                        f"ReportSection does not name in pages={section.pages!r}"
                    )
                pages[own.name] = (own, section.name)
            written = written.lines
        sections[section.name] = written
    for part in sections.values():
        lines += part
    if not table.empty:
        _regression_figures(table, curves, out, lines)
    failed = everything[everything["status"] != "ok"]
    failed = failed[["preset", "method", "config", "seed", "error"]]
    if not failed.empty:
        lines += ["## Failed runs", "", markdown_table(failed, index=False), ""]
    report = out / "report.md"
    write_text(report, "\n".join(lines))
    step("the HTML pages")
    write_site(
        table,
        curves,
        out,
        {k: "\n".join(v) for k, v in sections.items() if v},
        {
            "EU and AU Spearman per config, one dot per dataset": images["spearman"],
            "What the EU estimate tracks": images["eu_parts"],
        }
        if images
        else {},
        pages,
    )
    return report


MARKER = ".udora-report"  # in every report folder: a later report may replace its files


def _check_report_folder(out: Path) -> None:
    """A report replaces and removes files of its own names (``index.html``,
    ``report.md``, ``results.csv``, pages, figures, ``assets/``) and leaves every other
    file alone. So a folder that holds such files is written only when a report wrote it
    (its marker, or an older udora's ``report.md``); otherwise a :class:`UserError`."""
    if not out.exists():
        return
    if not out.is_dir():
        raise UserError(f"--out {out}: is a file, not a folder")
    if (out / MARKER).is_file():
        return
    report = out / "report.md"
    try:
        if report.is_file() and report.read_text(errors="replace").startswith("# udora report"):
            return
    except OSError:
        pass
    own_pages = {f"{name}.md" for s in registered() for name in s.pages}
    clash = sorted(
        p.name
        for p in out.iterdir()
        if p.name in ("report.md", "results.csv", "results.parquet", "assets")
        or p.name in own_pages
        or p.suffix in (".html", ".png", ".pdf")
    )
    if clash:
        raise UserError(
            f"--out {out}: holds files udora report did not write and would replace "
            f"({', '.join(clash[:5])}{', ...' if len(clash) > 5 else ''}); give a new or "
            "empty folder"
        )


def _without_study_rounds(table: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The runs every section reads, without an active-learning study's later rounds
    (``n_acquired`` > 0: ``udora acquire``'s refits after labelling, each its own task and
    config), which its section reports from the study's rows; and report.md's line saying
    how many were left to it (none when there are none)."""
    later = table["n_acquired"] > 0 if "n_acquired" in table else pd.Series(False, table.index)
    if not later.any():
        return table, []
    if later.all():
        raise UserError(
            "every run of this folder is a later round of an active-learning study "
            "(its preset sets acquired); report the study's folder, which holds its round 0"
        )
    line = (
        f"{plural(int(later.sum()), 'run')} of an active-learning study's later rounds "
        "(each a refit after labelling, its preset's `acquired` set) are reported in its "
        "section only (Active learning), from the study's rows; the tables and rankings "
        "read its round 0."
    )
    return table[~later], [line, ""]


def _header(table, skipped: list[str]) -> list[str]:
    """report.md's opening lines: the runs of every kind, skipped records, external configs."""
    failed = int((table["status"] != "ok").sum())
    kinds = sorted(table["kind"].unique()) if "kind" in table.columns else [REGRESSION]
    return [
        "# udora report",
        "",
        f"{plural(len(table), 'run')} ({int((table['status'] == 'ok').sum())} ok, "
        f"{failed} failed) "
        f"on {plural(table['preset'].nunique(), 'preset')}, "
        f"{plural(table['method'].nunique(), 'method')} "
        f"in {plural(table['config'].nunique(), 'config')}, "
        f"seeds {sorted(table['seed'].unique().tolist())}"
        + (f"; task kinds {', '.join(kinds)}, reported apart" if len(kinds) > 1 else "")
        + ". Browsable: [index.html](index.html) (sortable leaderboard, a page per preset "
        "and config).",
        "",
        *(
            [
                f"Skipped {len(skipped)} unreadable result.json:",
                "",
                *[f"- {s}" for s in skipped],
                "",
            ]
            if skipped
            else []
        ),
        *_external_lines(table),
    ]


def _regression_core(table, curves, out: Path, lines: list[str]) -> dict[str, str]:
    """The regression runs' leaderboard tables and summary figures, appended to ``lines``;
    returns the summary images."""
    summary = method_summary(table)
    agreement = ranking_agreement(table)
    agreement = ranking_agreement(table)
    images = {
        "spearman": _save(figures_summary.spearman_summary(table), out, "spearman_au_eu"),
        "eu_parts": _save(figures_summary.eu_parts(table), out, "eu_decomposition"),
    }
    lines += [
        "A config is a method with its overrides, `method[key=value,...]` (the bare method "
        "name for defaults). Means and sds are over seeds of one config, then over datasets; "
        "different configs are never averaged together; `presets` counts the presets a row "
        "is averaged over (its presets with an ok run; an sd needs 2), `runs` that config's "
        "runs.",
        "",
        "## Per method and config (mean and sd over datasets of per-dataset seed means)",
        "",
        markdown_table(summary),
        "",
        *footnotes(table, tuple(m for m in HEADLINE if m in table), configs(table)),
        f"Kendall's W of the config rankings by EU Spearman across presets: "
        f"{agreement['kendall_w']:.3f} ({agreement['presets']} presets, "
        f"{agreement['methods']} configs with results on all of them; each config is its "
        "own entry).",
        "",
        f"![AU and EU Spearman]({images['spearman']})",
        "",
        f"![EU decomposition]({images['eu_parts']})",
        "",
    ]
    for metric in HEADLINE:
        if metric in table:
            pivot = per_dataset(table, metric)
            title = f"## {metric} per preset x config (mean over seeds)"
            lines += [title, "", markdown_table(pivot), ""]
            absent = [c for c in configs(table) if c not in pivot.columns]
            if absent:
                lines += [f"Not shown: {part}." for part in grouped(table, metric, absent)] + [""]
    return images


def _regression_figures(table, curves, out: Path, lines: list[str]) -> None:
    """The calibration and risk-coverage figures of the regression runs."""
    calib_au = _save(figures.calibration(curves, "au"), out, "calibration_au")
    calib_eu = _save(figures.calibration(curves, "eu"), out, "calibration_eu")
    rc = [
        _save(figures.risk_coverage(curves, p), out, f"risk_coverage_{p}")
        for p in sorted(table["preset"].unique())
    ]
    lines += ["## Calibration", "", f"![AU]({calib_au}) ![EU]({calib_eu})", ""]
    lines += ["## Risk-coverage (EU estimate vs the EU target)", ""]
    lines += [f"![risk-coverage]({name})" for name in rc] + [""]


def _external_lines(table) -> list[str]:
    """Which configs were scored from predictions files, in which form; the total-only
    forms have no AU/EU metrics (docs/evaluate_any_model.md)."""
    if "external" not in table or not table["external"].any():
        return []
    rows = table[table["external"]].drop_duplicates("config")
    parts = [
        f"`{r.config}` ({r.prediction_form} form"
        + ("" if r.has_split else ": total only, its AU and EU metrics are NaN")
        + ")"
        for r in rows.itertuples()
    ]
    return [f"Scored from predictions files (`udora score`): {', '.join(parts)}.", ""]
