"""A report built from hostile names and values runs nothing in a browser.

A method registered in this file has a free-text config field; runs set it to HTML and
script payloads (which end up in config labels on every page and in the sections'
Markdown), and one run fails with an error message that is HTML. Every page of the
report is opened in headless Chromium (test_site_browser's fixture) and must show no
dialog, no console error (a blocked script would be one: the content-security policy
refuses inline scripts) and no page error; the payloads must be shown as text.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from test_site_browser import Page, browser  # noqa: F401  (the fixture)

from udora.experiments.grid.bench import make_grid, run_grid
from udora.experiments.report.write import write_report
from udora.methods.base import MethodConfig, Prediction, UQMethod
from udora.methods.registry import register, unregister

PAYLOADS = (
    "<img src=x onerror=alert(1)>",
    "</script><script>alert(2)</script>",
    "<!--<script>",
    '"><svg onload=alert(3)>',
    "x](javascript:alert(4))",
)


class Labelled(UQMethod):
    """The training mean; a free-text ``label`` that changes nothing but the config."""

    family = "other"

    class Config(MethodConfig):
        label: str = "plain"

    def fit(self, X, y, *, seed, knowledge=None):
        if self.config.label == "fail":
            raise RuntimeError("<img src=x onerror=alert(5)> went wrong")
        self.mean_, self.var_ = float(np.mean(y)), float(np.var(y))
        self.fitted_ = True
        return self

    def predict(self, X):
        n = X.shape[0]
        spread = np.linspace(0.1, 1.0, n)
        return Prediction(np.full(n, self.mean_), np.full(n, self.var_), spread)


@pytest.fixture
def hostile_site(tiny_preset, tmp_path):
    """A results folder of five tiny presets (a ranking needs five) x the hostile configs,
    a failing one, a plain one and blr, and its report."""
    register("labelled")(Labelled)
    try:
        path, data = tiny_preset
        spec = yaml.safe_load(path.read_text())
        presets = []
        for i in range(5):
            presets.append(tmp_path / f"tiny{i}.yaml")
            presets[-1].write_text(yaml.safe_dump({**spec, "name": f"tiny{i}", "pool_seed": i}))
        runs = []
        for label in (*PAYLOADS, "fail", "plain"):
            runs += make_grid(map(str, presets), ["labelled"], [0], {"label": label}, data_dir=data)
        runs += make_grid(map(str, presets), ["blr"], [0], data_dir=data)
        out = tmp_path / "results"
        run_grid(runs, out, jobs=1, data_dir=data)
        write_report(out, out / "report", data_dir=str(data))
        yield out / "report"
    finally:
        unregister("labelled")


@pytest.mark.slow  # a browser and a report: seconds
def test_no_page_of_a_hostile_report_runs_anything(browser, hostile_site):  # noqa: F811
    pages = sorted(hostile_site.glob("*.html"))
    names = {p.name for p in pages}
    assert {"index.html", "rankings.html", "presets.html"} <= names, names  # sections too
    shown = ""
    for path in pages:
        view, dialogs = Page(browser), []
        view.page.on("dialog", lambda d, seen=dialogs: (seen.append(d.message), d.dismiss()))
        page = view.open(path)
        page.wait_for_timeout(200)  # charts and the leaderboard script have run
        assert not dialogs, (path.name, dialogs)
        assert not view.problems, (path.name, view.problems)
        assert page.evaluate("document.querySelectorAll('img[onerror], svg[onload]').length") == 0
        shown += page.inner_text("body")
        view.page.close()
    for payload in PAYLOADS:
        assert payload in shown, payload  # shown as text somewhere
    assert "<img src=x onerror=alert(5)> went wrong" in shown
