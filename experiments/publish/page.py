"""docs/leaderboard.md (a classification release: docs/leaderboard_classification.md),
generated from a release folder (``udora release page``): the leaderboard over all presets
and per suite, the rankings with their statistics and diagrams (docs/rankings.md), the
per-preset tables (for a sampled oracle, each task's own Monte Carlo ceiling), the
failures, how to regenerate."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from udora.experiments.publish.artefact import code_line, primary_rows, read_release
from udora.experiments.rankings.blocks import ranked
from udora.experiments.rankings.section import kind_of, tied_with_best, write
from udora.experiments.results.figures_summary import families, ordered
from udora.experiments.results.sections import ReportContext, markdown_table
from udora.experiments.results.summaries import per_dataset
from udora.oracle.atomic import write_text

IMAGES = Path("img") / "leaderboard"  # under the docs folder
# Per kind: the page, its title, where its diagrams go and its per-preset score tables.
PAGES = {
    "regression": ("leaderboard.md", "The udora reference release", "", ("nll", "crps")),
    "classification": (
        "leaderboard_classification.md",
        "The udora classification release",
        "classification-",
        ("nll", "brier", "accuracy"),
    ),
}


def _protocol(table: pd.DataFrame) -> str:
    if "tuning_protocol" not in table or table["tuning_protocol"].isna().all():
        return "Every config is a method's default (no tuning)."
    found = {json.dumps(json.loads(p), sort_keys=True) for p in table["tuning_protocol"].dropna()}
    parts = []
    for text in sorted(found):
        p = json.loads(text)
        parts.append(", ".join(f"{k} {v}" for k, v in sorted(p.items())))
    return (
        "Tuned per preset and method (`method@tuned`): " + "; ".join(parts) + ". The "
        "tuning task's seed is never a scored seed, so no scored task is the one its "
        "config was chosen on; methods with nothing to tune run their defaults."
    )


def leaderboard(table: pd.DataFrame) -> pd.DataFrame:
    """Per config (family order, best EU first): its family, the means over presets of
    seed means of the runs' kind's headline metrics, and its EU mean rank with interval
    and mark. The
    ``method_seed`` variants (the noise floor, run on a few presets only) are left out."""
    from udora.experiments.results.store import method_seed_variants
    from udora.scoring.registry import names

    table = table[~table["config"].isin(method_seed_variants(table))]

    kind = kind_of(table)
    fam = families(table)
    marks = tied_with_best(table)
    rows = []
    for config in ordered(table, ranked(kind)[0][0]):
        row = {"config": config, "family": fam[config]}
        for metric in names(kind, "headline"):
            pivot = per_dataset(table, metric)
            row[metric] = float(pivot[config].mean()) if config in pivot else np.nan
        if config in marks:
            s = marks[config]
            row["EU rank"] = f"{s['mean_rank']:.2f} [{s['low']:.2f}, {s['high']:.2f}]"
            row["≈ best"] = "yes" if s["tied_best"] else ""
        else:
            row["EU rank"], row["≈ best"] = "not ranked", ""
        rows.append(row)
    return pd.DataFrame(rows).set_index("config")


def _section(table: pd.DataFrame, docs: Path, tag: str) -> list[str]:
    """The rankings section of ``table`` with its diagrams under docs/img/leaderboard/,
    headings one level down and image links relative to the page."""
    images = docs / IMAGES / tag
    images.mkdir(parents=True, exist_ok=True)
    lines = write(ReportContext(images, images, table, {}))
    out = []
    for line in lines:
        line = re.sub(
            r"\]\((rank_cd_[^)]+)\)", lambda m: f"]({(IMAGES / tag / m.group(1)).as_posix()})", line
        )
        out.append("#" + line if line.startswith("#") else line)
    return out


def _version_lines(manifest: dict) -> list[str]:
    """A release made from another (``udora release build --base``): its version, the
    methods it reran and where the earlier version is; [] for a first version."""
    base = manifest.get("base")
    if not base:
        return []
    return [
        f"Version {manifest.get('version')}: {', '.join(base['replaced_methods'])} rerun "
        f"on version {base['version']} (`release@v{base['version']}`), whose other rows it "
        "keeps (release/README.md says why).",
        "",
    ]


def _ceilings(manifest: dict) -> list[str]:
    """The Monte Carlo ceiling of each sampled oracle (manifest ``oracles``): how well the
    oracle's own targets agree between the two halves of its draws, per preset and seed;
    a method's Spearman cannot be told apart from the oracle's above it. Empty for exact
    oracles."""
    oracles = manifest.get("oracles") or {}
    if not oracles:
        return []
    rows = [
        {
            "preset": o["preset"],
            "seed": o["seed"],
            **{f"split-half {k}": v for k, v in (o.get("split_half_spearman") or {}).items()},
            "AU ceiling": o.get("au_ceiling_spearman"),
            "majority share": max(o["class_shares"]) if o.get("class_shares") else None,
            "arrays SHA-256": str(o.get("sha256"))[:12],
        }
        for o in oracles.values()
    ]
    frame = pd.DataFrame(rows).sort_values(["preset", "seed"]).set_index(["preset", "seed"])
    return [
        "## Each task's Monte Carlo ceiling",
        "",
        "The split-half Spearman of the oracle's own targets (the mutual information and "
        "the expected entropy between the two halves of its draws): differences between "
        "methods near it are within the oracle's Monte Carlo error. The AU ceiling is the "
        "Spearman of the oracle's AU with the realised entropy. The majority share is the "
        "largest class's share of the pool's drawn labels: the class balance of a task is "
        "its drawn latent function's, not the real data's, so a task near 1 is nearly one "
        "class and its accuracy says little. The arrays' SHA-256 is what a run beside this "
        "release must have been scored on (docs/rankings.md).",
        "",
        markdown_table(frame),
        "",
    ]


def write_page(release: str | Path, docs: str | Path, command: str) -> Path:
    """Write ``docs/leaderboard.md`` (a classification release:
    ``docs/leaderboard_classification.md``) and its diagrams from the release folder
    ``release``; ``command`` is the line that regenerates it, quoted on the page."""
    shipped, _, manifest = read_release(release)
    table = primary_rows(shipped)
    kind = kind_of(table)
    page, title, tag, scores = PAGES.get(kind, PAGES["regression"])
    offline = sorted(shipped.loc[~shipped.index.isin(table.index), "preset"].unique())
    docs = Path(docs)
    suites = manifest["presets"]
    ok = manifest["ok"]
    where = "; ".join(f"{s}: {', '.join(p)}" for s, p in suites.items())
    lines = [
        f"# {title}",
        "",
        f"<!-- generated by `{command}`; do not edit by hand -->",
        "",
        f"{manifest['runs']} runs ({ok} ok, {len(manifest['failed'])} failed) of "
        f"{len(manifest['configs'])} configs on {sum(map(len, suites.values()))} presets "
        f"({where}), seeds "
        f"{manifest['seeds']}; commit {code_line(manifest)}, udora "
        f"{', '.join(manifest['udora_version'])}. {_protocol(table)}",
        "",
        *_version_lines(manifest),
        "Each number is a mean over presets of a config's mean over its seeds; configs are "
        "never averaged together. The leaderboards leave out the `method_seed` variants "
        "(a method's own seed varied on a fixed task, on a few presets: the noise floor "
        "in each rankings section). The ranks, their intervals and the tests are explained "
        "in [rankings.md](rankings.md). Compare your own method with these rows without "
        "rerunning them: `udora report MYRESULTS --baseline release`.",
        "",
        *(
            [
                f"The release also holds {len(shipped) - len(table)} runs on the package copies "
                f"of {', '.join(offline)} so that a user without the data folder can be compared "
                "with them (docs/release.md); they are not in the statistics below.",
                "",
            ]
            if len(shipped) > len(table)
            else []
        ),
        "## Leaderboard, all presets",
        "",
        markdown_table(leaderboard(table)),
        "",
    ]
    lines += _section(table, docs, f"{tag}all")
    for suite, presets in suites.items():
        part = table[table["preset"].isin(presets)]
        lines += [f"## The {suite} suite", "", markdown_table(leaderboard(part)), ""]
        lines += _section(part, docs, f"{tag}{suite}")
    from udora.scoring.registry import metric as metric_of

    for name in scores:
        pivot = per_dataset(table, name)
        if not pivot.empty:
            unit = " (in the target's units)" if kind == "regression" else ""
            lines += [
                f"## {metric_of(name).label} per preset (mean over seeds){unit}",
                "",
                markdown_table(pivot.T),
                "",
            ]
    lines += _ceilings(manifest)
    if manifest["failed"]:
        lines += [
            "## Failed runs",
            "",
            markdown_table(pd.DataFrame(manifest["failed"]), index=False),
            "",
        ]
    lines += [
        "## Regenerate",
        "",
        "    " + command,
        "",
        "The HTML report of the release: `udora report release --out release-report`.",
        "",
    ]
    docs.mkdir(parents=True, exist_ok=True)
    path = docs / page
    write_text(path, "\n".join(lines))
    return path
