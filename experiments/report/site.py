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
import re
from hashlib import sha1
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from udora.experiments.rankings.section import tied_with_best
from udora.experiments.report.charts import strip_chart
from udora.experiments.report.safe import CSP, json_script
from udora.experiments.report.sections import titles
from udora.experiments.results.figures_summary import REFERENCE, families, ordered
from udora.experiments.results.summaries import configs, per_dataset
from udora.experiments.run.words import plural
from udora.oracle.atomic import write_text
from udora.scoring.registry import metric, metrics

# The scripts a page with charts loads: Plotly's bundle (in the head) and the chart
# drawer (at the end of the body, after the charts' divs and data).
PLOTLY_SCRIPT = '<script src="assets/plotly.min.js"></script>\n'
CHART_SCRIPT = '<script src="assets/charts.js"></script>\n'

# (metric, header, which way is better, digits): the leaderboard's columns, the run's fit
# time last.
COLUMNS = (
    *((m.name, m.short, m.better, m.digits) for m in metrics(role="leaderboard")),
    ("time_fit", "fit time (s)", "lower", 1),
)
# In the target's units: a mean over presets would be decided by the widest target, so the
# leaderboard shows them for one preset at a time.
PER_PRESET = tuple(m.name for m in metrics(role="leaderboard") if m.unit != "1")


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


def page(
    title: str,
    body: str,
    nav: list[tuple[str, str]],
    current: str,
    head: str = "",
    scripts: str = "",
) -> str:
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
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
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
    source = resources.files("udora.experiments.report") / "assets"
    for name in ("style.css", "leaderboard.js", "charts.js"):
        write_text(folder / name, source.joinpath(name).read_text(encoding="utf-8"))
        written.append(folder / name)
    bundle = get_plotlyjs()
    target = folder / "plotly.min.js"
    if not target.is_file() or target.stat().st_size != len(bundle.encode()):
        write_text(target, bundle)
    return [*written, target]


def _finite(value: float) -> float | None:
    return float(value) if value is not None and np.isfinite(value) else None


def leaderboard_data(table: pd.DataFrame) -> dict:
    """What the leaderboard script needs: the columns; per config its family, page, run
    counts per preset ([runs, failed]) and per-preset seed means of every
    column's metric (ok runs); the presets with their suites. Configs in the order of
    :func:`udora.experiments.results.figures_summary.ordered`. A config's ``rank`` is its
    EU Spearman mean rank over every preset (:func:`udora.experiments.rankings.section.
    tied_with_best`; None when it is not ranked), which the filters do not change."""
    fam = families(table)
    ranks = tied_with_best(table)
    means = {key: per_dataset(table, key) for key, *_ in COLUMNS if key in table}
    rows = []
    for config in ordered(table, "spearman_eu"):
        runs = table[table["config"] == config]
        values: dict[str, dict[str, float | None]] = {}
        for preset in sorted(runs.loc[runs["status"] == "ok", "preset"].unique()):
            values[preset] = {
                key: _finite(frame.at[preset, config])
                if preset in frame.index and config in frame.columns
                else None
                for key, frame in means.items()
            }
        counts = {
            p: [len(part), int((part["status"] != "ok").sum())]
            for p, part in runs.groupby("preset")
        }
        rows.append(
            {
                "config": config,
                "method": str(runs["method"].iloc[0]),
                "family": fam[config],
                "reference": fam[config] == REFERENCE,
                "page": config_page(config),
                "counts": counts,
                "values": values,
                "rank": ranks.get(config),
            }
        )
    suites = table.drop_duplicates("preset").set_index("preset")["suite"]
    presets = [
        {"name": p, "suite": str(suites.get(p, "")), "page": preset_page(p)}
        for p in sorted(table["preset"].unique())
    ]
    columns = [
        {
            "key": k,
            "label": label,
            "better": better,
            "digits": digits,
            "per_preset": k in PER_PRESET,
        }
        for k, label, better, digits in COLUMNS
        if k in means
    ]
    return {"columns": columns, "rows": rows, "presets": presets, "default_sort": "spearman_eu"}


def leaderboard_html(data: dict) -> str:
    """The filters and the (script-filled) leaderboard table."""
    suites = sorted({p["suite"] for p in data["presets"] if p["suite"]})
    suite_options = "".join(f'<option value="{esc(s)}">{esc(s)}</option>' for s in suites)
    preset_options = "".join(
        f'<option value="{esc(p["name"])}">{esc(p["name"])}</option>' for p in data["presets"]
    )
    heads = "".join(
        f'<th class="num" data-key="{esc(c["key"])}" data-better="{c["better"]}" '
        f'title="{"higher" if c["better"] == "higher" else "lower"} is better'
        f'{"; in the target units: choose one preset" if c["per_preset"] else ""}">'
        f"{esc(c['label'])}</th>"
        for c in data["columns"]
    )
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
        "</noscript>\n" + json_script("leaderboard-data", data)
    )


def nav_links(sections: dict[str, str]) -> list[tuple[str, str]]:
    """The navigation bar: leaderboard, presets, methods, the sections present, report.md."""
    links = [
        ("index.html", "Leaderboard"),
        ("presets.html", "Presets"),
        ("methods.html", "Methods"),
    ]
    links += [(f"{name}.html", title) for name, title in titles().items() if name in sections]
    return [*links, ("report.md", "report.md"), ("results.csv", "results.csv")]


def index_html(table: pd.DataFrame, nav: list[tuple[str, str]], figures: dict[str, str]) -> str:
    """The leaderboard page: the table, the interactive per-run charts, the summary figure."""
    data = leaderboard_data(table)
    ok = int((table["status"] == "ok").sum())
    seeds = sorted(table["seed"].unique().tolist())
    runs = plural(len(table), "run")
    intro = (
        f'<h1>udora leaderboard</h1>\n<p class="lead">{runs} ({ok} ok, '
        f"{len(table) - ok} failed) of {plural(len(configs(table)), 'config')} on "
        f"{plural(table['preset'].nunique(), 'preset')}, seeds {esc(seeds)}. "
        "Each number is a mean "
        "over presets of the config's mean over seeds; configs are never averaged "
        "together. Click a header to sort.</p>\n"
    )
    charts = "".join(
        f'<div class="plot">{strip_chart(table, m, f"{metric(m).label} per run", d)}</div>'
        for m, d in (("spearman_eu", "plot-eu"), ("spearman_au", "plot-au"))
    )
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
    body = (
        intro
        + '<h2 id="leaderboard-heading">Leaderboard</h2>\n'
        + leaderboard_html(data)
        + "<h2>Every run (hover a point for its preset and seed)</h2>\n"
        + f'<div class="plots">{charts}</div>\n<h2>Summary</h2>\n'
        + "".join(
            f'<figure><img src="{esc(src)}" alt="{esc(alt)}"></figure>\n'
            for alt, src in figures.items()
        )
    )
    return page(
        "Leaderboard",
        body,
        nav,
        "index.html",
        head=PLOTLY_SCRIPT,
        scripts=CHART_SCRIPT + '<script src="assets/leaderboard.js"></script>\n',
    )
