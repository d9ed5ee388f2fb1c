"""The report's rankings section: per metric the mean rank with its bootstrap interval,
the Friedman test, Nemenyi's critical difference and diagram, who is tied with the best;
for EU Spearman also the win rates and the ranks per preset (docs/rankings.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from udora.experiments.rankings import beside
from udora.experiments.rankings.blocks import blocks, labels, ranked
from udora.experiments.rankings.noise import noise_lines
from udora.experiments.rankings.stats import MIN_BLOCKS, Ranking, holm, rank, win_rates
from udora.experiments.results.sections import Page, ReportContext, ReportSection, SectionText
from udora.experiments.results.store import kind_of
from udora.oracle.atomic import write_figure


def rankings(table: pd.DataFrame, alpha: float = 0.05, n_boot: int = 2000, seed: int = 0):
    """{metric: Ranking or None} for every ranked metric of the runs' kind present in
    ``table`` (None: too few complete blocks), Holm-adjusted over the secondary metrics;
    and {metric: Blocks}."""
    order = ranked(kind_of(table))
    found = {m: blocks(table, m, better) for m, better in order if m in table}
    done_ = {m: rank(b, alpha, n_boot, seed) for m, b in found.items()}
    done = holm({m: r for m, r in done_.items() if r is not None}, order[0][0])
    return {m: done.get(m) for m in done_}, found


def tied_with_best(table: pd.DataFrame) -> dict[str, dict]:
    """Per ranked config of the primary metric: its mean rank, interval and whether it is
    tied with the best ({} when it cannot be ranked); the leaderboard's mark. Holm leaves
    the primary metric alone, so it is ranked on its own."""
    primary, better = ranked(kind_of(table))[0]
    r = rank(blocks(table, primary, better)) if primary in table else None
    if r is None:
        return {}
    return {
        c: {
            "mean_rank": float(s.mean_rank),
            "low": float(s.ci_low),
            "high": float(s.ci_high),
            "tied_best": bool(s.tied_best),
            "presets": int(r.ranks.shape[0]),
        }
        for c, s in r.summary.iterrows()
    }


def _not_ranked(left_out: dict[str, str]) -> str:
    """Who is left out of a ranking and why; the method_seed variants (the noise floor)
    counted in one clause rather than named one by one."""
    noise = [c for c, why in left_out.items() if why.startswith("a method_seed variant")]
    named = [f"`{c}` ({why})" for c, why in left_out.items() if c not in noise]
    if noise:
        named.append(f"{len(noise)} method_seed variants (the noise floor, below)")
    return "Not ranked: " + "; ".join(named) + "."


def _cd_figure(ctx: ReportContext, r: Ranking) -> str:
    import matplotlib.pyplot as plt
    from autorank import plot_stats

    ax = plot_stats(r.autorank, allow_insignificant=True, width=7)
    fig = ax.get_figure()
    fig.suptitle(
        f"{labels(kind_of(ctx.table))[r.blocks.metric]}: mean rank, Nemenyi CD = {_cd(r.cd)}"
        f"{'' if r.significant else ' (omnibus test not significant)'}",
        fontsize=9,
        y=1.08,
    )
    stem = f"rank_cd_{r.blocks.metric}"
    for ext in ("png", "pdf"):
        write_figure(ctx.out / f"{stem}.{ext}", fig, dpi=130, bbox_inches="tight")
    plt.close(fig)
    return f"{stem}.png"


def _cd(cd: float) -> str:
    return f"{cd:.2f}" if np.isfinite(cd) else "none (two configs)"


def _p(p: float) -> str:
    return f"{p:.2g}" if p >= 1e-4 else "<1e-4"


def write(ctx: ReportContext) -> list[str] | SectionText:
    if not {"preset", "config", "status"} <= set(ctx.table.columns):
        return []
    lines = _ranking_lines(ctx) + noise_lines(ctx.table, ctx.markdown)
    if ctx.baseline is None:
        return lines
    summary, page = beside.beside_baseline(ctx.table, ctx.baseline, ctx.markdown)
    return SectionText(lines + summary, (Page(beside.PAGE, beside.TITLE, tuple(page)),))


def _ranking_lines(ctx: ReportContext) -> list[str]:
    found, blocks_of = rankings(ctx.table)
    if not found:
        return []
    names = labels(kind_of(ctx.table))
    primary = ranked(kind_of(ctx.table))[0][0]
    if all(r is None for r in found.values()):
        n = max(b.means.shape[0] for b in blocks_of.values())
        why = (
            f"Not ranked: a ranking needs {MIN_BLOCKS} presets on which at least two "
            f"configs (GP references aside) have results; this folder has {n}."
        )
        return ["## Rankings: which differences are real", "", why, ""]
    lines = [
        "## Rankings: which differences are real",
        "",
        "Blocks are presets, each a config's mean over its seeds; the GP references are not "
        "ranked. Ranks are within a preset (1 the best, ties averaged); the interval is a "
        "two-level bootstrap (presets, then seeds inside them; 2000 draws, 95 %). The "
        f"Friedman test and Nemenyi's critical difference (CD) are autorank's, at alpha = "
        f"0.05. {names[primary]} is the primary metric; the other metrics' Friedman "
        "p-values are Holm-adjusted over them. **Tied with the best**: a mean rank within "
        "the CD of the best, or every config when the (adjusted) Friedman test does not "
        "reject. See docs/rankings.md.",
        "",
        "| metric | presets | configs | test | p | p used | Nemenyi CD | tied with the best |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for metric, r in found.items():
        b = blocks_of[metric]
        if r is None:
            lines.append(
                f"| {names[metric]} | {b.means.shape[0]} | {b.means.shape[1]} | "
                f"not ranked: needs {MIN_BLOCKS} complete presets and 2 configs "
                "| | | | |"
            )
            continue
        tied = ", ".join(r.summary.index[r.summary["tied_best"]])
        lines.append(
            f"| {names[metric]} | {r.ranks.shape[0]} | {r.ranks.shape[1]} | "
            f"{r.test} | {_p(r.p_friedman)} | {_p(r.p_adjusted)} | {_cd(r.cd)} "
            f"| {tied} |"
        )
    lines.append("")
    for metric, r in found.items():
        b = blocks_of[metric]
        lines += [f"### {names[metric]}", ""]
        if r is not None:
            s = r.summary
            shown = s.assign(
                interval=[
                    f"[{lo:.2f}, {hi:.2f}]" for lo, hi in zip(s.ci_low, s.ci_high, strict=True)
                ],
                tied_best=np.where(s["tied_best"], "yes", ""),
            )[["mean_rank", "interval", "tied_best"]]
            lines += [ctx.markdown(shown, digits=2), ""]
            if r.test == "friedman":  # autorank draws no diagram for Wilcoxon's test
                lines += [f"![CD diagram]({_cd_figure(ctx, r)})", ""]
        if b.presets_left_out:
            lines += [
                f"Presets left out (not every ranked config has them): "
                f"{', '.join(b.presets_left_out)}.",
                "",
            ]
        if b.left_out:
            lines += [_not_ranked(b.left_out), ""]
        if metric == primary and r is not None:
            order = list(r.summary.index)
            wins = win_rates(b).reindex(index=order, columns=order)
            lines += [
                "Win rate (share of presets where the row beats the column):",
                "",
                ctx.markdown(wins, digits=2),
                "",
                "Rank per preset:",
                "",
                ctx.markdown(r.ranks[order], digits=1),
                "",
            ]
    return lines


SECTION = ReportSection(
    name="rankings", title="Rankings", order=5, write=write, pages=(beside.PAGE,)
)
