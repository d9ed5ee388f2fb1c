"""The report's tuning section on a tiny tuned grid: labels, tables and their numbers."""

import json
import warnings

import numpy as np
import pytest
import yaml
from scipy import stats
from tiny_presets import two_tiny_presets
from typer.testing import CliRunner

from udora.experiments.cli.main import app
from udora.experiments.results.store import load_runs
from udora.experiments.tuning import section as report_tuning

runner = CliRunner()
pytestmark = pytest.mark.slow  # a tune and two benches (about 10 s): CI's slow set


@pytest.fixture(scope="module")
def tuned_grid(tmp_path_factory):
    """tune blr (5 trials) on two tiny presets, bench default and --tuned into one folder."""

    root = tmp_path_factory.mktemp("tuned_grid")
    presets, data = two_tiny_presets(root, std_max=0.3)
    common = ["--presets", ",".join(presets), "--data-dir", str(data), "--methods", "blr"]
    tuned, out = root / "tuned", root / "results"
    for args in (
        ["tune", *common, "--trials", "5", "--out", str(tuned)],
        ["bench", *common, "--out", str(out)],
        ["bench", *common, "--tuned", str(tuned), "--out", str(out)],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
    return tuned, out


def test_tuned_runs_are_one_config_per_protocol(tuned_grid):
    _, out = tuned_grid
    table, _ = load_runs(out)
    assert sorted(table["config"].unique()) == ["blr", "blr@tuned"]
    tuned = table[table["config"] == "blr@tuned"]
    assert tuned["config_hash"].nunique() == 2  # its values differ per preset, by design
    protocol = json.loads(tuned["tuning_protocol"].iloc[0])
    assert protocol == {
        "search": "bayes",
        "trials": 5,
        "objective": "nll",
        "seed": 0,
        "tuning_val_fraction": 0.2,
    }


def test_tuned_vs_default_reads_the_runs_own_numbers(tuned_grid):
    _, out = tuned_grid
    table, _ = load_runs(out)
    frame = report_tuning.tuned_vs_default(table)
    assert frame["method"].tolist() == ["blr"] and frame["presets"].tolist() == [2]
    records = [json.loads(p.read_text()) for p in out.glob("*/blr/*/seed-0/result.json")]
    tuned = [r["metrics"]["spearman_eu"] for r in records if r["config_source"] != "default"]
    default = [r["metrics"]["spearman_eu"] for r in records if r["config_source"] == "default"]
    assert frame["EU rho tuned"].iloc[0] == pytest.approx(np.mean(tuned), abs=1e-12)
    assert frame["EU rho default"].iloc[0] == pytest.approx(np.mean(default), abs=1e-12)


def test_objective_vs_oracle_against_scipy_on_the_trial_records(tuned_grid):
    tuned, out = tuned_grid
    table, _ = load_runs(out)
    frame = report_tuning.objective_vs_oracle(table)
    assert len(frame) == 2
    for row in frame.to_dict("records"):
        data = yaml.safe_load((tuned / row["preset"] / "blr.yaml").read_text())
        files = (tuned / "sweeps").glob(f"{row['preset']}-blr-*/trial-*/trial.json")
        trials = [json.loads(p.read_text()) for p in files]
        assert len(trials) == 5 == row["trials"]
        value = np.array([t["value"] for t in trials])
        oracle = np.array([t["oracle"]["spearman_eu"] for t in trials])
        # blr's EU ranking can be the same for every trial (its ranks do not move with
        # alpha and sigma when fit_intercept is drawn equal): then both sides are NaN
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", stats.ConstantInputWarning)
            expected = stats.spearmanr(-value, oracle).statistic
        assert row["rho(-objective, oracle EU rho)"] == pytest.approx(
            expected, abs=1e-12, nan_ok=True
        )
        chosen = next(t for t in trials if t["k"] == data["best_trial"])
        assert chosen["value"] == value.min()  # selection by the objective alone
        better = int(np.sum(oracle > chosen["oracle"]["spearman_eu"]))
        assert row["chosen trial's oracle rank"] == 1 + better


def test_report_has_the_tuning_section(tuned_grid):
    _, out = tuned_grid
    result = runner.invoke(app, ["report", str(out)])
    assert result.exit_code == 0, result.output
    text = (out / "report" / "report.md").read_text()
    assert "## Tuning" in text and "bayes search, 5 trials, validation nll" in text
    assert "| blr | 2 |" in text  # the tuned-against-default row over both presets
    assert "### Chosen values" in text and "alpha=" in text
    page = (out / "report" / "tuning.html").read_text()  # the section as an HTML page
    assert "<h2>Tuning</h2>" in page and "<table>" in page and "alpha=" in page


def test_runs_recorded_with_only_the_tuned_files_path_and_hash(tuned_grid, tmp_path):
    """Early tuned runs recorded no protocol: it is read from their tuned file, and only
    while the file still has the recorded hash."""
    import shutil

    _, out = tuned_grid
    copy = tmp_path / "results"
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns("report", ".udora-lock"))
    for path in copy.glob("*/blr/*/seed-0/result.json"):
        record = json.loads(path.read_text())
        if record["config_source"] != "default":
            source = record["config_source"]
            record["config_source"] = {"path": source["path"], "hash": source["hash"]}
            path.write_text(json.dumps(record))
    table, _ = load_runs(copy)
    assert sorted(table["config"].unique()) == ["blr", "blr@tuned"]
    moved = next(
        p
        for p in copy.glob("*/blr/*/seed-0/result.json")
        if json.loads(p.read_text())["config_source"] != "default"
    )
    record = json.loads(moved.read_text())
    record["config_source"]["hash"] = "0" * 12  # the tuned file changed since
    moved.write_text(json.dumps(record))
    table, _ = load_runs(copy)
    labels = set(table["config"])
    assert "blr@tuned" in labels and any(c.startswith("blr[") for c in labels)


def test_a_release_report_reads_the_tuned_configs_it_ships(tuned_grid, tmp_path):
    """A release's rows name their tuned configs in its own tuned/ folder (no machine
    path); the report of the release reads them there and shows the chosen values the
    report of the runs shows."""
    import shutil

    import pandas as pd

    from udora.experiments.publish.artefact import build_release

    tuned, out = tuned_grid
    build_release([out], tmp_path / "rel")
    shutil.copytree(tuned, tmp_path / "rel" / "tuned")
    rows = pd.read_parquet(tmp_path / "rel" / "results.parquet")
    assert set(rows["tuned_file"].dropna()) == {f"tuned/{p}/blr.yaml" for p in set(rows["preset"])}
    for source, folder in ((out, "runs"), (tmp_path / "rel", "rel-report")):
        result = runner.invoke(app, ["report", str(source), "--out", str(tmp_path / folder)])
        assert result.exit_code == 0, result.output
    chosen = [
        (tmp_path / f / "report.md").read_text().split("### Chosen values")[1].split("\n\n")[1]
        for f in ("runs", "rel-report")
    ]
    assert chosen[0] == chosen[1] and "blr" in chosen[0]
    shutil.rmtree(tmp_path / "rel" / "tuned")  # configs not shipped: said, never "(default)"
    result = runner.invoke(app, ["report", str(tmp_path / "rel"), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "r" / "report.md").read_text()
    assert "(not readable here: " in text and "(default)" not in text
