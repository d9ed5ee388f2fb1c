"""The report's diagnostics section (:func:`diagnostics_section`): the summaries of the
``udora diagnose`` records in a results folder."""

from __future__ import annotations

import os
from pathlib import Path

from udora.experiments.diagnostics.summary import collect, markdown, write_summary
from udora.experiments.results.sections import ReportContext, ReportSection


def diagnostics_section(results_dir: str | Path, out: Path) -> list[str]:
    """The report's diagnostics section when ``results_dir`` or a folder directly in it
    holds ``udora diagnose`` records: each such folder's summary (rewritten there by
    :func:`udora.experiments.diagnostics.summary.write_summary`) with its figures."""
    root = Path(results_dir)
    children = sorted(p for p in root.iterdir() if p.is_dir() and p.resolve() != out.resolve())
    folders = [root, *children]
    lines: list[str] = []
    for folder in folders:
        if collect(folder).empty:
            continue
        summary = write_summary(folder)
        name = "this folder" if folder == root else f"`{folder.name}/`"
        lines += [f"### Diagnoses in {name}", "", markdown(summary["groups"]), ""]
        lines += [
            f"![{p.stem}]({os.path.relpath(p, out)})"
            for p in summary["written"]
            if p.suffix == ".png"
        ] + [""]
    if not lines:
        return []
    return [
        "## Diagnostics: estimation and approximation parts of the EU target",
        "",
        "Pool means normalised by the variance of the pool's targets (docs/diagnostics.md).",
        "",
        *lines,
    ]


def _write(ctx: ReportContext) -> list[str]:
    return diagnostics_section(ctx.results_dir, ctx.out)


SECTION = ReportSection("diagnostics", "Diagnostics", 40, _write)
