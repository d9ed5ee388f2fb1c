"""The shipped release in a browser and against a fresh run.

``udora report release`` builds the HTML report from the shipped table; in headless
Chromium its leaderboard marks "≈ best" exactly the configs an independent Friedman test
and Nemenyi critical difference (scipy, Demšar's formula) on the table's EU Spearman
ranks leave tied with the best. A shipped row of a package-copy preset (no data folder)
is rerun here on the cores it recorded and gives the same metrics.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from test_site_browser import Page, browser  # noqa: F401  (the fixture)
from typer.testing import CliRunner

from udora.experiments.cli.main import app
from udora.experiments.publish.artefact import primary_rows, read_release, release_folder

pytestmark = pytest.mark.slow
REFERENCES = {"gp_oracle", "gp_linear"}


def _shipped() -> pd.DataFrame:
    folder = release_folder("release")
    if not (folder / "manifest.json").is_file():
        pytest.fail("the package ships no release (release/manifest.json)")
    return read_release(folder)[0]


def _tied_with_best(table: pd.DataFrame, alpha: float = 0.05) -> set[str]:
    """Configs within Nemenyi's CD of the best mean EU rank (all of them when Friedman's
    test does not reject), from the primary rows' seed means: Demšar (2006)."""
    ok = primary_rows(table)
    ok = ok[(ok["status"] == "ok") & ~ok["method"].isin(REFERENCES)]
    ok = ok[ok["config"] == ok["config_base"]]  # method_seed variants are not ranked
    means = ok.pivot_table(
        index="preset", columns="config", values="spearman_eu", aggfunc="mean"
    ).dropna(axis=0)
    ranks = means.rank(axis=1, ascending=False)
    n, k = ranks.shape
    p = stats.friedmanchisquare(*[means[c] for c in means.columns]).pvalue
    if p >= alpha:
        return set(means.columns)
    cd = (
        stats.studentized_range.ppf(1 - alpha, k, np.inf)
        / np.sqrt(2)
        * np.sqrt(k * (k + 1) / (6 * n))
    )
    mean = ranks.mean(axis=0)
    return set(mean.index[mean - mean.min() <= cd])


def test_the_release_leaderboard_marks_the_configs_tied_with_the_best(browser, tmp_path):  # noqa: F811
    table = _shipped()
    site = tmp_path / "site"
    built = CliRunner().invoke(app, ["report", "release", "--out", str(site)])
    assert built.exit_code == 0, built.output
    view = Page(browser)
    page = view.open(site / "index.html")
    marked = set()
    rows = page.locator("#leaderboard tbody tr")
    for i in range(rows.count()):
        row = rows.nth(i)
        if row.locator(".tied-best").count():
            marked.add(row.get_attribute("data-config"))
    assert marked == _tied_with_best(table)
    assert 0 < len(marked) < table["config"].nunique()
    shot = os.environ.get("UDORA_SCREENSHOT_DIR")
    if shot:
        page.screenshot(path=os.path.join(shot, "leaderboard-release.png"), full_page=True)
    assert not view.problems, view.problems


def test_a_shipped_package_row_reruns_to_the_same_metrics(tmp_path, monkeypatch):
    """concrete from its package copy (no data folder) at the release's tuned catboost_ps
    config, seed 0, one pinned core as the release recorded: the same task, config and
    metrics as the shipped row."""
    monkeypatch.delenv("UDORA_DATA_DIR", raising=False)
    table = _shipped()
    row = table[
        (table["preset"] == "concrete")
        & (table["method"] == "catboost_ps")
        & (table["seed"] == 0)
        & (table["data_kind"] == "package")
        & (table["config"] == table["config_base"])
    ].iloc[0]
    assert int(row["cpus"]) == 1
    out, tuned = tmp_path / "again", str(release_folder("release") / "tuned")
    ran = CliRunner().invoke(
        app,
        [
            "bench",
            "--presets",
            "concrete",
            "--methods",
            "catboost_ps",
            "--seeds",
            "0",
            "--tuned",
            tuned,
            "--jobs",
            "1",
            "--cpus-per-run",
            "1",
            "--out",
            str(out),
        ],
    )
    assert ran.exit_code == 0, ran.output
    (path,) = out.glob("concrete/catboost_ps/*/seed-0/result.json")
    record = json.loads(path.read_text())
    assert record["task_hash"] == row["task_hash"] and record["config_hash"] == row["config_hash"]
    assert record["compute"]["cpus"] == 1
    for metric in ("spearman_eu", "spearman_au", "spearman_mean_f", "nll", "crps"):
        assert record["metrics"][metric] == pytest.approx(row[metric], rel=1e-9, abs=1e-12)
