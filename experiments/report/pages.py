"""The HTML report's pages besides the leaderboard: presets, configs, report sections;
and :func:`write_site`, which writes them all (docs/running.md, "The HTML report")."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from udora.experiments.report.charts import calibration_chart, parts_chart, strip_chart
from udora.experiments.report.safe import markdown_html
from udora.experiments.report.sections import registered, titles
from udora.experiments.report.site import (
    CHART_SCRIPT,
    COLUMNS,
    PLOTLY_SCRIPT,
    config_page,
    esc,
    index_html,
    nav_links,
    page,
    preset_page,
    write_assets,
)
from udora.experiments.results import figures_summary
from udora.experiments.results.sections import Page
from udora.experiments.results.summaries import HEADLINE, configs
from udora.experiments.run.records import read_run
from udora.experiments.run.words import plural
from udora.oracle.atomic import write_text
from udora.scoring.registry import metric


def _table_html(frame: pd.DataFrame, digits: int = 3, links: dict[str, str] | None = None) -> str:
    """``frame`` (index and columns as shown) as an HTML table; ``links`` maps first-column
    values to pages."""
    links = links or {}
    frame = frame.reset_index()
    head = "".join(f"<th>{esc(c)}</th>" for c in frame.columns)
    rows = []
    for values in frame.itertuples(index=False):
        cells = []
        for i, v in enumerate(values):
            if isinstance(v, float):
                text, cls = ("n/a" if pd.isna(v) else f"{v:.{digits}f}"), ' class="num"'
            else:
                text, cls = esc(v), ""
                if i == 0 and str(v) in links:
                    text = f'<a href="{esc(links[str(v)])}">{text}</a>'
            cells.append(f"<td{cls}>{text}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>\n"


def _figure(src: str, alt: str) -> str:
    caption = f"<figcaption>{esc(alt)}</figcaption>"
    return f'<figure><img src="{esc(src)}" alt="{esc(alt)}">{caption}</figure>\n'


def preset_html(table, curves, preset: str, nav) -> str:
    """One preset's page: its configs' seed means; interactive charts of every run's EU
    and AU Spearman, of what the EU estimate tracks and of the EU and AU calibration; the
    report's risk-coverage figure of this preset."""
    part = table[table["preset"] == preset]
    ok = part[part["status"] == "ok"]
    keys = [k for k, *_ in COLUMNS if k in part]
    means = (
        ok.groupby("config")[keys]
        .mean()
        .reindex(
            [c for c in figures_summary.ordered(part, "spearman_eu") if c in set(ok["config"])]
        )
    )
    means.columns = [dict((k, h) for k, h, *_ in COLUMNS)[k] for k in keys]
    suite = part["suite"].iloc[0] if "suite" in part else ""
    charts = "".join(
        f'<div class="plot">{chart}</div>'
        for chart in (
            *(
                strip_chart(part, m, f"{metric(m).label} per run", d)
                for m, d in (("spearman_eu", "plot-eu"), ("spearman_au", "plot-au"))
            ),
            parts_chart(part, "plot-parts"),
            calibration_chart(curves, preset, "eu", "plot-calibration-eu"),
            calibration_chart(curves, preset, "au", "plot-calibration-au"),
        )
        if chart
    )
    shown = {
        "Risk-coverage: retained mean EU target against coverage (solid: ordered by the "
        "EU estimate; dashed: by the target)": f"risk_coverage_{preset}.png"
    }
    links = {c: config_page(c) for c in means.index}
    body = (
        f'<h1>{esc(preset)}</h1>\n<p class="lead">Suite {esc(suite or "n/a")}; '
        f"{plural(len(part), 'run')} ({len(ok)} ok), "
        f"seeds {esc(sorted(part['seed'].unique().tolist()))}."
        " Means over seeds.</p>\n"
        + _table_html(means, links=links)
        + f'<div class="plots">{charts}</div>\n'
        + "".join(_figure(src, alt) for alt, src in shown.items())
    )
    return page(preset, body, nav, "presets.html", head=PLOTLY_SCRIPT, scripts=CHART_SCRIPT)


def _search_space(method: str) -> str:
    try:
        from udora.methods.registry import get_method_class

        space = get_method_class(method).Config().search_space()
        return json.dumps(space, indent=1, default=str)
    except Exception as err:  # a plugin that no longer imports: say so, keep the page
        return f"(search space unavailable: {type(err).__name__}: {err})"


def config_html(table, config: str, out: Path, nav) -> str:
    """One config's page: method, family, the resolved config (per preset when it differs),
    the method's search space, and every run with a link to its result.json."""
    from udora.methods.registry import method_infos

    runs = table[table["config"] == config].sort_values(["preset", "seed"])
    method = str(runs["method"].iloc[0])
    info = {i.name: i for i in method_infos()}.get(method)
    resolved: dict[str, str] = {}
    for preset, run_dir in runs.drop_duplicates("preset")[["preset", "run_dir"]].itertuples(
        index=False
    ):
        record = read_run(run_dir, verify_files=False).record
        if record is None:
            resolved[preset] = "(result.json unreadable)"
        else:
            resolved[preset] = json.dumps(record.config, indent=1, sort_keys=True)
    if len(set(resolved.values())) == 1:
        config_text = f"<pre>{esc(next(iter(resolved.values())))}</pre>\n"
    else:
        config_text = "".join(
            f"<h3>{esc(p)}</h3><pre>{esc(t)}</pre>\n" for p, t in resolved.items()
        )
    rows = []
    for r in runs.itertuples(index=False):
        href = os.path.relpath(Path(r.run_dir) / "result.json", out)
        cells = [
            f'<a href="{esc(preset_page(r.preset))}">{esc(r.preset)}</a>',
            esc(r.seed),
            esc(r.status),
        ]
        for key in (*HEADLINE, "time_fit"):
            v = getattr(r, key, float("nan")) if key in runs else float("nan")
            cells.append("n/a" if pd.isna(v) else f"{v:.3f}")
        cells.append(f'<a href="{esc(href)}">result.json</a>')
        cells.append(esc(r.error or "") if r.status != "ok" else "")
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    label = {k: h for k, h, *_ in COLUMNS}
    head = "".join(
        f"<th>{esc(h)}</th>"
        for h in (
            "preset",
            "seed",
            "status",
            *(label[k] for k in HEADLINE),
            "fit time (s)",
            "record",
            "error",
        )
    )
    summary = esc(info.summary) if info else ""
    family = esc(info.family) if info else "other"
    body = (
        f'<h1>{esc(config)}</h1>\n<p class="lead">Method <code>{esc(method)}</code> '
        f"({family}): {summary}</p>\n<h2>Resolved config</h2>\n{config_text}"
        f"<h2>Search space of <code>{esc(method)}</code></h2>\n"
        f"<pre>{esc(_search_space(method))}</pre>\n<h2>Runs</h2>\n<table><thead>"
        f"<tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>\n"
    )
    return page(config, body, nav, "methods.html")


def list_html(title: str, items: list[tuple[str, str, str]], nav, current: str) -> str:
    """A page of cards: (href, name, detail)."""
    cards = "".join(f'<a href="{esc(h)}">{esc(n)}<span>{esc(d)}</span></a>' for h, n, d in items)
    return page(title, f'<h1>{esc(title)}</h1>\n<div class="cards">{cards}</div>\n', nav, current)


def section_html(name: str, text: str, nav) -> str:
    """A report section's Markdown (tables, images relative to the report folder) as a page."""
    body = markdown_html(text)
    return page(titles()[name], body, nav, f"{name}.html")


def own_page_html(own: Page, parent: str, nav) -> str:
    """A section's page of its own (:class:`Page`) as HTML, under its section in the nav."""
    return page(own.title, markdown_html("\n".join(own.lines)), nav, f"{parent}.html")


def write_site(
    table,
    curves,
    out: Path,
    sections: dict[str, str],
    summary_figures: dict[str, str],
    pages: dict[str, tuple[Page, str]] | None = None,
) -> Path:
    """Write the whole site under ``out`` (the report folder): ``index.html`` (leaderboard,
    per-run charts, ``summary_figures`` {alt: png}), ``presets.html`` and a page per preset,
    ``methods.html`` and a page per config, a page per Markdown section in ``sections``
    ({name: text} of the registered sections, :mod:`udora.experiments.report.sections`),
    each of the sections' own ``pages`` ({name: (page, its section's name)}) as
    ``<name>.md`` and ``<name>.html``, and the assets; the pages of an earlier report that
    this one does not write are removed. Returns index.html."""
    out = Path(out)
    pages = pages or {}
    own = [name for s in registered() for name in s.pages]
    stale = [
        *out.glob("method-*.html"),
        *out.glob("preset-*.html"),
        *(out / f"{name}.html" for name in titles()),
        *(out / f"{name}.{ext}" for name in own for ext in ("md", "html")),
    ]
    for path in stale:  # pages of an earlier report: configs or sections gone since
        path.unlink(missing_ok=True)
    write_assets(out)
    nav = nav_links(sections)
    if table.empty:  # no regression runs: the kinds' sections are the report
        nav = [
            ("index.html", "Report"),
            *((f"{name}.html", titles()[name]) for name in sections),
            ("report.md", "report.md"),
        ]
        links = "".join(
            f'<li><a href="{esc(name)}.html">{esc(titles()[name])}</a></li>' for name in sections
        )
        body = f"<h1>udora report</h1>\n<ul>{links}</ul>\n"
        write_text(out / "index.html", page("udora report", body, nav, "index.html"))
        _write_sections(out, sections, pages, nav)
        return out / "index.html"
    write_text(out / "index.html", index_html(table, nav, summary_figures))
    presets = sorted(table["preset"].unique())
    for preset in presets:
        write_text(out / preset_page(preset), preset_html(table, curves, preset, nav))
    counts = table.groupby("preset").size()
    write_text(
        out / "presets.html",
        list_html(
            "Presets",
            [(preset_page(p), p, plural(counts[p], "run")) for p in presets],
            nav,
            "presets.html",
        ),
    )
    fam = figures_summary.families(table)
    labels = configs(table)
    for config in labels:
        write_text(out / config_page(config), config_html(table, config, out, nav))
    write_text(
        out / "methods.html",
        list_html(
            "Methods and configs",
            [(config_page(c), c, fam[c]) for c in labels],
            nav,
            "methods.html",
        ),
    )
    _write_sections(out, sections, pages, nav)
    return out / "index.html"


def _write_sections(out: Path, sections: dict[str, str], pages, nav) -> None:
    """Each section's page, and each of its own pages as Markdown and HTML."""
    for name, text in sections.items():
        write_text(out / f"{name}.html", section_html(name, text, nav))
    for name, (own, parent) in pages.items():
        write_text(out / f"{name}.md", "\n".join(own.lines))
        write_text(out / f"{name}.html", own_page_html(own, parent, nav))
