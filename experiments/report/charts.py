"""The HTML report's interactive charts (Plotly): where hovering answers "which config,
preset and seed is this point?". Each function returns a chart's ``<div>`` and figure data,
"" when there is nothing to draw; the pages load Plotly's bundle from ``assets/``
(:func:`udora.experiments.report.site.write_assets`)."""

from __future__ import annotations

import json
from html import escape as _escape

import numpy as np
import pandas as pd

from udora.experiments.report.safe import json_script
from udora.experiments.results.figures import OKABE_ITO, config_styles
from udora.experiments.results.figures_summary import FAMILY_COLOURS, families, ordered


def _embed(fig, div_id: str) -> str:
    """``fig`` as a ``<div>`` and its figure as a JSON data block, which the report's
    ``assets/charts.js`` draws (no inline script: :mod:`udora.experiments.report.safe`)."""
    import plotly.io

    figure = json.loads(plotly.io.to_json(fig, validate=False))
    return (
        f'<div id="{_escape(div_id, quote=True)}" class="plotly-graph-div"></div>\n'
        + json_script(f"{div_id}-figure", figure, data_chart=div_id)
    )


def strip_chart(table: pd.DataFrame, metric: str, title: str, div_id: str) -> str:
    """A Plotly chart of ``metric`` for every ok run: configs on the x axis (ordered as
    :func:`ordered`), one point per run coloured by family; hovering names the config,
    preset and seed. Returns the chart's ``<div>`` and its script."""
    import plotly.graph_objects as go

    ok = table[(table["status"] == "ok") & table[metric].notna()] if metric in table else None
    if ok is None or ok.empty:
        return ""
    fam = families(table)
    order = [c for c in ordered(table, metric) if c in set(ok["config"])]
    fig = go.Figure()
    for family in dict.fromkeys(fam[c] for c in order):
        part = ok[ok["config"].map(fam) == family]
        colour = FAMILY_COLOURS.get(family, FAMILY_COLOURS["other"])
        fig.add_trace(
            go.Box(  # a box with only its points shown: a jittered strip chart
                x=part["config"],
                y=part[metric],
                name=family,
                boxpoints="all",
                jitter=0.5,
                pointpos=0,
                hoveron="points",
                line={"color": "rgba(0,0,0,0)"},
                fillcolor="rgba(0,0,0,0)",
                marker={"color": colour, "size": 6, "opacity": 0.75},
                customdata=np.stack([part["preset"], part["seed"]], axis=1),
                hovertemplate="%{x}<br>preset %{customdata[0]}, seed %{customdata[1]}"
                "<br>" + metric + " = %{y:.3f}<extra></extra>",
            )
        )
    fig.update_layout(
        title={"text": title},
        height=440,
        margin={"l": 60, "r": 20, "t": 50, "b": 140},
        xaxis={
            "categoryorder": "array",
            "categoryarray": order,
            "tickangle": -40,
            "title": {"text": "config (grouped by family, best mean first)"},
        },
        yaxis={"title": {"text": "Spearman's ρ with the oracle target"}, "range": [-1.05, 1.05]},
        legend={"title": {"text": "family"}},
        template="plotly_white",
    )
    return _embed(fig, div_id)


def parts_chart(table: pd.DataFrame, div_id: str) -> str:
    """A Plotly bar chart of what the EU estimate tracks, per config (mean over ok runs):
    its Spearman with the EU target, the posterior variance and the squared bias, configs
    ordered as :func:`ordered` by the EU target. Returns the chart's ``<div>`` and script."""
    import plotly.graph_objects as go

    ok = table[table["status"] == "ok"]
    named = (
        ("spearman_eu", "EU target"),
        ("spearman_eu_var", "posterior variance"),
        ("spearman_eu_bias", "squared bias"),
    )
    parts = [(k, name) for k, name in named if k in ok]
    if ok.empty or not parts:
        return ""
    order = [c for c in ordered(table, "spearman_eu") if c in set(ok["config"])]
    means = ok.groupby("config")[[k for k, _ in parts]].mean().reindex(order)
    fig = go.Figure(
        [
            go.Bar(
                x=order,
                y=means[k],
                name=name,
                marker_color=OKABE_ITO[i],
                hovertemplate="%{x}<br>" + name + ": %{y:.3f}<extra></extra>",
            )
            for i, (k, name) in enumerate(parts)
        ]
    )
    fig.update_layout(
        title={"text": "What the EU estimate tracks (Spearman, mean over seeds)"},
        barmode="group",
        height=420,
        margin={"l": 60, "r": 20, "t": 50, "b": 140},
        xaxis={"tickangle": -40, "title": {"text": "config (grouped by family)"}},
        yaxis={"title": {"text": "Spearman's ρ of the EU estimate"}, "range": [-1.05, 1.05]},
        template="plotly_white",
    )
    return _embed(fig, div_id)


def calibration_chart(curves: dict, preset: str, kind: str, div_id: str) -> str:
    """A Plotly log-log chart of one preset's binned mean ``kind`` estimate against the mean
    oracle target, one line per config (its first seed), the diagonal dotted.

    ``curves`` maps (preset, method, config, seed) to the runs' curve summaries."""
    import plotly.graph_objects as go

    first: dict[str, dict] = {}
    for (p, _method, config, _seed), c in sorted(curves.items(), key=lambda kv: str(kv[0])):
        if p == preset and config not in first:
            first[config] = c
    styles = config_styles(sorted(first))
    fig, lo, hi = go.Figure(), np.inf, -np.inf
    for config, c in sorted(first.items()):
        est = np.asarray(c.get(f"calib_{kind}_estimate") or [], dtype=float)
        tgt = np.asarray(c.get(f"calib_{kind}_target") or [], dtype=float)
        keep = np.isfinite(est) & np.isfinite(tgt) & (est > 0) & (tgt > 0) if est.size else []
        if est.size == 0 or tgt.size != est.size or not np.any(keep):
            continue
        lo = min(lo, est[keep].min(), tgt[keep].min())
        hi = max(hi, est[keep].max(), tgt[keep].max())
        fig.add_trace(
            go.Scatter(
                x=est[keep],
                y=tgt[keep],
                mode="lines+markers",
                name=config,
                line={"color": styles[config]["color"]},
                hovertemplate=config + "<br>estimate %{x:.3g}<br>target %{y:.3g}<extra></extra>",
            )
        )
    if not np.isfinite(lo):
        return ""
    fig.add_trace(
        go.Scatter(
            x=[lo, hi],
            y=[lo, hi],
            mode="lines",
            name="estimate = target",
            line={"color": "black", "dash": "dot"},
            hoverinfo="skip",
        )
    )
    name = kind.upper()
    fig.update_layout(
        title={"text": f"{name} calibration (binned; above the diagonal: underestimates)"},
        height=440,
        margin={"l": 70, "r": 20, "t": 50, "b": 60},
        template="plotly_white",
        xaxis={"type": "log", "title": {"text": f"mean {name} estimate"}},
        yaxis={"type": "log", "title": {"text": f"mean {name} target"}},
    )
    return _embed(fig, div_id)
