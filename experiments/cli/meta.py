"""``udora meta``: observable against oracle rankings of methods (Kendall's tau).

Argument parsing only; the numbers are :mod:`udora.experiments.meta.taus`, the files
:mod:`udora.experiments.meta.outputs`. Registered on the root app by
:mod:`udora.experiments.cli.main`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from udora.errors import UserError
from udora.experiments.cli import options as opts
from udora.experiments.cli.errors import usage_error as _usage_error
from udora.experiments.cli.errors import user_errors

console = Console()


def meta_cmd(
    results: Annotated[
        Path,
        typer.Argument(
            help="A results folder of run, bench or ablate, or a release folder "
            "('release', 'release@vN', a path): its shipped table and by-size rows."
        ),
    ],
    out: Annotated[
        Path | None, opts.path_option("Output folder (default RESULTS/report/meta).")
    ] = None,
    min_methods: Annotated[
        int, typer.Option(help="Fewest configs a (preset, seed) needs to be ranked.")
    ] = 4,
    boot: Annotated[int, typer.Option(help="Bootstrap resamples of the presets.")] = 2000,
    sizes: Annotated[
        str,
        typer.Option(help="Evaluation-point counts to rescore observables on ('' for none)."),
    ] = "50,200,1000",
    repeats: Annotated[
        int, typer.Option(help="Random subsets per count (a release: its shipped rows').")
    ] = 20,
    configs: Annotated[
        str | None,
        typer.Option(help="Only these configs: comma-separated patterns, e.g. '*@tuned'."),
    ] = None,
    data_dir: Annotated[Path | None, typer.Option(help="Folder of <preset>.csv.gz.")] = None,
    jobs: Annotated[
        int | None,
        typer.Option(help="Processes rescoring the subsets (default: the usable cores)."),
    ] = None,
) -> None:
    """Which observable metrics rank methods the way the oracle does: Kendall's tau.

    Per (preset, seed) with several methods, every observable metric (NLL, CRPS,
    coverage, utilities, spread) and every oracle metric rank the configs; writes the taus,
    their pooled means with bootstrap intervals, meta.md and a heatmap; then the same
    observables rescored on --sizes random pool points (docs/metrics.md).
    """
    from udora.experiments.meta.outputs import left_out_line, markdown
    from udora.experiments.run.checks import parse_names

    if min_methods < 2:
        _usage_error(f"--min-methods: expected at least 2, got {min_methods}")
    if boot < 1:
        _usage_error(f"--boot: expected a positive integer, got {boot}")
    parts = [v.strip() for v in sizes.split(",")] if sizes.strip() else []
    counts = tuple(int(v) if v.isdigit() else 0 for v in parts)
    if any(c < 2 for c in counts):
        _usage_error(
            f"--sizes: expected comma-separated integers of at least 2 ('' for none), got {sizes!r}"
        )
    if repeats < 1:
        _usage_error(f"--repeats: expected a positive integer, got {repeats}")
    if jobs is not None and jobs < 1:
        _usage_error(f"--jobs: expected a positive integer, got {jobs}")
    if jobs is None:
        import os

        jobs = len(os.sched_getaffinity(0))
    with user_errors(console):  # '' is no config at all, not every config
        patterns = None if configs is None else parse_names(configs, "--configs", "patterns")
    from udora.experiments.publish.artefact import release_folder

    shipped = release_folder(results)
    if shipped is not None:  # a release is read, never written into
        inside = out is not None and (
            out.resolve() == shipped.resolve() or shipped.resolve() in out.resolve().parents
        )
        if out is None or inside:
            _usage_error(
                f"--out: {results} is a release, read only; name an output folder outside it"
            )
        if counts and (min_methods != 4 or repeats != 20):
            _usage_error(
                f"--min-methods/--repeats: {results}'s by-size rows were computed with the "
                "defaults (4 configs, 20 subsets); keep them, or give --sizes ''"
            )
    folder = out if out is not None else results / "report" / "meta"
    stop = "interrupted: the files in --out may be incomplete; run udora meta again"
    with user_errors(console, stop):
        report = _meta(
            results, shipped, folder, patterns, min_methods, boot, counts, repeats, data_dir, jobs
        )
    console.print(markdown(report["pooled"]), highlight=False, markup=False, soft_wrap=True)
    if report.get("left_out"):
        console.print(
            left_out_line(report["left_out"]), highlight=False, markup=False, soft_wrap=True
        )
    console.print(
        f"wrote {', '.join(p.name for p in report['written'])} in {folder}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


def _meta(
    results, shipped, folder, patterns, min_methods, boot, counts, repeats, data_dir, jobs
) -> dict:
    """Load the runs (``shipped``: the release folder ``results`` names, or None), keep the
    configs matching ``patterns`` (None: all), write the meta-evaluation; user errors as
    one line."""
    import warnings
    from fnmatch import fnmatch

    from udora.experiments.cli.progress import steps
    from udora.experiments.meta.outputs import write_meta
    from udora.experiments.results.store import UnreadableRunWarning, load_runs

    given = None  # a release's by-size rows: its table has no run folders to rescore
    try:
        if shipped is not None:
            table, given = _release_table(shipped, counts, patterns)
            caught = []
        else:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", UnreadableRunWarning)  # said below, one each
                table, _ = load_runs(results)
        for w in caught:
            if issubclass(w.category, UnreadableRunWarning):
                console.print(
                    f"warning: {w.message}", highlight=False, markup=False, soft_wrap=True
                )
        configs = None if patterns is None else ",".join(patterns)
        if patterns is not None:
            keep = table["config"].map(lambda c: any(fnmatch(c, p) for p in patterns))
            if not keep.any():
                raise UserError(
                    f"--configs: no config matches {configs!r}; configs here: "
                    f"{', '.join(sorted(set(table['config'])))}"
                )
            table = table[keep]
        try:
            with steps(console, "udora meta") as progress:
                report = write_meta(
                    table,
                    folder,
                    min_methods=min_methods,
                    n_boot=boot,
                    sizes=counts,
                    repeats=repeats,
                    progress=progress,
                    data_dir=str(data_dir) if data_dir else None,
                    jobs=jobs,
                    rescore=shipped is None,
                    by_size=given,
                )
        except UserError as err:
            if configs and "or more ok configs" in str(err):
                kept = sorted(set(table["config"]))
                raise UserError(f"{err} (--configs kept {len(kept)}: {', '.join(kept)})") from err
            raise
    except UserError as err:
        _usage_error(err)
    except OSError as err:  # ours name the folder; the system's (e.g. --out) get the path
        _usage_error(err if err.errno is None else f"{err.filename}: {err.strerror}")
    return report


def _release_table(folder: Path, counts: tuple[int, ...], patterns: list[str] | None):
    """(table, by-size rows or None) of a release folder for ``udora meta``: its checked
    table's primary rows, and of its shipped ``meta_by_size.csv`` the rows of ``counts``
    (None for no counts). The shipped rows rank the release's configs, so with
    ``--configs`` or counts it did not rescore they would answer another question: a
    UserError says so."""
    from udora.experiments.publish.artefact import BY_SIZE, primary_rows, read_release
    from udora.oracle import reading

    table, _, manifest = read_release(folder)
    if not counts:
        return primary_rows(table), None
    if BY_SIZE not in manifest["files"]:
        raise UserError(
            f"{folder}: this release ships no {BY_SIZE} (its runs' predictions were not "
            "kept); run with --sizes '' for the stored metrics' taus"
        )
    if patterns is not None:
        raise UserError(
            f"--configs: {folder}'s by-size rows rank all its configs; with --configs "
            "give --sizes '' (the stored metrics' taus only)"
        )
    rows = reading.table(folder / BY_SIZE, whole_lines=True, float_precision="round_trip")
    shipped = sorted(int(v) for v in rows["size"].unique())
    if set(counts) - set(shipped):
        raise UserError(
            f"--sizes: {folder} ships rows for {', '.join(map(str, shipped))} points, not "
            f"{', '.join(str(c) for c in counts if c not in shipped)}"
        )
    return primary_rows(table), rows[rows["size"].isin(counts)].reset_index(drop=True)
