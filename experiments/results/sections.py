"""What a report section is: a capability's part of ``udora report``.

Each capability folder of ``udora.experiments`` that has something to say about a results
folder (tuning, studies, meta-evaluation, diagnostics) holds a module ``section.py`` with
one :class:`ReportSection` named ``SECTION``. ``udora report``
(:mod:`udora.experiments.report.sections`) finds them by that name, asks each in ``order``
for its lines, and writes every non-empty one into report.md and as its own HTML page, so
a new capability adds a section without editing the report (docs/design.md, "Where do I
add ...").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from udora.oracle.kinds import REGRESSION


def markdown_table(frame: pd.DataFrame, digits: int = 3, index: bool = True) -> str:
    """``frame`` as a GitHub-markdown table (pandas' to_markdown needs the tabulate
    package); floats with ``digits`` decimals, NaN as an empty cell."""
    if frame.empty:
        return "(no data)"
    frame = frame.reset_index() if index else frame

    def cell(v) -> str:
        if isinstance(v, float):
            return "" if pd.isna(v) else f"{v:.{digits}f}"
        return str(v).replace("|", "/").replace("\n", " ")

    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "---|" * frame.shape[1]
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body])


@dataclass(frozen=True)
class ReportContext:
    """What a section may read: the results folder, its runs (``table``: one row per run,
    as :func:`udora.experiments.results.store.load_runs` reads it, and ``curves``), the
    report folder ``out`` (a section writes its figures under it, images linked relative
    to it), ``data_dir`` (where datasets are looked up to rebuild a task; None: the
    data loader's default) and ``baseline`` (a frozen table of runs to compare against,
    ``udora report --baseline``; None: no comparison)."""

    results_dir: Path
    out: Path
    table: pd.DataFrame
    curves: dict
    data_dir: str | None = None
    baseline: pd.DataFrame | None = None

    @staticmethod
    def markdown(frame: pd.DataFrame, digits: int = 3, index: bool = True) -> str:
        return markdown_table(frame, digits, index)


@dataclass(frozen=True)
class Page:
    """A page of a section's own, for details its lines only summarise: ``name`` (written
    as ``<name>.md`` and ``<name>.html`` beside report.md; the section's lines link to
    them), ``title`` and its Markdown ``lines``."""

    name: str
    title: str
    lines: tuple[str, ...]


@dataclass(frozen=True)
class SectionText:
    """What a section's ``write`` returns when it has pages of its own: its ``lines`` (in
    report.md and on its page) and the ``pages`` (each named in its section's ``pages``)."""

    lines: list[str]
    pages: tuple[Page, ...] = ()


@dataclass(frozen=True)
class ReportSection:
    """One section of the report: ``name`` (its HTML page is ``<name>.html``), ``title``
    (the navigation bar's link), ``order`` (sections are written by increasing order),
    ``write(context) -> lines`` (the section's Markdown lines, or a :class:`SectionText`
    with pages of its own; ``[]`` when the folder has no records of it, and then no page
    is written), ``kind``, the task kind whose runs it is given (:mod:`udora.oracle.kinds`;
    runs of other kinds never reach it) and ``pages``, the names of the pages of its own
    it may write (an earlier report's pages of these names are removed)."""

    name: str
    title: str
    order: int
    write: Callable[[ReportContext], list[str] | SectionText]
    kind: str = REGRESSION  # the task kind whose runs the section reads (context.table)
    pages: tuple[str, ...] = ()
