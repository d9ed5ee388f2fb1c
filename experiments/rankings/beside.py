"""The report's "Beside the baseline": a summary in report.md, the paired table on a page
of its own (docs/rankings.md, "Beside the release").

The summary gives one row per metric and config of yours, against the baseline configs
that are tested (the GP references aside): wins, ties and losses over the paired presets,
the median paired difference (signed so that > 0 favours yours), how many of them Holm's
test finds yours better or worse than, and the rank yours would take. The page holds
what the summary is made of: the tasks matched, refused and missing, the rank tables and
every (config, metric, baseline config) comparison (:func:`~udora.experiments.rankings.
baseline.compare`).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from udora.experiments.rankings.baseline import (
    BaselineMismatchWarning,
    Matched,
    compare,
    match,
    would_rank,
)
from udora.experiments.rankings.blocks import labels, ranked

PAGE = "baseline"  # the page's name: baseline.md and baseline.html beside report.md
TITLE = "Beside the baseline: every paired comparison"
SIGN = (
    "`median gain` is the median over those baseline configs of the median over presets "
    "of your preset mean minus theirs, signed so that > 0 favours yours (for a "
    "lower-is-better metric, such as NLL, theirs minus yours)"
)


def summary(m: Matched, result: pd.DataFrame, kind: str = "regression") -> pd.DataFrame:
    """Per (metric, your config): the tested comparisons of ``result`` (``compare(m)``)
    summed up; ``would rank`` as ``"r of n"``. Rows in the ranked metrics' order."""
    tested = result[~result["reference"] & (result["presets"] > 0)]
    rows = []
    names = labels(kind)
    for name, better in ranked(kind):
        ranks = would_rank(m, name, better)
        part = tested[tested["metric"] == names[name]]
        for config, own in part.groupby("config", sort=True):
            rank = (
                f"{ranks.at[config, 'would_rank']:.1f} of {int(ranks.at[config, 'of'])}"
                if config in ranks.index
                else ""
            )
            rows.append(
                {
                    "metric": names[name],
                    "config": config,
                    "baseline configs": len(own),
                    "wins/ties/losses": "/".join(
                        str(int(own[k].sum())) for k in ("wins", "ties", "losses")
                    ),
                    "median gain": float(np.median(own["median_gain"])),
                    "better than": int((own["verdict"] == "better").sum()),
                    "worse than": int((own["verdict"] == "worse").sum()),
                    "would rank": rank,
                }
            )
    return pd.DataFrame(rows)


def _matched_lines(m: Matched, page: str = PAGE) -> list[str]:
    """What matched, what was refused and why (with a warning), what the baseline lacks."""
    lines = []
    if m.refused:
        lines += ["Refused (not the baseline's task):", "", *[f"- {r}" for r in m.refused], ""]
        warnings.warn(
            f"{len(m.refused)} of your tasks are not the baseline's and are left "
            f"out of the comparison; the first: {m.refused[0]} ({page}.md in the report "
            "folder lists them)",
            BaselineMismatchWarning,
            stacklevel=3,
        )
    elif m.mine.empty:
        warnings.warn(
            "none of your tasks is in the baseline: nothing to compare",
            BaselineMismatchWarning,
            stacklevel=3,
        )
    if m.unmatched:
        lines += [
            "Not in the baseline: " + ", ".join(f"{p} seed {s}" for p, s in m.unmatched) + ".",
            "",
        ]
    return lines


def beside_baseline(
    mine: pd.DataFrame,
    theirs: pd.DataFrame,
    markdown,
    kind: str = "regression",
    page_name: str = PAGE,
) -> tuple[list[str], list[str]]:
    """``(lines, page)``: the part of report.md (the summary, a link to the page) and the
    page ``page_name`` (the tasks matched and refused, the ranks, the paired table), on
    ``kind``'s ranked metrics; the baseline's rows of other kinds are left aside."""
    from udora.experiments.results.store import of_kind

    theirs = of_kind(theirs, kind)
    heading = "## Beside the baseline" + ("" if kind == "regression" else f" ({kind})")
    if theirs.empty:
        none = f"Nothing to compare: the baseline holds no {kind} runs."
        warnings.warn(
            f"the baseline holds no {kind} runs: nothing to compare",
            BaselineMismatchWarning,
            stacklevel=2,
        )
        return [heading, "", none, ""], [f"# {TITLE}", "", none, ""]
    m = match(mine, theirs)
    n_tasks = m.mine["task_hash"].nunique()
    method = (
        "Pairs are over presets (seed means over the shared seeds); Wilcoxon's signed-rank "
        "test, two-sided, Holm over the baseline configs other than the GP references at "
        "alpha = 0.05 (with N presets no p is below 2/2^N). The baseline's own ranks are "
        "not recomputed. See docs/rankings.md."
    )
    link = f"[{page_name}.md]({page_name}.md) ([HTML]({page_name}.html))"
    matched = _matched_lines(m, page_name)
    counts = (
        f"{n_tasks} of your tasks (preset and seed) are in the baseline and match its task "
        f"hash; {len(m.refused)} refused, {len(m.unmatched)} not in it."
    )
    if m.variants:
        counts += (
            f" The baseline's {len(m.variants)} `method_seed` variants (its noise floor: "
            "configs refitted at other fit seeds) are left out, as from every ranking."
        )
    if m.mine.empty:
        none = "Nothing to compare: no task of yours is in the baseline."
        page = [f"# {TITLE}", "", counts, "", *matched]
        return [heading, "", counts, "", none, ""], [*page, none, ""]
    lines = [heading, "", f"{counts} {method}", ""]
    page = [f"# {TITLE}", "", lines[2], "", *matched]
    result = compare(m, kind=kind)
    table = summary(m, result, kind)
    lines += [
        "Against the baseline configs other than the GP references, on the presets both "
        "have: `wins/ties/losses` count presets (summed over those configs) where yours "
        f"is better, equal or worse; {SIGN}; `better than` and `worse than` count the "
        "configs the test finds yours better or worse than (the others: no detectable "
        "difference); `would rank` is the mean rank over presets yours would take among "
        f"them. Every comparison, the GP references included, and the tasks matched: {link}.",
        "",
        markdown(table, 3, index=False) if not table.empty else "(no tested comparison)",
        "",
    ]
    names = labels(kind)
    for name, better in ranked(kind):
        ranks = would_rank(m, name, better)
        if not ranks.empty:
            title = f"Rank your configs would take among the baseline's, by {names[name]}"
            page += [f"{title} (mean over presets):", "", markdown(ranks, 2), ""]
    if not result.empty:
        shown = result.drop(columns="reference").set_index(["config", "metric", "baseline"])
        page += [
            "`median_gain` is your preset mean minus the baseline config's, median over "
            "presets, signed so that > 0 favours yours; `wins`, `ties` and `losses` count "
            "presets.",
            "",
            markdown(shown, 3),
            "",
        ]
    return lines, page
