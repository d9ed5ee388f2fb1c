"""The complete blocks a ranking needs: preset x config seed means of one metric, the
configs that leave it and why (docs/rankings.md, "Blocks").

A config enters a metric's ranking when it is not a GP reference or a ``method_seed``
variant, its metric is finite on some ok run, and it has an ok result on every preset
ranked; the presets are chosen to keep the most complete cells (:func:`_presets`). Who
is left out, and why, is returned beside the matrix so the report can say so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from udora.experiments.results.figures_summary import REFERENCE, families
from udora.experiments.results.summaries import configs as ordered_configs
from udora.scoring.registry import metrics


def ranked(kind: str = "regression") -> tuple[tuple[str, str], ...]:
    """(metric, which way is better) of a task kind's ranked metrics, the primary first."""
    return tuple((m.name, m.better) for m in metrics(task=kind, role="ranked"))


def labels(kind: str = "regression") -> dict[str, str]:
    """{metric: label} of a task kind's ranked metrics."""
    return {m.name: m.label for m in metrics(task=kind, role="ranked")}


# The regression kind's: (metric, which way is better), the primary one first.
RANKED = ranked()
PRIMARY = RANKED[0][0]
LABELS = labels()


@dataclass(frozen=True)
class Blocks:
    """One metric's complete blocks.

    ``means``: (presets, configs) seed means of ok runs, every cell finite. ``seeds``: per
    preset a (seeds, configs) array of the per-seed values (NaN where a run failed or is
    missing), rows in ``seed_ids[preset]`` order, for the bootstrap. ``left_out``:
    {config: reason} for every config of the table that is not ranked.
    """

    metric: str
    better: str
    means: pd.DataFrame
    seeds: dict[str, np.ndarray] = field(repr=False)
    seed_ids: dict[str, list[int]] = field(repr=False)
    left_out: dict[str, str]
    presets_left_out: tuple[str, ...] = ()  # presets not every ranked config has


def _presets(ok: pd.DataFrame) -> list[str]:
    """The presets to rank on: among the nested sets "presets that at least t configs
    have", the one that keeps the most (configs x presets) complete cells, more presets on
    a tie; so one config on a preset the others lack does not push them all out."""
    have = ok.groupby("config")["preset"].agg(set)
    count = ok.groupby("preset")["config"].nunique()
    best, best_key = sorted(count.index), (-1, -1)
    for t in sorted(count.unique()):
        presets = set(count.index[count >= t])
        kept = sum(presets <= s for s in have)
        key = (kept * len(presets), len(presets))
        if key > best_key:
            best, best_key = sorted(presets), key
    return best


def blocks(table: pd.DataFrame, metric: str, better: str) -> Blocks:
    """The complete blocks of ``metric`` in ``table`` (one row per run, as
    :func:`udora.experiments.results.store.load_runs` reads it); ``better`` is "higher" or
    "lower"."""
    if better not in ("higher", "lower"):
        raise ValueError(f"better: expected 'higher' or 'lower', got {better!r}")
    fam = families(table)
    left: dict[str, str] = {}
    for config in ordered_configs(table):
        if fam[config] == REFERENCE:
            left[config] = "a GP reference"
    from udora.experiments.results.store import method_seed_variants

    variants = sorted(method_seed_variants(table))  # a config's noise floor
    left.update(dict.fromkeys(variants, "a method_seed variant (noise floor)"))
    ok = table[(table["status"] == "ok") & ~table["config"].isin(left)]
    values = ok[metric] if metric in ok else pd.Series(np.nan, index=ok.index)
    ok = ok.assign(_v=pd.to_numeric(values, errors="coerce").astype(float))
    ok = ok[np.isfinite(ok["_v"])]
    for config in ordered_configs(table):
        if config not in left and config not in set(ok["config"]):
            left[config] = f"no finite {metric} on any ok run"
    every = sorted(ok["preset"].unique())
    presets = _presets(ok)
    for config, part in ok.groupby("config"):
        missing = sorted(set(presets) - set(part["preset"]))
        if missing:
            left[config] = f"no ok {metric} on {', '.join(missing)}"
    ok = ok[~ok["config"].isin(left) & ok["preset"].isin(presets)]
    kept = [c for c in ordered_configs(table) if c not in left]
    presets = sorted(ok["preset"].unique())
    means = ok.pivot_table(index="preset", columns="config", values="_v", aggfunc="mean")
    means = means.reindex(index=presets, columns=kept)
    means.columns.name = "config"
    seeds, seed_ids = {}, {}
    for preset in presets:
        part = ok[ok["preset"] == preset]
        grid = part.pivot_table(index="seed", columns="config", values="_v", aggfunc="mean")
        grid = grid.reindex(columns=kept)
        seed_ids[preset] = [int(s) for s in grid.index]
        seeds[preset] = grid.to_numpy(dtype=float)
    dropped = tuple(p for p in every if p not in presets)
    return Blocks(metric, better, means, seeds, seed_ids, left, dropped)
