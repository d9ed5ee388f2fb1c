"""``udora report``: the report of a results folder (docs/running.md, "The report"), and
``udora release``: a versioned release of results and its page (docs/release.md).
Registered on the root app by :mod:`udora.experiments.cli.main`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from udora.errors import UserError
from udora.experiments.cli import options as opts
from udora.experiments.cli.errors import user_errors

console = Console()


def report_cmd(
    results: Annotated[
        Path, typer.Argument(help="A results folder written by run, bench or ablate.")
    ],
    out: Annotated[Path | None, opts.path_option("Report folder (default RESULTS/report).")] = None,
    data_dir: Annotated[
        Path | None, typer.Option(help="Folder of <preset>.csv.gz (meta-evaluation section).")
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            help="Compare with a frozen table: 'release' (the shipped reference "
            "release), a results folder, or a .parquet/.csv results table."
        ),
    ] = None,
) -> None:
    """Tables (parquet, csv), figures (PNG, PDF) and report.md from a results folder.

    A folder of `udora ablate` also gets the study's section: slopes, Kendall's W, shifts
    and their figures (docs/ablations.md). A folder with 4 or more methods on a preset and
    seed also gets the meta-evaluation section (docs/metrics.md, `udora meta`). With
    --baseline, your configs are compared with the baseline's on the tasks you share
    (matched by task hash), which leaves its published ranks as they are
    (docs/rankings.md).
    """
    import warnings

    from udora.experiments.cli.progress import steps
    from udora.experiments.rankings.baseline import BaselineMismatchWarning
    from udora.experiments.report.write import write_report
    from udora.experiments.results.store import UnreadableRunWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnreadableRunWarning)
        warnings.simplefilter("always", BaselineMismatchWarning)
        stop = "interrupted: the report folder may be incomplete; run udora report again"
        with user_errors(console, stop), steps(console, "udora report") as progress:
            path = write_report(
                results, out, str(data_dir) if data_dir else None, progress, baseline=baseline
            )
    for w in caught:  # e.g. "skipped <path>: is not valid JSON ..."
        console.print(f"warning: {w.message}", highlight=False, markup=False, soft_wrap=True)
    site = path.parent / "index.html"
    console.print(
        f"wrote {path} and the browsable report {site} (open it in a browser; it works offline)",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


release_app = typer.Typer(
    help="Build and publish a versioned release of results.", no_args_is_help=True
)


@release_app.command("build")
def build_cmd(
    results: Annotated[
        list[Path],
        typer.Argument(
            help="Results folders (e.g. dev, heldout), or release folders built from some "
            "of the runs (parts: their rows are taken as they are)."
        ),
    ],
    out: Annotated[Path, typer.Option(help="The release folder to write.")],
    commit: Annotated[
        str | None,
        typer.Option(
            help="The commit of runs whose result.json records none (each run "
            "records its own when it ran from a git checkout)."
        ),
    ] = None,
    base: Annotated[
        str | None,
        typer.Option(
            help="A release folder ('release': the shipped one) to make a new version of: "
            "its rows of every method RESULTS does not run are kept."
        ),
    ] = None,
) -> None:
    """Write OUT/results.parquet, OUT/curves.json.gz and OUT/manifest.json (with their
    SHA-256) from the runs of RESULTS and the rows of the release parts among them (with
    --base, and the base release's rows of the other methods: a new version of it)."""
    from udora.experiments.publish.artefact import build_release

    with user_errors(console, "interrupted: the release folder may be incomplete"):
        path = build_release(results, out, commit, base)
    console.print(f"wrote {path}", highlight=False, markup=False, soft_wrap=True)


@release_app.command("claims")
def claims_cmd(
    release: Annotated[
        str | None, typer.Argument(help="A release folder, or 'release' (shipped).")
    ] = None,
    docs: Annotated[Path, typer.Option(help="The docs folder to write into.")] = Path("docs"),
    rules_only: Annotated[
        bool, typer.Option(help="Write the claims and rules without scoring a release.")
    ] = False,
) -> None:
    """Generate DOCS/paper_reproduction.md: the paper's claims, by their pass rules (a
    classification release: DOCS/classification.md, its findings, the first of which reads
    the regression release the folder sits in, else the shipped one)."""
    from udora.experiments.publish.artefact import read_release, release_folder
    from udora.experiments.publish.cls_findings import write_findings
    from udora.experiments.publish.reproduction import write_reproduction
    from udora.experiments.results.store import kind_of
    from udora.oracle.classification.preset import CLASSIFICATION

    with user_errors(console, "interrupted"):
        if rules_only:
            command = f"udora release claims --rules-only --docs {docs}"
            path = write_reproduction(None, docs, command)
        else:
            if release is None:
                raise UserError(
                    "RELEASE: a release folder (or 'release') is required "
                    "unless --rules-only is given"
                )
            folder = release_folder(release)
            if folder is None:
                raise FileNotFoundError(f"{release}: not a release folder (no manifest.json)")
            command = f"udora release claims {release} --docs {docs}"
            if kind_of(read_release(folder)[0]) == CLASSIFICATION:
                parent = release_folder(folder.parent)
                regression = parent if parent is not None else release_folder("release")
                path = write_findings(folder, regression, docs, command)
            else:
                path = write_reproduction(folder, docs, command)
    console.print(f"wrote {path}", highlight=False, markup=False, soft_wrap=True)


@release_app.command("disagreements")
def disagreements_cmd(
    release: Annotated[str, typer.Argument(help="A release folder, or 'release' (shipped).")],
    swap: Annotated[
        list[Path] | None,
        typer.Option(help="Results folders whose ok rows replace the release's (repeatable)."),
    ] = None,
    method_seed: Annotated[
        int | None, typer.Option(help="Take only the swapped rows fitted with this method_seed.")
    ] = None,
    claims: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated claim ids to bootstrap (default: the failing and partial "
            "ones, c1,c5,c6,c9,c11,c12,c15; with --variant, the claims it bears on)."
        ),
    ] = None,
    boot: Annotated[int, typer.Option(min=1, help="Bootstrap replicates.")] = 1000,
    mode: Annotated[str, typer.Option(help="Resample: both, presets or seeds.")] = "both",
    inner: Annotated[
        int, typer.Option(min=1, help="Draws of a rule's own interval in each replicate.")
    ] = 2000,
    seed: Annotated[int, typer.Option(help="The bootstrap's seed.")] = 48,
    variant: Annotated[
        str | None,
        typer.Option(help="Judge under a metric variant: M1, M2a, M2b, M2c or M3."),
    ] = None,
    against: Annotated[
        Path | None,
        typer.Option(
            help="A baseline arm's results folder: its rows replace the release's first, "
            "and each --swap method's paired effect against it is printed."
        ),
    ] = None,
    effect: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated metrics of the paired effect (with --against; default "
            "spearman_eu,nAURC_eu)."
        ),
    ] = None,
    noise: Annotated[
        str,
        typer.Option(
            help="The effect's threshold noise: fit (the fit-seed spread on a fixed task, "
            "sigma_m) or task (the spread over task seeds, sigma_t, for arms on other tasks)."
        ),
    ] = "fit",
) -> None:
    """Every claim's verdict on RELEASE (with --against, on RELEASE with that baseline
    arm's rows in place) and, with --swap, with those runs in place of the release's rows,
    and with --variant under a metric variant; then the bootstrap probability that each
    of --claims passes on the last of these tables (docs/paper_disagreements.md)."""
    import pandas as pd

    from udora.experiments.publish import disagreements as dis
    from udora.experiments.publish.artefact import read_release, release_folder
    from udora.experiments.publish.reproduction import evaluate
    from udora.experiments.publish.variants import derive, get_variant
    from udora.experiments.results.sections import markdown_table
    from udora.experiments.results.store import load_runs

    with user_errors(console, "interrupted"):
        folder = release_folder(release)
        if folder is None:
            raise FileNotFoundError(f"{release}: not a release folder (no manifest.json)")
        picked = get_variant(variant) if variant is not None else None
        if against is not None and not swap:
            raise UserError("--against compares an arm with its baseline: give --swap ARM too")
        if effect is not None and against is None:
            raise UserError("--effect is the paired effect against a baseline: give --against")
        if method_seed is not None and not swap:
            raise UserError("--method-seed picks swapped rows: give --swap RESULTS too")
        released, curves = read_release(folder)[:2]
        table = dis.claim_rows(released)
        if picked is not None:
            table = derive(table, curves)
        first = "release"
        if against is not None:
            base, base_curves = load_runs(against)
            if picked is not None:
                base = derive(base, base_curves)
            table, first = dis.swap(table, base), "baseline"
        scored = table
        if swap:
            runs = [load_runs(d) for d in swap]
            new = pd.concat([r[0] for r in runs], ignore_index=True)
            if picked is not None:
                new = derive(new, {k: v for r in runs for k, v in r[1].items()})
            scored = dis.swap(table, new, method_seed)
            if against is not None:
                arm = new if method_seed is None else new[new["method_seed"] == method_seed]
                wanted = effect if effect is not None else "spearman_eu,nAURC_eu"
                metrics = tuple(m.strip() for m in wanted.split(",") if m.strip())
                # a method the arm's baseline never ran is compared with the release's
                # own rows, under the same variant as the arm's
                own = derive(released, curves) if picked is not None else released
                effects = dis.paired_effects(arm, base, own, metrics, noise)
                console.print(
                    "paired effect against the baseline arm (docs/paper_disagreements.md, 1.2)\n"
                    + markdown_table(effects, index=False),
                    highlight=False,
                    markup=False,
                    soft_wrap=True,
                )
        verdicts = pd.DataFrame(
            {"claim": c.id, first: v.verdict, "ours": v.ours} for c, v in evaluate(table)
        )
        columns = ["claim", first]
        for name, rows, judge in (
            ("swapped", scored if swap else None, None),
            (f"variant {picked.id}" if picked else "", scored if picked else None, picked),
        ):
            if rows is not None:
                after = [
                    (v.verdict, v.ours)
                    if judge is None or c.id in judge.claims
                    else ("-", ours)  # not a claim the variant bears on
                    for (c, v), ours in zip(evaluate(rows, judge), verdicts["ours"], strict=True)
                ]
                verdicts[name], verdicts["ours"] = zip(*after, strict=True)
                columns.append(name)
        verdicts = verdicts[[*columns, "ours"]]  # ours: the last table's numbers
        console.print(
            markdown_table(verdicts, index=False), highlight=False, markup=False, soft_wrap=True
        )
        if claims is None:
            ids = picked.claims if picked else ("c1", "c5", "c6", "c9", "c11", "c12", "c15")
        else:
            ids = tuple(c.strip() for c in claims.split(",") if c.strip())
        probs = dis.pass_probability(scored, ids, boot, mode, seed, inner, picked)
        under = f", variant {picked.id} ({picked.what})" if picked else ""
        console.print(
            f"bootstrap: {boot} replicates, mode {mode}, seed {seed}, inner {inner}{under}\n"
            + markdown_table(probs),
            highlight=False,
            markup=False,
            soft_wrap=True,
        )


@release_app.command("page")
def page_cmd(
    release: Annotated[str, typer.Argument(help="A release folder, or 'release' (shipped).")],
    docs: Annotated[Path, typer.Option(help="The docs folder to write the page into.")],
) -> None:
    """Generate DOCS/leaderboard.md (a classification release:
    DOCS/leaderboard_classification.md) and its diagrams from a release folder."""
    from udora.experiments.publish.artefact import release_folder
    from udora.experiments.publish.page import write_page

    with user_errors(console, "interrupted"):
        folder = release_folder(release)
        if folder is None:
            raise FileNotFoundError(f"{release}: not a release folder (no manifest.json)")
        path = write_page(folder, docs, f"udora release page {release} --docs {docs}")
    console.print(f"wrote {path}", highlight=False, markup=False, soft_wrap=True)
