"""Why a cell of report.md's tables is empty, read from the declarations.

A metric declares what it needs of a prediction (:mod:`udora.scoring.registry`); a
config supplies what its method declares (``aleatoric = "constant"``: no AU that varies,
:mod:`udora.methods.base`) or what its predictions file's form holds (the total-only forms
of ``udora score`` per task kind: no AU/EU split,
:data:`udora.experiments.open.tasks.TOTAL_ONLY`). A
metric a config cannot supply is empty for a declared reason; any other empty cell is
said to be so with no reason guessed (every run failed, or no run has a finite value).
"""

from __future__ import annotations

import pandas as pd

from udora.experiments.open.tasks import TOTAL_ONLY
from udora.experiments.results.summaries import per_dataset
from udora.oracle.kinds import REGRESSION
from udora.scoring.declaration import Need
from udora.scoring.registry import metric

# What each need is, for a sentence saying a config lacks it.
_LACKS: dict[Need, str] = {
    "split": "no AU/EU split",
    "varying_au": "no AU that varies over the points",
    "members": "no member means",
    "gaussian": "no Gaussian predictive",
    "total": "no total variance",
    "total_order": "no order of the points by the total",
}


def _declared_gap(rows: pd.DataFrame, name: str) -> str | None:
    """Why the config of ``rows`` (its runs) cannot have ``name``, by the declarations;
    None when nothing declared stands in its way."""
    from udora.methods.base import aleatoric_on
    from udora.methods.registry import method_infos

    first = rows.iloc[0]
    needs = metric(name).needs
    label = metric(name).label
    kind = str(first.get("kind", REGRESSION))
    form = str(first.get("prediction_form"))
    supplied = TOTAL_ONLY.get(kind, {}).get(form)
    if bool(first.get("external", False)) and supplied is not None:
        lacks = sorted(needs - supplied - {"oracle", "outcomes"})
        if lacks:
            what = "; ".join(_LACKS.get(n, n) for n in lacks)
            return (
                f"scored from a predictions file of the `{form}` form (`udora score`), "
                f"which has {what}; {label} needs it"
            )
        return None
    info = {i.name: i for i in method_infos()}.get(str(first["method"]))
    if (
        info is not None
        and aleatoric_on(info.aleatoric, kind) == "constant"
        and "varying_au" in needs
    ):
        return (
            "the method declares one aleatoric variance for every point, "
            f'`aleatoric = "constant"`; {label} correlates the AU estimate with its target '
            "and is undefined for a constant (docs/metrics.md)"
        )
    return None


def why_empty(table: pd.DataFrame, config: str, name: str) -> str:
    """The reason ``config`` has no value of metric ``name`` in ``table`` (one row per run)."""
    rows = table[table["config"] == config]
    ok = rows[rows["status"] == "ok"]
    if ok.empty:
        return "every run failed"
    declared = _declared_gap(ok, name)
    if declared is not None:
        return declared
    return "no run has a finite value (nothing the method or metric declares explains it)"


def grouped(table: pd.DataFrame, name: str, configs: list[str]) -> list[str]:
    """``"`a`, `b`: why"`` for the ``configs`` without a value of ``name``, one per reason."""
    by_reason: dict[str, list[str]] = {}
    for config in configs:
        by_reason.setdefault(why_empty(table, config, name), []).append(config)
    return [f"{', '.join(f'`{c}`' for c in which)}: {why}" for why, which in by_reason.items()]


def presets_of(table: pd.DataFrame) -> pd.Series:
    """Per config label: the number of presets it has an ok run on."""
    ok = table[table["status"] == "ok"]
    return ok.groupby("config")["preset"].nunique()


def footnotes(table: pd.DataFrame, metrics: tuple[str, ...], configs: list[str]) -> list[str]:
    """Markdown lines under a table of ``configs`` x ``metrics`` (means over presets of
    per-preset seed means): each empty cell's reason, grouped by metric and reason, and
    each mean over fewer presets than the row's ``presets``; [] when there are none."""
    count = presets_of(table)
    lines = []
    for name in metrics:
        pivot = per_dataset(table, name)
        empty, partial = [], []
        for config in configs:
            n = int(pivot[config].notna().sum()) if config in pivot.columns else 0
            if n == 0:
                empty.append(config)
            elif n < count.get(config, 0):
                partial.append(f"`{config}` ({n} of {int(count[config])})")
        lines += [f"- `{name}` empty for {part}." for part in grouped(table, name, empty)]
        if partial:
            lines.append(
                f"- `{name}` over fewer presets than the row's `presets` (the others have "
                f"no finite value): {', '.join(partial)}."
            )
    return ["Empty and partial cells:", "", *lines, ""] if lines else []
