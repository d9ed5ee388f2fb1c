"""Runner, grid and report end to end: files, resume, failure isolation, stored metrics."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from udora.experiments.grid.bench import make_grid, run_grid
from udora.experiments.report.write import write_report
from udora.experiments.run.execute import parse_set, run_one
from udora.methods import register
from udora.methods.base import MethodConfig, Prediction, UQMethod
from udora.methods.registry import unregister
from udora.oracle.preset import PresetError, load_preset
from udora.oracle.task import build_task
from udora.scoring import score


class _Config(MethodConfig):
    pass


class _Raising(UQMethod):
    """Raises in fit (failure-isolation test)."""

    Config = _Config

    def fit(self, X, y, *, seed, knowledge=None):
        raise RuntimeError("deliberate failure")

    def predict(self, X):
        raise AssertionError("unreachable")


class _NaN(UQMethod):
    """Returns NaN epistemic variances (failure-isolation test)."""

    Config = _Config

    def fit(self, X, y, *, seed, knowledge=None):
        self.mu_ = float(np.mean(y))
        return self

    def predict(self, X):
        n = X.shape[0]
        return Prediction(np.full(n, self.mu_), np.ones(n), np.full(n, np.nan))


@pytest.fixture
def failing_methods():
    register("test_raising")(_Raising)
    register("test_nan")(_NaN)
    yield
    unregister("test_raising")
    unregister("test_nan")


def test_run_writes_result_and_predictions(tiny_preset, tmp_path):
    path, data = tiny_preset
    res = run_one(path, "blr", 3, {"alpha": 2.0}, tmp_path / "out", data_dir=data)
    assert res.status == "ok"
    assert res.path.parts[-4:-1] == ("tiny", "blr", res.path.parent.name)
    rec = json.loads((res.path / "result.json").read_text())
    assert rec["config"]["alpha"] == 2.0 and rec["seed"] == 3 and rec["status"] == "ok"
    assert set(rec["timings"]) == {"oracle", "fit", "predict", "predict_joint", "score"}
    assert {"udora", "jax"} <= set(rec["versions"])
    # metrics stored in result.json equal a recomputation from predictions.npz + a new task
    with np.load(res.path / "predictions.npz") as z:
        pred = Prediction(z["mean"], z["aleatoric"], z["epistemic"], None, z["joint_epistemic"])
    task = build_task(load_preset(path), 3, data_dir=data)
    again = score(task, pred)
    for key, value in rec["metrics"].items():
        if value is None:
            assert np.isnan(again[key]), key
        else:
            assert again[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key


def test_set_reaches_method_and_preset_fields(tiny_preset, tmp_path):
    path, data = tiny_preset
    over = parse_set(["preset.n_train=60", "preset.noise.std_min=0.2", "alpha=0.5"])
    res = run_one(path, "blr", 0, over, tmp_path, data_dir=data)
    rec = json.loads((res.path / "result.json").read_text())
    assert rec["preset_config"]["n_train"] == 60 and rec["config"]["alpha"] == 0.5
    other = run_one(path, "blr", 0, {}, tmp_path, data_dir=data)
    assert other.path != res.path  # a derived variant gets its own config hash
    with pytest.raises(PresetError, match="unknown preset field 'n_trian'"):
        run_one(path, "blr", 0, {"preset.n_trian": 3}, tmp_path, data_dir=data)
    with pytest.raises(ValueError, match="valid fields"):
        run_one(path, "blr", 0, {"widht": 3}, tmp_path, data_dir=data)


@pytest.mark.slow  # 3-14 s: the default set's budget
def test_failures_are_recorded_and_the_grid_goes_on(tiny_preset, tmp_path, failing_methods):
    path, data = tiny_preset
    methods = ["test_raising", "blr", "test_nan", "gp_oracle"]
    specs = make_grid([str(path)], methods, [0, 1], data_dir=data)
    summary = run_grid(specs, tmp_path, data_dir=data)
    assert (summary.done, summary.failed, summary.skipped) == (8, 4, 0)
    report = write_report(tmp_path, tmp_path / "report")
    table = pd.read_parquet(report.parent / "results.parquet")
    status = table.groupby("method")["status"].agg(lambda s: set(s))
    assert status["blr"] == {"ok"} and status["gp_oracle"] == {"ok"}
    errors = table.set_index("method")["error"]
    assert all("deliberate failure" in e for e in errors["test_raising"])
    assert all("epistemic" in e and "not finite" in e for e in errors["test_nan"])
    assert pd.read_csv(report.parent / "results.csv").shape[0] == 8
    # gp_oracle is the exact posterior: its EU ranking is the oracle's
    assert table[table["method"] == "gp_oracle"]["spearman_eu"].min() > 0.999
    for name in ("spearman_au_eu", "eu_decomposition", "calibration_eu", "risk_coverage_tiny"):
        for ext in ("png", "pdf"):
            assert (report.parent / f"{name}.{ext}").stat().st_size > 1000, name
    text = report.read_text()
    assert "Kendall's W" in text and "## Failed runs" in text
    site = (report.parent / "index.html").read_text()  # the HTML report lists them too
    assert "4 failed runs" in site and site.count("deliberate failure") == 2
    # a second run of the same grid skips every ok run and retries only the failures
    again = run_grid(specs, tmp_path, data_dir=data)
    assert (again.skipped, again.done) == (4, 4)


@pytest.mark.slow  # ~10 s; the default run keeps under 5 minutes
def test_interrupted_grid_resumes_without_loss_or_duplicates(tiny_preset, tmp_path):
    path, data = tiny_preset
    exe = str(Path(sys.executable).with_name("udora"))
    out = tmp_path / "grid"
    seeds = ",".join(map(str, range(12)))
    cmd = [
        exe,
        "bench",
        "--presets",
        str(path),
        "--methods",
        "blr,gp_oracle",
        "--seeds",
        seeds,
        "--out",
        str(out),
        "--data-dir",
        str(data),
    ]
    env = {**os.environ, "UDORA_JAX_CACHE": "off"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.time() + 120
    while time.time() < deadline and len(list(out.glob("*/*/*/seed-*/result.json"))) < 3:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    first = len(list(out.glob("*/*/*/seed-*/result.json")))
    assert 3 <= first < 24, "the grid was not interrupted mid-way"
    assert proc.returncode == 130
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    line = f"{24 - first} ran, 0 failed, 0 skipped, {first} already done"
    assert line in " ".join(done.stdout.split())
    results = sorted(out.glob("*/*/*/seed-*/result.json"))
    assert len(results) == 24 and not list(out.glob("*/*/*/.seed-*"))
    keys = {(r.parts[-3], r.parts[-2]) for r in results}
    assert len(keys) == 24  # each (method, seed) exactly once
    assert all(json.loads(r.read_text())["status"] == "ok" for r in results)


@pytest.mark.slow  # seconds of compile: in the slow set (CI runs it)
def test_method_diagnostics_are_recorded(tiny_preset, tmp_path):
    path, data = tiny_preset
    budget = {"n_epochs": 5, "n_checkpoints": 4, "swag_burn_in": 5, "n_members": 3}
    swag = run_one(path, "swag", 0, budget, tmp_path, data_dir=data)
    blr = run_one(path, "blr", 0, {}, tmp_path, data_dir=data)
    record = json.loads((swag.path / "result.json").read_text())
    assert swag.status == "ok" and 0.0 <= record["diagnostics"]["drift_fraction"] <= 1.0
    assert json.loads((blr.path / "result.json").read_text())["diagnostics"] == {}
