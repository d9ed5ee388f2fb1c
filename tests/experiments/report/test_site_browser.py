"""The HTML report in a real browser: headless Chromium (the system's, from the Debian
packages) driven by Playwright.

The default run opens the site of the README's main command (``results/report`` at the
top of the repository, which CI writes before the tests; a tiny bench builds one when it is
missing). The slow run builds a site of five methods on two tiny presets, whose report has
the meta-evaluation section, and checks its section pages as well. Each check compares what
the browser shows with an independent pandas computation on the report's results.csv.
Without Chromium the tests skip, except under CI (``CI`` set), where they fail.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[3]
MAIN_SITE = ROOT / "results" / "report"


def _missing(message: str):
    if os.environ.get("CI"):
        pytest.fail(message + "; under CI the browser tests must run")
    pytest.skip(message)


def _chromium() -> str:
    for name in (os.environ.get("UDORA_CHROMIUM"), "chromium", "chromium-browser"):
        found = name and shutil.which(name)
        if found:
            return found
    _missing("no Chromium found (Debian: apt-get install chromium; or set UDORA_CHROMIUM)")


@pytest.fixture(scope="module")
def browser():
    try:
        import playwright.sync_api as sync_api
    except ImportError:
        _missing("playwright is not installed (pip install '.[dev]')")
    executable = _chromium()
    with sync_api.sync_playwright() as pw:
        # Chromium refuses to run as root with its sandbox; CI containers run as root.
        args = ["--no-sandbox"] if os.geteuid() == 0 else []
        instance = pw.chromium.launch(executable_path=executable, args=args)
        yield instance
        instance.close()


class Page:
    """A browser page that records console errors and warnings, page errors and failed
    requests."""

    def __init__(self, browser):
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.problems: list[str] = []
        self.page.on(
            "console",
            lambda m: (
                self.problems.append(f"console {m.type}: {m.text}")
                if m.type in ("error", "warning")
                else None
            ),
        )
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.page.on("requestfailed", lambda r: self.problems.append(f"failed: {r.url}"))

    def open(self, path: Path):
        self.page.goto(path.resolve().as_uri())
        self.page.wait_for_load_state("load")
        return self.page


def _expected_means(site: Path, metric: str, presets=None) -> pd.Series:
    """Per config: mean over presets of its mean over seeds (ok runs), from results.csv."""
    table = pd.read_csv(site / "results.csv")
    ok = table[table["status"] == "ok"]
    if presets is not None:
        ok = ok[ok["preset"].isin(presets)]
    return ok.groupby(["config", "preset"])[metric].mean().groupby("config").mean()


def _shown(page, key: str) -> list[tuple[str, float]]:
    rows = page.locator("#leaderboard tbody tr")
    out = []
    for i in range(rows.count()):
        row = rows.nth(i)
        value = row.locator(f'td[data-key="{key}"]').get_attribute("data-value")
        out.append((row.get_attribute("data-config"), float(value) if value else np.nan))
    return out


def _best_first(expected: pd.Series, higher: bool) -> list[str]:
    finite = expected.dropna()
    ranked = sorted(finite.index, key=lambda c: (-finite[c] if higher else finite[c], c))
    return ranked + sorted(expected.index[expected.isna()])


def _local_links(page, site: Path) -> list[Path]:
    """Every link, image and script of the page as a file of the site (no network)."""
    urls = page.eval_on_selector_all(
        "a[href], img[src], script[src], link[href]",
        "els => els.map(e => e.getAttribute('href') || e.getAttribute('src'))",
    )
    files = []
    for url in urls:
        parsed = urlparse(url)
        assert parsed.scheme in ("", "file"), f"{url}: the site must not load from the network"
        if parsed.path:
            files.append((site / unquote(parsed.path)).resolve())
    return files


def check_site(browser, site: Path, screenshot: Path) -> dict:
    """The checks of the issue on the site in ``site``; returns what it saw."""
    results = pd.read_csv(site / "results.csv")
    view = Page(browser)
    page = view.open(site / "index.html")
    configs = set(results.loc[results["status"] == "ok", "config"])
    shown = _shown(page, "spearman_eu")
    assert sorted(c for c, _ in shown) == sorted(configs)  # one row per config
    # the default order (EU, best first) and the shown means are results.csv's
    expected = _expected_means(site, "spearman_eu")
    assert [c for c, _ in shown] == _best_first(expected, higher=True)
    for config, value in shown:
        assert value == pytest.approx(expected[config], rel=1e-9, abs=1e-12)
    presets = sorted(results["preset"].unique())
    if len(presets) > 1:  # NLL and CRPS are in each preset's units: not averaged across
        cells = page.locator('#leaderboard td[data-key="nll"]').all_inner_texts()
        assert set(cells) == {"–"}
    # the preset filter: that preset's means and run counts
    preset = presets[-1]
    page.select_option("#filter-preset", preset)
    one = _expected_means(site, "spearman_eu", [preset])
    for config, value in _shown(page, "spearman_eu"):
        assert value == pytest.approx(one[config], rel=1e-9, abs=1e-12) or (
            np.isnan(value) and np.isnan(one[config])
        )
    counts = results[results["preset"] == preset].groupby("config").size()
    assert dict(_shown(page, "runs")) == {c: float(n) for c, n in counts.items()}
    # sorting by a header click: NLL best (lowest) first, then reversed; n/a stays last
    header = page.locator('#leaderboard th[data-key="nll"]')
    header.click()
    assert header.get_attribute("aria-sort") == "ascending"
    nll = _expected_means(site, "nll", [preset])
    assert [c for c, _ in _shown(page, "nll")] == _best_first(nll, higher=False)
    header.click()
    assert header.get_attribute("aria-sort") == "descending"
    finite = [c for c in _best_first(nll, higher=False) if np.isfinite(nll[c])]
    assert [c for c, v in _shown(page, "nll") if np.isfinite(v)] == finite[::-1]
    # a suite offers its own presets only
    suite = str(results["suite"].dropna().iloc[0])
    page.select_option("#filter-suite", suite)
    offered = page.locator("#filter-preset option").all_inner_texts()
    in_suite = sorted(results.loc[results["suite"] == suite, "preset"].unique())
    assert offered == ["all", *in_suite]
    page.select_option("#filter-suite", "")
    page.locator('#leaderboard th[data-key="spearman_eu"]').click()  # back to the default
    # every image and chart is drawn with a size
    for img in page.locator("img").all():
        assert img.evaluate("e => e.complete && e.naturalWidth > 0"), img.get_attribute("src")
        box = img.bounding_box()
        assert box and box["width"] > 0 and box["height"] > 0
    charts = page.locator(".plotly-graph-div").all()
    assert len(charts) == 2
    for chart in charts:
        box = chart.bounding_box()
        assert box and box["width"] > 100 and box["height"] > 100
        assert chart.locator(".point").count() > 0  # the runs are drawn
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(screenshot), full_page=True)
    # every link resolves, on the index and on every page it links to
    pages = [p for p in _local_links(page, site) if p.suffix == ".html"]
    for target in _local_links(page, site):
        assert target.is_file(), f"index.html links to a missing {target}"
    for target in sorted(set(pages)):
        other = view.open(target)
        for linked in _local_links(other, site):
            assert linked.is_file(), f"{target.name} links to a missing {linked}"
        for img in other.locator("img").all():
            drawn = img.evaluate("e => e.complete && e.naturalWidth > 0")
            assert drawn, (target.name, img.get_attribute("src"))
    assert not view.problems, view.problems
    kinds = (".html", ".css", ".js", ".png")
    weight = sum(f.stat().st_size for f in site.rglob("*") if f.suffix in kinds)
    return {"pages": len(set(pages)) + 1, "rows": len(shown), "weight_kb": weight / 1024}


def _screenshot_dir(tmp_path: Path) -> Path:
    return Path(os.environ.get("UDORA_SCREENSHOT_DIR") or tmp_path)


def _tiny_site(root: Path, methods: str) -> Path:
    from tiny_presets import two_tiny_presets
    from typer.testing import CliRunner

    from udora.experiments.cli.main import app

    (path_a, path_b), data = two_tiny_presets(root)
    out = root / "results"
    runner = CliRunner()
    bench = runner.invoke(
        app,
        [
            "bench",
            "--presets",
            f"{path_a},{path_b}",
            "--methods",
            methods,
            "--quick",
            "--seeds",
            "0,1",
            "--out",
            str(out),
            "--data-dir",
            str(data),
        ],
    )
    assert bench.exit_code == 0, bench.output
    report = runner.invoke(app, ["report", str(out), "--data-dir", str(data)])
    assert report.exit_code == 0, report.output
    return out / "report"


@pytest.mark.slow  # seconds of compile: in the slow set (CI runs it)
def test_the_main_commands_report_in_a_browser(browser, tmp_path):
    site = MAIN_SITE
    if not (site / "index.html").is_file():
        if os.environ.get("CI"):
            pytest.fail(f"{site / 'index.html'} is missing: CI runs the README's main command")
        site = _tiny_site(tmp_path, "blr,gp_oracle,nn_ensemble")
    seen = check_site(browser, site, _screenshot_dir(tmp_path) / "leaderboard-main.png")
    assert seen["rows"] >= 3


@pytest.mark.slow
def test_a_report_with_a_meta_section_in_a_browser(browser, tmp_path):
    site = _tiny_site(tmp_path, "blr,gp_oracle,nn_ensemble,nn_dropout,nn_bagging")
    seen = check_site(browser, site, _screenshot_dir(tmp_path) / "leaderboard-tiny.png")
    assert seen["rows"] == 5
    # 4 methods besides the GP reference on every (preset, seed): the meta-evaluation
    text = (site / "report.md").read_text()
    assert "## Meta-evaluation" in text
    assert "Left out of the rankings: gp_oracle: reads the task's generating prior" in text
    for name in ("meta_tau.png", "meta_iauc.png", "meta_iauc_curves.png"):
        assert f"(meta/{name})" in text and (site / "meta" / name).stat().st_size > 1000
    cells = pd.read_csv(site / "meta" / "meta_cells.csv")
    assert set(cells["methods"]) == {4}
    assert (site / "meta.html").is_file()
    view = Page(browser)
    meta = view.open(site / "meta.html")
    assert "Meta-evaluation" in meta.title()
    assert meta.locator("table").count() >= 1 and meta.locator("img").count() >= 2
    assert not view.problems, view.problems
