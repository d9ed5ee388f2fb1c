"""Your runs beside a frozen baseline table (docs/rankings.md, "Beside the release").

The baseline (the shipped release, or any results table: :func:`udora.experiments.
publish.artefact.load_baseline`) is never re-ranked: each of
your configs is compared with each baseline config, paired over the presets both have,
by Wilcoxon's signed-rank test (``scipy.stats.wilcoxon``) with Holm's correction over the
baseline configs (statsmodels), so adding a method moves no published number.

The baseline's ``method_seed`` variants (a config refitted at other fit seeds on a few
presets: its noise floor) are left out, as its leaderboard leaves them out of every
ranking: beside their config they would count one method several times, on those presets
only.

Rows are matched by task hash (the preset's task fields, the data checksum and the
seed): a baseline row counts only on a task your run saw. A run of yours on a preset and
seed the baseline has under another task hash is refused, with the reason (another data
checksum, or other task fields).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from udora.errors import UserError
from udora.experiments.rankings.blocks import labels, ranked
from udora.experiments.results.figures_summary import REFERENCE, families


@dataclass(frozen=True)
class Matched:
    """``mine`` and ``theirs``: the ok rows of each side on shared task hashes;
    ``refused``: one line per (preset, seed) of yours that the baseline has under
    another task; ``unmatched``: (preset, seed) of yours the baseline has no run of;
    ``variants``: the baseline's ``method_seed`` variants left out."""

    mine: pd.DataFrame
    theirs: pd.DataFrame
    refused: list[str]
    unmatched: list[tuple[str, int]]
    variants: tuple[str, ...] = ()


def match(mine: pd.DataFrame, theirs: pd.DataFrame) -> Matched:
    """Your ok rows and the baseline's ok rows on the tasks you both ran (by task hash),
    the baseline's ``method_seed`` variants left out."""
    from udora.experiments.results.store import method_seed_variants

    mine_ok = mine[mine["status"] == "ok"]
    variants = tuple(sorted(method_seed_variants(theirs)))
    theirs_ok = theirs[(theirs["status"] == "ok") & ~theirs["config"].isin(variants)]
    for side, rows in (("your runs", mine_ok), ("the baseline", theirs_ok)):
        if "task_hash" not in rows or rows["task_hash"].isna().any():
            raise UserError(
                f"{side}: some ok runs have no task hash (written before task "
                "hashes were recorded); rerun them with this udora"
            )
    their_tasks = theirs_ok.drop_duplicates("task_hash")
    their_tasks = {k: g for k, g in their_tasks.groupby(["preset", "seed"])}
    refused, unmatched, keep = [], [], set()
    for (preset, seed), part in mine_ok.groupby(["preset", "seed"]):
        hashes = set(part["task_hash"].dropna())
        if (preset, seed) not in their_tasks:
            unmatched.append((preset, int(seed)))
            continue
        options = their_tasks[(preset, seed)]  # a preset on the data folder and its copy
        keep |= hashes & set(options["task_hash"])
        hashes -= set(options["task_hash"])  # what is left is refused
        if not hashes:
            continue
        ours = part.iloc[0]
        if "data_kind" in options and (options["data_kind"] == ours.get("data_kind")).any():
            options = options[options["data_kind"] == ours.get("data_kind")]
        want = options.iloc[0]
        if "data_sha256" in part and ours.get("data_sha256") != want.get("data_sha256"):
            why = (
                f"the data differ (checksum {str(ours.get('data_sha256'))[:12]} here, "
                f"{str(want.get('data_sha256'))[:12]} in the baseline)"
            )
        else:
            why = "the preset's task fields differ (an override or an edited preset)"
        refused.append(
            f"{preset} seed {seed}: task {sorted(hashes)} is not the baseline's "
            f"{want['task_hash']}: {why}"
        )
    keep -= _other_targets(mine_ok, theirs_ok, keep, refused)
    return Matched(
        mine_ok[mine_ok["task_hash"].isin(keep)],
        theirs_ok[theirs_ok["task_hash"].isin(keep)],
        refused,
        unmatched,
        variants,
    )


def _other_targets(mine: pd.DataFrame, theirs: pd.DataFrame, tasks: set, refused: list[str]) -> set:
    """The tasks of ``tasks`` whose sampled oracle differs between the two sides: a task
    kind with Monte Carlo targets (classification) samples its posterior again on another
    machine, so one task hash can carry other target arrays. Both sides record the
    checksum of the arrays each run was scored on; where they differ the task is refused
    (one line each, appended to ``refused``), since the paired differences would mix two
    sets of targets. Kinds with exact targets are not checked."""
    from udora.experiments.tasks.kinds import run_kind

    if "oracle_sha256" not in mine or "oracle_sha256" not in theirs:
        return set()
    out = set()
    for task in sorted(tasks):
        a = mine.loc[mine["task_hash"] == task].iloc[0]
        kind = str(a.get("kind") or "regression")
        if run_kind(kind).standard_errors is None:  # exact targets: rebuilt anywhere alike
            continue
        b = theirs.loc[theirs["task_hash"] == task, "oracle_sha256"].dropna()
        ours, their = a.get("oracle_sha256"), (b.iloc[0] if len(b) else None)
        if ours is not None and their is not None and ours != their:
            out.add(task)
            refused.append(
                f"{a['preset']} seed {int(a['seed'])}: task {task} was scored against other "
                f"oracle arrays (checksum {str(ours)[:12]} here, {str(their)[:12]} in the "
                "baseline: its posterior sampled on another machine, or by a build before "
                "builds were single-threaded); paired comparisons need runs scored on the "
                "same arrays"
            )
    return out


def _paired(m: Matched, mine_cfg: str, their_cfg: str, metric: str) -> pd.DataFrame:
    """Per preset, the two configs' seed means over the tasks (seeds) both have a finite
    ``metric`` on: columns ``mine`` and ``theirs``."""
    a = m.mine.loc[m.mine["config"] == mine_cfg, ["task_hash", "preset", metric]]
    b = m.theirs.loc[m.theirs["config"] == their_cfg, ["task_hash", metric]]
    both = a.merge(b, on="task_hash", suffixes=("_mine", "_theirs")).dropna()
    means = both.groupby("preset")[[f"{metric}_mine", f"{metric}_theirs"]].mean()
    return means.set_axis(["mine", "theirs"], axis=1)


def compare(m: Matched, alpha: float = 0.05, kind: str = "regression") -> pd.DataFrame:
    """One row per (your config, metric, baseline config): the presets paired, the median
    of your preset mean minus theirs, wins/ties/losses (by the metric's better side), the
    Wilcoxon p (two-sided; NaN below 2 presets or when every difference is 0), the Holm
    p over the baseline configs that are not GP references (those are shown, untested),
    and the verdict at ``alpha`` ("no paired presets" where no preset has the metric on
    both sides, e.g. the AU of a method whose AU is constant). ``median_gain`` is signed
    so that > 0 favours yours. The metrics are ``kind``'s ranked ones."""
    from scipy.stats import wilcoxon
    from statsmodels.stats.multitest import multipletests

    rows = []
    fam = families(m.theirs) if len(m.theirs) else {}
    names = labels(kind)
    for metric, better in ranked(kind):
        if metric not in m.mine or metric not in m.theirs:
            continue
        for mine_cfg in sorted(m.mine["config"].unique()):
            block = []
            for their_cfg in sorted(m.theirs["config"].unique()):
                pair = _paired(m, mine_cfg, their_cfg, metric)
                d = (pair["mine"] - pair["theirs"]).to_numpy()
                d = d if better == "higher" else -d  # > 0: yours is better
                p = float(wilcoxon(d).pvalue) if len(d) >= 2 and np.any(d != 0) else np.nan
                gain = float(np.median(d)) if len(d) else np.nan
                block.append(
                    {
                        "config": mine_cfg,
                        "metric": names[metric],
                        "baseline": their_cfg,
                        "reference": fam.get(their_cfg) == REFERENCE,
                        "presets": len(d),
                        "median_gain": gain,
                        "wins": int((d > 0).sum()),
                        "ties": int((d == 0).sum()),
                        "losses": int((d < 0).sum()),
                        "p": p,
                    }
                )
            ps = np.array([r["p"] for r in block])
            family = np.isfinite(ps) & ~np.array([r["reference"] for r in block], dtype=bool)
            holm = np.full(len(ps), np.nan)
            if family.any():
                holm[family] = multipletests(ps[family], alpha=alpha, method="holm")[1]
            for r, ph in zip(block, holm, strict=True):
                r["p_holm"] = float(ph)
                r["verdict"] = (
                    "no paired presets (a metric one side lacks)"
                    if r["presets"] == 0
                    else "GP reference, not tested"
                    if r["reference"]
                    else "better"
                    if ph < alpha and r["median_gain"] > 0
                    else "worse"
                    if ph < alpha and r["median_gain"] < 0
                    else "no detectable difference"
                )
            rows += block
    return pd.DataFrame(rows)


def would_rank(m: Matched, metric: str, better: str) -> pd.DataFrame:
    """Per your config: the mean over presets of the rank it would take among the
    baseline's configs that are not GP references (1 + those better + half the ties), and
    the number of presets; the baseline's own ranks are not touched."""
    fam = families(m.theirs) if len(m.theirs) else {}
    theirs = m.theirs[[fam.get(c) != REFERENCE for c in m.theirs["config"]]]
    if metric not in m.mine or metric not in theirs:
        return pd.DataFrame(columns=["would_rank", "of", "presets"])
    out = {}
    for cfg in sorted(m.mine["config"].unique()):
        mine = m.mine[m.mine["config"] == cfg]
        shared = theirs[theirs["task_hash"].isin(mine["task_hash"])]  # the same seeds
        base = shared.groupby(["preset", "config"])[metric].mean().unstack("config")
        ours = mine.groupby("preset")[metric].mean().rename("_mine")
        pair = base.dropna(axis=1).join(ours, how="inner").dropna()
        if pair.empty:
            continue
        x, others = pair.pop("_mine").to_numpy()[:, None], pair.to_numpy()
        beat = others > x if better == "higher" else others < x
        ranks = 1 + beat.sum(axis=1) + 0.5 * (others == x).sum(axis=1)
        out[cfg] = {
            "would_rank": float(ranks.mean()),
            "of": others.shape[1] + 1,
            "presets": len(pair),
        }
    return pd.DataFrame.from_dict(out, orient="index").rename_axis("config")


class BaselineMismatchWarning(UserWarning):
    """Some (or all) of a results folder's tasks are not the baseline's: the command line
    says so, since the report's section is the only other place that does."""
