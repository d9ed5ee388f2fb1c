"""``udora report``'s static HTML site: a sortable leaderboard and a page per preset, per
config and per report section (docs/running.md, "The HTML report").

The site opens from the file system with no server and no network: its pages are flat in
the report folder beside the figures, its stylesheet and scripts are written once under
``assets/`` (Plotly's JavaScript comes from the installed ``plotly`` package). The
leaderboard page embeds each config's per-preset seed means as JSON; ``assets/
leaderboard.js`` averages them over the presets the filters keep, so a row is always one
config, never a mix. Interactive Plotly charts are used where hovering answers "which
preset, seed and config is this point?"; every other figure is the report's PNG.
"""

from __future__ import annotations

import html
import json
import re
from hashlib import sha1
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from udora.experiments.figures_summary import FAMILY_COLOURS, REFERENCE, families, ordered
from udora.experiments.results import configs, per_dataset

# (metric, header, which way is better, digits): the leaderboard's columns.
COLUMNS = (
    ("spearman_mean_f", "mean vs f ρ", "higher", 3),
    ("spearman_au", "AU ρ", "higher", 3),
    ("spearman_eu", "EU ρ", "higher", 3),
    ("spearman_total", "total ρ", "higher", 3),
    ("nAURC_eu", "EU nAURC", "higher", 3),
    ("nll", "NLL", "lower", 3),
    ("crps", "CRPS", "lower", 3),
    ("time_fit", "fit time (s)", "lower", 1),
)
# In the target's units: a mean over presets would be decided by the widest target, so the
# leaderboard shows them for one preset at a time.
PER_PRESET = ("nll", "crps")
SECTION_TITLES = {"tuning": "Tuning", "ablation": "Ablation", "meta": "Meta-evaluation",
                  "diagnostics": "Diagnostics"}  # fmt: skip


def slug(text: str) -> str:
    """A file-name-safe, unique name for ``text`` (a config label or preset name)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:60]
    return f"{safe}-{sha1(text.encode()).hexdigest()[:6]}"


def config_page(config: str) -> str:
    return f"method-{slug(config)}.html"


def preset_page(preset: str) -> str:
    return f"preset-{slug(preset)}.html"


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def page(title: str, body: str, nav: list[tuple[str, str]], current: str,
         head: str = "", scripts: str = "") -> str:  # fmt: skip
    """One HTML page: the navigation bar (``nav``: (href, label); ``current`` marked), the
    body, the shared stylesheet; ``head`` (e.g. Plotly's script) and ``scripts`` (at the
    end of the body) as given."""
    import importlib.metadata

    version = importlib.metadata.version("udora")
    links = "".join(
        f'<a href="{esc(href)}"{" aria-current=page" if href == current else ""}>{esc(label)}</a>'
        for href, label in nav
    )
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title)} · udora report</title>\n"
        '<link rel="stylesheet" href="assets/style.css">\n'
        f"{head}</head>\n<body>\n<header><nav>{links}</nav></header>\n<main>\n{body}\n</main>\n"
        f"<footer>udora report {esc(version)} · regenerate with <code>udora report "
        f"RESULTS</code></footer>\n{scripts}</body>\n</html>\n"
    )


def write_assets(out: Path) -> list[Path]:
    """Write the stylesheet, the leaderboard script and Plotly's bundle under
    ``out/assets``; an existing Plotly bundle of the same size is kept."""
    from plotly.offline import get_plotlyjs

    folder = out / "assets"
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    source = resources.files("udora.experiments") / "site_assets"
    for name in ("style.css", "leaderboard.js"):
        (folder / name).write_text(source.joinpath(name).read_text(encoding="utf-8"))
        written.append(folder / name)
    bundle = get_plotlyjs()
    target = folder / "plotly.min.js"
    if not target.is_file() or target.stat().st_size != len(bundle.encode()):
        target.write_text(bundle, encoding="utf-8")
    return [*written, target]


def _finite(value: float) -> float | None:
    return float(value) if value is not None and np.isfinite(value) else None


def leaderboard_data(table: pd.DataFrame) -> dict:
    """What the leaderboard script needs: the columns; per config its family, page, run
    counts (in all and per preset: [runs, failed]) and per-preset seed means of every
    column's metric (ok runs); the presets with their suites. Configs in the order of
    :func:`udora.experiments.figures_summary.ordered`."""
    fam = families(table)
    means = {key: per_dataset(table, key) for key, *_ in COLUMNS if key in table}
    rows = []
    for config in ordered(table, "spearman_eu"):
        runs = table[table["config"] == config]
        values: dict[str, dict[str, float | None]] = {}
        for preset in sorted(runs.loc[runs["status"] == "ok", "preset"].unique()):
            values[preset] = {
                key: _finite(frame.at[preset, config])
                if preset in frame.index and config in frame.columns else None
                for key, frame in means.items()
            }  # fmt: skip
        counts = {p: [len(part), int((part["status"] != "ok").sum())]
                  for p, part in runs.groupby("preset")}  # fmt: skip
        rows.append({"config": config, "method": str(runs["method"].iloc[0]),
                     "family": fam[config], "reference": fam[config] == REFERENCE,
                     "page": config_page(config), "runs": len(runs),
                     "failed": int((runs["status"] != "ok").sum()), "counts": counts,
                     "values": values})  # fmt: skip
    suites = table.drop_duplicates("preset").set_index("preset")["suite"]
    presets = [{"name": p, "suite": str(suites.get(p, "")), "page": preset_page(p)}
               for p in sorted(table["preset"].unique())]  # fmt: skip
    columns = [{"key": k, "label": label, "better": better, "digits": digits,
                "per_preset": k in PER_PRESET}
               for k, label, better, digits in COLUMNS if k in means]  # fmt: skip
    return {"columns": columns, "rows": rows, "presets": presets, "default_sort": "spearman_eu"}


def _json_script(element_id: str, data: dict) -> str:
    text = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    return f'<script type="application/json" id="{element_id}">{text}</script>\n'


def leaderboard_html(data: dict) -> str:
    """The filters and the (script-filled) leaderboard table."""
    suites = sorted({p["suite"] for p in data["presets"] if p["suite"]})
    suite_options = "".join(f'<option value="{esc(s)}">{esc(s)}</option>' for s in suites)
    preset_options = "".join(f'<option value="{esc(p["name"])}">{esc(p["name"])}</option>'
                             for p in data["presets"])  # fmt: skip
    heads = "".join(f'<th class="num" data-key="{esc(c["key"])}" data-better="{c["better"]}" '
                    f'title="{"higher" if c["better"] == "higher" else "lower"} is better'
                    f'{"; in the target units: choose one preset" if c["per_preset"] else ""}">'
                    f'{esc(c["label"])}</th>' for c in data["columns"])  # fmt: skip
    return (
        '<div class="controls">'
        f'<label>Suite <select id="filter-suite"><option value="">all</option>{suite_options}'
        "</select></label>"
        f'<label>Preset <select id="filter-preset"><option value="">all</option>'
        f"{preset_options}</select></label>"
        '<label><input type="checkbox" id="filter-references" checked> GP references</label>'
        "</div>\n"
        '<table id="leaderboard"><thead><tr>'
        '<th data-key="config" data-better="name">config</th><th>family</th>'
        f'{heads}<th class="num">presets</th><th class="num">runs</th></tr></thead>'
        "<tbody></tbody></table>\n"
        '<p class="note" id="leaderboard-note"></p>\n'
        "<noscript>The leaderboard needs JavaScript; report.md has the same numbers."
        "</noscript>\n" + _json_script("leaderboard-data", data)
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
        fig.add_trace(go.Box(  # a box with only its points shown: a jittered strip chart
            x=part["config"], y=part[metric], name=family, boxpoints="all", jitter=0.5,
            pointpos=0, hoveron="points", line={"color": "rgba(0,0,0,0)"},
            fillcolor="rgba(0,0,0,0)", marker={"color": colour, "size": 6, "opacity": 0.75},
            customdata=np.stack([part["preset"], part["seed"]], axis=1),
            hovertemplate="%{x}<br>preset %{customdata[0]}, seed %{customdata[1]}"
                          "<br>" + metric + " = %{y:.3f}<extra></extra>",
        ))  # fmt: skip
    fig.update_layout(
        title={"text": title}, height=440, margin={"l": 60, "r": 20, "t": 50, "b": 140},
        xaxis={"categoryorder": "array", "categoryarray": order, "tickangle": -40,
               "title": {"text": "config (grouped by family, best mean first)"}},
        yaxis={"title": {"text": "Spearman's ρ with the oracle target"}, "range": [-1.05, 1.05]},
        legend={"title": {"text": "family"}}, template="plotly_white",
    )  # fmt: skip
    return fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                       config={"displaylogo": False, "responsive": True})  # fmt: skip


def parts_chart(table: pd.DataFrame, div_id: str) -> str:
    """A Plotly bar chart of what the EU estimate tracks, per config (mean over ok runs):
    its Spearman with the EU target, the posterior variance and the squared bias, configs
    ordered as :func:`ordered` by the EU target. Returns the chart's ``<div>`` and script."""
    import plotly.graph_objects as go

    from udora.experiments.figures_summary import OKABE_ITO

    ok = table[table["status"] == "ok"]
    named = (("spearman_eu", "EU target"), ("spearman_eu_var", "posterior variance"),
             ("spearman_eu_bias", "squared bias"))  # fmt: skip
    parts = [(k, name) for k, name in named if k in ok]
    if ok.empty or not parts:
        return ""
    order = [c for c in ordered(table, "spearman_eu") if c in set(ok["config"])]
    means = ok.groupby("config")[[k for k, _ in parts]].mean().reindex(order)
    fig = go.Figure([go.Bar(x=order, y=means[k], name=name, marker_color=OKABE_ITO[i],
                            hovertemplate="%{x}<br>" + name + ": %{y:.3f}<extra></extra>")
                     for i, (k, name) in enumerate(parts)])  # fmt: skip
    fig.update_layout(
        title={"text": "What the EU estimate tracks (Spearman, mean over seeds)"},
        barmode="group", height=420, margin={"l": 60, "r": 20, "t": 50, "b": 140},
        xaxis={"tickangle": -40, "title": {"text": "config (grouped by family)"}},
        yaxis={"title": {"text": "Spearman's ρ of the EU estimate"}, "range": [-1.05, 1.05]},
        template="plotly_white",
    )  # fmt: skip
    return fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                       config={"displaylogo": False, "responsive": True})  # fmt: skip


def calibration_chart(curves: dict, preset: str, kind: str, div_id: str) -> str:
    """A Plotly log-log chart of one preset's binned mean ``kind`` estimate against the mean
    oracle target, one line per config (its first seed), the diagonal dotted.

    ``curves`` maps (preset, method, config, seed) to the runs' curve summaries."""
    import plotly.graph_objects as go

    from udora.experiments.figures import config_styles

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
        fig.add_trace(go.Scatter(x=est[keep], y=tgt[keep], mode="lines+markers", name=config,
                                 line={"color": styles[config]["color"]},
                                 hovertemplate=config + "<br>estimate %{x:.3g}<br>target %{y:.3g}"
                                               "<extra></extra>"))  # fmt: skip
    if not np.isfinite(lo):
        return ""
    fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="estimate = target",
                             line={"color": "black", "dash": "dot"}, hoverinfo="skip"))  # fmt: skip
    name = kind.upper()
    fig.update_layout(
        title={"text": f"{name} calibration (binned; above the diagonal: underestimates)"},
        height=440, margin={"l": 70, "r": 20, "t": 50, "b": 60}, template="plotly_white",
        xaxis={"type": "log", "title": {"text": f"mean {name} estimate"}},
        yaxis={"type": "log", "title": {"text": f"mean {name} target"}},
    )  # fmt: skip
    return fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                       config={"displaylogo": False, "responsive": True})  # fmt: skip


def nav_links(sections: dict[str, str]) -> list[tuple[str, str]]:
    """The navigation bar: leaderboard, presets, methods, the sections present, report.md."""
    links = [("index.html", "Leaderboard"), ("presets.html", "Presets"),
             ("methods.html", "Methods")]  # fmt: skip
    links += [(f"{name}.html", SECTION_TITLES[name]) for name in SECTION_TITLES if name in sections]
    return [*links, ("report.md", "report.md"), ("results.csv", "results.csv")]


def index_html(table: pd.DataFrame, nav: list[tuple[str, str]], figures: dict[str, str]) -> str:
    """The leaderboard page: the table, the interactive per-run charts, the summary figure."""
    data = leaderboard_data(table)
    ok = int((table["status"] == "ok").sum())
    seeds = sorted(table["seed"].unique().tolist())
    intro = (f'<h1>udora leaderboard</h1>\n<p class="lead">{len(table)} runs ({ok} ok, '
             f"{len(table) - ok} failed) of {len(configs(table))} configs on "
             f"{table['preset'].nunique()} presets, seeds {esc(seeds)}. Each number is a mean "
             "over presets of the config's mean over seeds; configs are never averaged "
             "together. Click a header to sort.</p>\n")  # fmt: skip
    charts = "".join(
        f'<div class="plot">{strip_chart(table, m, t, d)}</div>'
        for m, t, d in (("spearman_eu", "EU Spearman per run", "plot-eu"),
                        ("spearman_au", "AU Spearman per run", "plot-au"))
    )  # fmt: skip
    failed = table[table["status"] != "ok"]
    if not failed.empty:  # never silent: each failed run, its config page and its error
        items = "".join(
            f'<li><a href="{esc(config_page(r.config))}">{esc(r.config)}</a> on '
            f"{esc(r.preset)}, seed {esc(r.seed)}: {esc(str(r.error or r.status)[:200])}</li>"
            for r in failed.itertuples(index=False)
        )
        intro += (
            f'<details id="failed-runs"><summary>{len(failed)} failed runs</summary>'
            f"<ul>{items}</ul></details>\n"
        )
    body = (intro + '<h2 id="leaderboard-heading">Leaderboard</h2>\n' + leaderboard_html(data)
            + "<h2>Every run (hover a point for its preset and seed)</h2>\n"
            + f'<div class="plots">{charts}</div>\n<h2>Summary</h2>\n'
            + "".join(f'<figure><img src="{esc(src)}" alt="{esc(alt)}"></figure>\n'
                      for alt, src in figures.items()))  # fmt: skip
    return page("Leaderboard", body, nav, "index.html",
                head='<script src="assets/plotly.min.js"></script>\n',
                scripts='<script src="assets/leaderboard.js"></script>\n')  # fmt: skip
