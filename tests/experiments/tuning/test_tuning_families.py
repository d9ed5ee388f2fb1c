"""Tuning under another ground truth (`udora tune --set preset.truth=...`): the trials'
tasks hold the family, their analysis-only oracle metrics use that family's exact
posterior of the fit part (against a dense numpy posterior on warped inputs), the tuned
file records the held field, and `bench --tuned` refuses a task without it."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from dense_gp import dense_fit_part_posterior
from scipy import stats
from typer.testing import CliRunner

from udora.experiments.cli.main import app
from udora.experiments.tuning import protocol as tuning
from udora.experiments.tuning import sweep_file as sc

runner = CliRunner()


def test_a_warped_trial_is_scored_against_the_warped_posterior_of_its_fit_part(tiny_preset):
    path, data = tiny_preset
    result = tuning.trial(path, "blr", 0, {"preset.truth": "warped", "alpha": 0.3}, data_dir=data)
    task = result.task
    assert task.preset.truth.family == "warped"
    metrics = tuning.trial_oracle_metrics(task, result)
    post_mean, post_var = dense_fit_part_posterior(task, result.fit_idx, task.preset.truth.warp)
    pred = result.model.predict(task.X)
    eu_target = post_var + (pred.mean - post_mean) ** 2
    expected = stats.spearmanr(pred.epistemic, eu_target).statistic
    assert metrics["spearman_eu"] == pytest.approx(expected, abs=1e-9)
    # the GP's posterior of the same fit part is another target: the family is used
    gp_mean, _ = dense_fit_part_posterior(task, result.fit_idx)
    assert np.max(np.abs(gp_mean - post_mean)) > 1e-3 * np.std(post_mean)


@pytest.mark.parametrize("family", ["gp", "warped", "features"])
def test_the_posterior_given_every_training_row_is_the_tasks_own(tiny_preset, family):
    path, data = tiny_preset
    task = tuning.trial(path, "blr", 0, {"preset.truth": family}, data_dir=data).task
    mean, var = task.posterior_given(np.arange(task.train_idx.size))
    np.testing.assert_allclose(mean, task.post_mean, rtol=1e-9, atol=1e-9 * np.abs(mean).max())
    np.testing.assert_allclose(var, task.post_var, rtol=1e-7, atol=1e-9 * var.max())


def test_under_the_gp_the_fit_part_posterior_equals_gp_oracle_on_it(tiny_preset):
    path, data = tiny_preset
    result = tuning.trial(path, "blr", 0, {}, data_dir=data)
    mean, var = result.task.posterior_given(result.fit_idx)
    ref_mean, ref_var = tuning._fit_part_posterior(result.task, result.fit_idx)  # gp_oracle
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(var, ref_var, rtol=1e-6, atol=1e-10)


def test_a_sweep_holds_a_preset_field_and_never_searches_one(tiny_preset, tmp_path):
    path, _ = tiny_preset
    config = sc.sweep_config(str(path), "blr", trials=2, fixed={"preset.truth": "warped"})
    assert config["parameters"]["preset.truth"] == {"value": "warped"}
    with pytest.raises(sc.SweepConfigError, match=r"truth\.family"):
        sc.sweep_config(str(path), "blr", trials=2, fixed={"preset.truth": "student"})
    config["parameters"]["preset.truth"] = {"values": ["gp", "warped"]}
    (bad := tmp_path / "bad.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(sc.SweepConfigError, match=r"parameters\.preset\.truth must be a fixed"):
        sc.load_sweep_config(bad)


@pytest.mark.slow  # two sweeps and three runs of a tiny preset
def test_tune_under_a_family_then_bench_only_under_it(tiny_preset, tmp_path):
    path, data = tiny_preset
    tuned = tmp_path / "tuned"
    args = ["--presets", str(path), "--data-dir", str(data)]
    out = runner.invoke(
        app,
        [
            "tune",
            *args,
            "--methods",
            "blr,gp_oracle",
            "--trials",
            "2",
            "--seed",
            "100",
            "--set",
            "preset.truth=warped",
            "--out",
            str(tuned),
        ],
    )
    assert out.exit_code == 0, out.output
    blr = yaml.safe_load((tuned / "tiny" / "blr.yaml").read_text())
    assert blr["protocol"]["preset"] == {"truth": "warped"}
    assert not any(k.startswith("preset.") for k in blr["config"])  # held, not tuned
    assert yaml.safe_load((tuned / "tiny" / "gp_oracle.yaml").read_text())["preset_fields"] == {
        "truth": "warped"
    }
    trials = [json.loads(p.read_text()) for p in (tuned / "sweeps").glob("*/trial-*/trial.json")]
    assert len(trials) == 2 and all(t["overrides"]["preset.truth"] == "warped" for t in trials)
    bench = ["bench", *args, "--methods", "blr,gp_oracle", "--seeds", "0", "--tuned", str(tuned)]
    refused = runner.invoke(app, [*bench, "--out", str(tmp_path / "gp")])
    assert refused.exit_code == 2, refused.output
    text = " ".join(refused.output.split())
    assert "was tuned with --set preset.truth=warped; these runs keep the preset's own" in text
    assert not (tmp_path / "gp").exists() or not any((tmp_path / "gp").rglob("result.json"))
    ran = runner.invoke(
        app, [*bench, "--set", "preset.truth=warped", "--out", str(tmp_path / "warped")]
    )
    assert ran.exit_code == 0, ran.output
    records = [json.loads(p.read_text()) for p in (tmp_path / "warped").rglob("result.json")]
    assert len(records) == 2
    assert {r["preset_config"]["truth"]["family"] for r in records} == {"warped"}
    blr_run = next(r for r in records if r["method"] == "blr")
    assert blr_run["config_source"]["preset_fields"] == {"truth": "warped"}
    assert blr_run["config"]["alpha"] == pytest.approx(blr["config"]["alpha"])
