"""The report keys runs by (method, config) and averages over seeds only; bad runs are skipped.

A width ablation of nn_ensemble (4 widths x 2 presets x 2 seeds) must give 4 config rows,
each the mean over its own seeds then presets (docs/running.md, "The report"), never the
pooled mean over widths; unreadable result.json files are skipped with a warning naming
each path.
"""

import json
import re
import shutil
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import yaml

from udora.experiments.grid.bench import make_grid, run_grid
from udora.experiments.report.write import write_report
from udora.experiments.results import figures
from udora.experiments.results.store import UnreadableRunWarning, config_name, load_runs
from udora.experiments.results.summaries import method_summary

# one training and one prediction program per width (about a minute on a cold cache)
pytestmark = pytest.mark.slow

WIDTHS = (16, 32, 64, 128)
SEEDS = (0, 1)
BUDGET = {"n_epochs": 3, "n_members": 2}


@pytest.fixture(scope="module")
def ablation(tmp_path_factory):
    """(results folder, data folder): nn_ensemble at 4 widths + blr, on 2 tiny presets."""
    root = tmp_path_factory.mktemp("ablation")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 2))
    frame = pd.DataFrame(X, columns=["a", "b"]).assign(target=np.sin(X[:, 0]) + X[:, 1])
    data = root / "data"
    data.mkdir()
    frame.to_csv(data / "tiny.csv.gz", index=False)
    presets = []
    # the same shapes (so one compiled program per width serves both), other noise
    for name, noise in (("tiny_a", (0.1, 0.3)), ("tiny_b", (0.2, 0.5))):
        preset = {
            "name": name,
            "suite": "test",
            "source": {"file": "tiny.csv.gz"},
            "features": ["a", "b"],
            "pool_size": 120,
            "n_train": 40,
            "kernel": [{"type": "rbf", "variance": 1.0, "lengthscale": [1.0, 1.5]}],
            "noise": {"std_min": noise[0], "std_max": noise[1]},
            "shift": [0.4, 0.3, 0.2, 0.1, 0.0],
        }
        path = root / f"{name}.yaml"
        path.write_text(yaml.safe_dump(preset))
        presets.append(str(path))
    out = root / "results"
    with pytest.MonkeyPatch.context() as mp:  # runs resolve and run against this data folder
        mp.setenv("UDORA_DATA_DIR", str(data))
        runs = make_grid(presets, ["blr"], SEEDS)
        for width in WIDTHS:
            runs += make_grid(presets, ["nn_ensemble"], SEEDS, {**BUDGET, "width": width})
        summary = run_grid(runs, out, data_dir=data)
    assert (summary.done, summary.failed) == (20, 0)
    return out, data


@pytest.fixture(scope="module")
def report(ablation):
    out, _ = ablation
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnreadableRunWarning)  # the good folder warns nothing
        path = write_report(out, out / "report")
    return path


def test_config_labels():
    assert config_name("nn_ensemble", {}) == "nn_ensemble"
    over = {"width": 64, "preset.n_train": 300}
    assert config_name("nn_ensemble", over) == "nn_ensemble[preset.n_train=300,width=64]"
    assert config_name("x", {"shift": [0.5, 0.0], "act": "relu"}) == "x[act=relu,shift=[0.5,0.0]]"


def test_tables_keep_configs_apart(report):
    table = pd.read_parquet(report.parent / "results.parquet")
    csv = pd.read_csv(report.parent / "results.csv")
    assert len(table) == len(csv) == 20
    assert {"config", "config_hash", "width", "n_epochs", "n_members"} <= set(csv.columns)
    nn = table[table["method"] == "nn_ensemble"]
    labels = sorted(nn["config"].unique())
    assert len(labels) == 4 and "nn_ensemble[n_epochs=3,n_members=2,width=64]" in labels
    assert sorted(nn["width"].unique()) == list(WIDTHS)
    assert table.loc[table["method"] == "blr", "width"].isna().all()
    assert set(table.loc[table["method"] == "blr", "config"]) == {"blr"}

    label = "nn_ensemble[n_epochs=3,n_members=2,width=64]"
    one = nn[nn["width"] == 64]
    per_preset = one.groupby("preset")["spearman_eu"].mean()  # over seeds, per preset
    expected_mean, expected_sd = per_preset.mean(), per_preset.std(ddof=1)
    pooled = nn.groupby("preset")["spearman_eu"].mean().mean()  # over all widths: wrong
    assert not np.isclose(expected_mean, pooled)

    summary = method_summary(load_runs(report.parent.parent)[0])
    row = summary.loc[("nn_ensemble", label)]
    assert row["spearman_eu mean"] == pytest.approx(expected_mean, rel=1e-12)
    assert row["spearman_eu sd"] == pytest.approx(expected_sd, rel=1e-12)
    assert row["runs"] == 4 and row["failed"] == 0
    assert len(summary) == 5

    # the same numbers in report.md, in the row of this config
    lines = [
        ln for ln in report.read_text().splitlines() if ln.startswith(f"| nn_ensemble | {label} |")
    ]
    cells = [c.strip() for c in lines[0].strip("|").split("|")]
    head = next(
        ln for ln in report.read_text().splitlines() if ln.startswith("| method | config |")
    )
    columns = [c.strip() for c in head.strip("|").split("|")]
    shown = dict(zip(columns, cells, strict=True))
    assert float(shown["spearman_eu mean"]) == pytest.approx(expected_mean, abs=6e-4)
    assert shown["runs"] == "4"
    assert re.search(r"Kendall's W .*\(2 presets, 5 configs", report.read_text())


def test_figures_have_one_entry_and_colour_per_config(ablation):
    out, _ = ablation
    _, curves = load_runs(out)
    for kind in ("au", "eu"):
        fig = figures.calibration(curves, kind)
        legend = fig.axes[0].get_legend()
        texts = [t.get_text() for t in legend.get_texts()]
        assert len(texts) == len(set(texts)) == 5
        nn = [i for i, t in enumerate(texts) if t.startswith("nn_ensemble[")]
        assert len(nn) == 4
        colours = {tuple(legend.legend_handles[i].get_color()) for i in nn}
        assert len(colours) == 4
        plt.close(fig)
    fig = figures.risk_coverage(curves, "tiny_a")
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert len(texts) == len(set(texts)) == 5
    plt.close(fig)


@pytest.mark.slow  # two whole reports, ~5 s
def test_unreadable_runs_are_skipped_with_their_paths(ablation, tmp_path, capsys):
    out, _ = ablation
    copy = tmp_path / "results"
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns("report"))
    files = sorted(copy.glob("*/*/*/seed-*/result.json"))
    truncated, empty, no_preset = files[0], files[5], files[9]
    truncated.write_text(truncated.read_text()[:200])
    empty.write_text("")
    rec = json.loads(no_preset.read_text())
    del rec["preset"]
    no_preset.write_text(json.dumps(rec))
    with pytest.warns(UnreadableRunWarning) as caught:
        report = write_report(copy, copy / "report")
    messages = [str(w.message) for w in caught if w.category is UnreadableRunWarning]
    for path in (truncated, empty, no_preset):
        assert sum(str(path) in m for m in messages) == 1, path
    assert any("'preset'" in m for m in messages)
    table = pd.read_parquet(report.parent / "results.parquet")
    assert len(table) == 17
    assert str(truncated) in report.read_text()
    assert report.read_text().startswith("# udora report\n\n17 runs")

    # the command line prints the warnings and finishes; nothing readable: one error line
    from typer.testing import CliRunner

    from udora.experiments.cli.main import app

    result = CliRunner().invoke(app, ["report", str(copy)])
    assert result.exit_code == 0, result.output
    assert sum(line.startswith("warning: skipped") for line in result.output.splitlines()) == 3
    assert all(str(path) in result.output for path in (truncated, empty, no_preset))
    for path in files:
        path.write_text("{")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnreadableRunWarning)
        with pytest.raises(FileNotFoundError, match=re.escape(str(copy))):
            load_runs(copy)
