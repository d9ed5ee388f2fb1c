"""The files of a robustness page (``udora robustness``): its name, the runs' table it
writes beside itself and regenerates from, and how the study was run."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from udora.errors import UserError
from udora.experiments.results.store import load_runs
from udora.oracle import reading
from udora.oracle.atomic import write_parquet

PAGE = "robustness"  # docs/<page>.md, docs/img/<page>_eu_ranks.png, docs/data/<page>_runs.parquet


def table_path(page: str = PAGE) -> Path:
    """The runs' table of a page, relative to the docs folder."""
    return Path("data") / f"{page}_runs.parquet"


def is_tuned(table: pd.DataFrame) -> bool:
    """Whether the study's runs use tuned configs (``method@tuned`` labels)."""
    return bool(table["config"].astype(str).str.contains("@tuned", regex=False).any())


def load_study_runs(results: str | Path) -> pd.DataFrame:
    """The study's runs, one row each: read from a results folder (as ``udora report``
    reads it) or from the table a page was generated from (``docs/data/...parquet``)."""
    results = Path(results)
    if results.is_file():
        if results.suffix != ".parquet":
            raise UserError(
                f"{results}: expected the study's results folder or the "
                ".parquet table a robustness page wrote"
            )
        return reading.table(results)
    table, _ = load_runs(results)
    return table


def write_table(table: pd.DataFrame, path: Path) -> None:
    """Write the runs' table to ``path`` atomically, without this machine's paths: the run
    folder's column is dropped and a tuned file keeps ``<tuned folder>/<preset>/<file>``."""
    table = table.drop(columns=["run_dir"], errors="ignore").reset_index(drop=True)
    if "tuned_file" in table:
        table["tuned_file"] = [
            None if not isinstance(v, str) else "/".join(Path(v).parts[-3:])
            for v in table["tuned_file"]
        ]
    write_parquet(path, table)


def source_name(results: str | Path, docs: Path, page: str) -> str:
    """How the page names its input: the folder's name, or the table's path from the
    repository root (``docs/data/...``) when the page was regenerated from it."""
    results = Path(results)
    if results.is_dir():
        return results.name
    own = docs / table_path(page)
    return (
        (Path(docs.name) / table_path(page)).as_posix()
        if results.resolve() == own.resolve()
        else results.name
    )


def csv(seeds) -> str:
    return ",".join(str(s) for s in seeds)


def how_lines(
    table: pd.DataFrame, reference_seeds, other_seeds, families: list[str], tuned: bool, page: str
) -> list[str]:
    methods = ",".join(sorted(table["method"].unique()))
    presets = ",".join(sorted(table["preset"].unique()))
    data = table_path(page).as_posix()
    page_opt = "" if page == PAGE else f" --page {page}"
    if tuned:
        seeds = csv(sorted({*reference_seeds, *other_seeds}))
        commands = [
            *[
                line
                for f in families
                for line in (
                    f"    udora tune --presets {presets} --methods {methods} --trials 10 "
                    f"--seed 100 --jobs 2 --set preset.truth={f} --out tuned-{f}",
                    f"    udora bench --presets {presets} --methods {methods} --seeds "
                    f"{csv(other_seeds)} --jobs 2 --tuned tuned-{f} --set preset.truth={f} "
                    "--out truth-tuned",
                )
            ],
            f"    udora bench --presets {presets} --methods {methods} --seeds {seeds} "
            "--jobs 2 --tuned release/tuned --out truth-tuned",
            f"    udora robustness truth-tuned --docs docs{page_opt}",
        ]
        text = (
            "Every method is tuned per preset and family as the release is (bayes, 10 "
            "trials, validation NLL, tuning seed 100, never scored), with the family "
            "held in every trial's task; the GP's configs are the release's "
            "(`release/tuned`, tuned the same way under the GP). Then each family is "
            f"scored at seeds {csv(other_seeds)} and the GP at {seeds}. The families' "
            "tuned files are kept in `docs/data/tuned/<family>/` (their sweeps' trial "
            "records are not):"
        )
    else:
        commands = [
            "    udora ablate truth --jobs 2 --out truth-study",
            f"    udora bench --presets {presets} --methods {methods} \\",
            f"        --seeds {csv(reference_seeds)} --jobs 2 --out truth-study",
            f"    udora robustness truth-study --docs docs{page_opt}",
        ]
        text = (
            "The shipped `truth` study runs every method at its default config on the "
            f"held-out suite under the three families at seeds {csv(other_seeds)}; the "
            f"GP's reference ranking adds seeds {csv(reference_seeds)}:"
        )
    return [
        "## How the study was run",
        "",
        'The families and their parameters are in docs/design.md ("Ground-truth '
        'families"); `gp_oracle` receives the fitted GP prior under every family. ' + text,
        "",
        *commands,
        "",
        f"The last command also writes `docs/{data}`; `udora robustness docs/{data} --docs "
        f"docs{page_opt}` regenerates this page from it.",
        "",
    ]
