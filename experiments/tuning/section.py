"""The report's tuning section: what tuning chose, what it changed, whether it could know.

Built from the runs of ``udora bench --tuned`` (labels ``method@tuned``,
:func:`udora.experiments.results.store.load_runs`), their tuned files and the sweeps behind them
(docs/running.md, "Hyperparameter sweeps"):

- **chosen**: per preset x method, the best validation objective, the trial counts and the
  chosen values;
- **tuned vs default**: per method, the mean over presets of the per-preset seed mean of
  EU and AU Spearman for the default config and for the tuned protocol, on the presets
  where both ran (each column is one config; nothing is averaged across configs);
- **objective vs oracle**: per sweep, Spearman's rho between a trial's validation
  objective (negated, so higher is better) and the same trial's oracle EU Spearman
  (``trial.json``'s ``oracle``, computed after the objective and never used to select),
  and the oracle rank of the chosen trial among the sweep's trials (1 = the trial whose
  EU ranking was best). A rho near 1 says tuning on the validation objective also picks
  configs that disentangle better.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from udora.experiments.results.sections import ReportSection
from udora.oracle import reading


def _tuned_rows(table: pd.DataFrame) -> pd.DataFrame:
    if "tuned_file" not in table:
        return table.iloc[0:0]
    return table[table["tuned_file"].notna()]


def _read_yaml(path: Path) -> dict[str, Any] | None:
    try:
        data = reading.yaml_value(path)
    except (OSError, ValueError):  # a BadFile is a ValueError
        return None
    return data if isinstance(data, dict) else None


def _sweep_folder(tuned_file: Path, data: dict[str, Any]) -> Path | None:
    """The sweep folder of a tuned file: as recorded, else under the tuned folder's
    ``sweeps/`` (the recorded path may be relative to where ``udora tune`` ran)."""
    recorded = data.get("sweep_dir")
    if not recorded:
        return None
    if Path(recorded).is_dir():
        return Path(recorded)
    beside = tuned_file.parent.parent / "sweeps" / Path(recorded).name
    return beside if beside.is_dir() else None


def _trials(folder: Path | None) -> list[dict[str, Any]]:
    if folder is None:
        return []
    out = []
    for path in sorted(folder.glob("trial-*/trial.json")):
        try:
            out.append(reading.json_object(path))
        except (OSError, ValueError):  # not a JSON object (a BadFile is a ValueError)
            continue
    return out


def _compact(config: dict[str, Any]) -> str:
    def fmt(v: Any) -> str:
        return f"{v:.3g}" if isinstance(v, float) else str(v)

    return ", ".join(f"{k}={fmt(v)}" for k, v in sorted(config.items()))


def chosen_table(table: pd.DataFrame) -> pd.DataFrame:
    """Per preset x method: metric, best value, trials ok/failed, chosen values (or that
    the tuned file the runs read cannot be read here: never shown as defaults)."""
    rows = []
    tuned = _tuned_rows(table).drop_duplicates(["preset", "method", "tuned_file"])
    for r in tuned.itertuples(index=False):
        found = _read_yaml(Path(r.tuned_file))
        data = found or {}
        trials = data.get("trials") or {}
        chosen = _compact(data.get("config") or {}) if data.get("tuned") else "(default)"
        rows.append(
            {
                "preset": r.preset,
                "method": r.method,
                "metric": data.get("metric"),
                "best": data.get("value"),
                "trials ok/failed": f"{trials.get('ok', '?')}/{trials.get('failed', '?')}",
                "chosen": chosen if found is not None else f"(not readable here: {r.tuned_file})",
            }
        )
    return pd.DataFrame(rows).sort_values(["method", "preset"]) if rows else pd.DataFrame()


def tuned_vs_default(table: pd.DataFrame) -> pd.DataFrame:
    """Per method: EU/AU Spearman of the default config and the tuned protocol, presets
    where both have ok runs (seed means per preset, then the mean over those presets)."""
    ok = table[table["status"] == "ok"]
    rows = []
    for method in sorted(_tuned_rows(ok)["method"].unique()):
        tuned_label = f"{method}@tuned"
        pair = ok[(ok["method"] == method) & ok["config"].isin([method, tuned_label])]
        means = pair.groupby(["config", "preset"])[["spearman_eu", "spearman_au"]].mean()
        if method not in means.index.get_level_values(0) or tuned_label not in means.index:
            continue
        default, tuned = means.loc[method], means.loc[tuned_label]
        common = default.index.intersection(tuned.index)
        d, t = default.loc[common], tuned.loc[common]
        rows.append(
            {
                "method": method,
                "presets": len(common),
                "EU rho default": d["spearman_eu"].mean(),
                "EU rho tuned": t["spearman_eu"].mean(),
                "AU rho default": d["spearman_au"].mean(),
                "AU rho tuned": t["spearman_au"].mean(),
            }
        )
    return pd.DataFrame(rows)


def objective_vs_oracle(table: pd.DataFrame) -> pd.DataFrame:
    """Per sweep behind a tuned run: trials, Spearman(-objective, oracle EU rho), and the
    oracle rank of the chosen trial (1 = best oracle EU rho among the sweep's trials)."""
    rows = []
    tuned = _tuned_rows(table).drop_duplicates(["preset", "method", "tuned_file"])
    for r in tuned.itertuples(index=False):
        data = _read_yaml(Path(r.tuned_file)) or {}
        trials = _trials(_sweep_folder(Path(r.tuned_file), data))
        pairs = [
            (t["k"], t["value"], (t.get("oracle") or {}).get("spearman_eu"))
            for t in trials
            if t.get("status") == "ok" and t.get("value") is not None
        ]
        pairs = [(k, v, o) for k, v, o in pairs if o is not None and math.isfinite(o)]
        if len(pairs) < 3:
            continue
        ks, values, oracle = (np.array(x, dtype=float) for x in zip(*pairs, strict=True))
        with warnings.catch_warnings():  # every trial ranked EU alike: rho undefined, NaN
            warnings.simplefilter("ignore", stats.ConstantInputWarning)
            rho = float(stats.spearmanr(-values, oracle).statistic)
        best = data.get("best_trial")
        rank = None
        if best is not None and best in ks:
            rank = int(1 + np.sum(oracle > oracle[ks == best][0]))
        rows.append(
            {
                "preset": r.preset,
                "method": r.method,
                "trials": len(pairs),
                "rho(-objective, oracle EU rho)": rho,
                "chosen trial's oracle rank": rank,
                "chosen oracle EU rho": float(oracle[ks == best][0]) if rank else None,
                "best oracle EU rho": float(oracle.max()),
            }
        )
    return pd.DataFrame(rows).sort_values(["method", "preset"]) if rows else pd.DataFrame()


def tuning_lines(table: pd.DataFrame, md) -> list[str]:
    """The report.md lines of the tuning section; empty when no run was tuned."""
    if _tuned_rows(table).empty:
        return []
    lines = [
        "## Tuning",
        "",
        "Runs of `udora bench --tuned` are labelled `method@tuned`: each preset has its own "
        "tuned values, and the config they stand for is the tuning protocol "
        f"({', '.join(sorted(_protocols(table)))}). Tuning scores trials on a validation "
        "split of the training sample only; the oracle columns below are computed after "
        "each trial's objective and never used to choose.",
        "",
        "### Tuned against default (presets where both ran)",
        "",
        md(tuned_vs_default(table), index=False),
        "",
        "### Does the validation objective pick what disentangles?",
        "",
        "Per sweep: Spearman's rho between a trial's validation objective (negated) and its "
        "oracle EU Spearman, over the sweep's ok trials; the chosen trial's rank by oracle EU "
        "Spearman (1 = best of the sweep).",
        "",
    ]
    agree = objective_vs_oracle(table)
    if not agree.empty:
        col = "rho(-objective, oracle EU rho)"
        per_method = agree.groupby("method").agg(
            sweeps=(col, "size"),
            median_rho=(col, "median"),
            median_rank=("chosen trial's oracle rank", "median"),
        )
        lines += [md(per_method), "", md(agree, index=False), ""]
    else:
        lines += ["(no sweep with three or more trials that have oracle metrics)", ""]
    lines += ["### Chosen values", "", md(chosen_table(table), index=False), ""]
    return lines


def _protocols(table: pd.DataFrame) -> set[str]:
    out = set()
    for text in _tuned_rows(table)["tuning_protocol"].dropna().unique():
        p = json.loads(text)
        out.add(
            f"{p.get('search')} search, {p.get('trials')} trials, validation "
            f"{p.get('objective')}, {p.get('tuning_val_fraction')} held out, "
            f"seed {p.get('seed')}"
        )
    return out


SECTION = ReportSection("tuning", "Tuning", 10, lambda ctx: tuning_lines(ctx.table, ctx.markdown))
