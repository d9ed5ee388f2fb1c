"""Offline sweeps: `sweeps` proposals, trials on disk, resume, failures, tune, bench --tuned."""

import dataclasses
import json
from typing import ClassVar

import numpy as np
import pytest
import yaml
from scipy import stats
from typer.testing import CliRunner

from udora.experiments.cli.main import app
from udora.experiments.tuning import on_wandb as sweep_wandb
from udora.experiments.tuning import proposals as sp
from udora.experiments.tuning import sweep_file as sweep_config
from udora.experiments.tuning import sweeps as sr
from udora.experiments.tuning.trials import load_trials
from udora.methods import register
from udora.methods.blr import BayesianLinearRegression, BLRConfig
from udora.methods.registry import unregister

runner = CliRunner()


def _sweep_file(tmp_path, preset, method="blr", search="bayes", trials=4):
    config = sweep_config.sweep_config(str(preset), method, search=search, trials=trials)
    return sweep_config.write_sweep_config(config, tmp_path / f"{method}-{search}.yaml"), config


@pytest.mark.parametrize("search", ["random", "bayes"])
def test_sweep_writes_trials_whose_objective_recomputes(tiny_preset, tmp_path, search):
    preset, data = tiny_preset
    path, config = _sweep_file(tmp_path, preset, search=search)
    summary = sr.run_sweep(path, tmp_path / "out", trials=4, data_dir=data)
    assert summary.ran == 4 and summary.n_ok == 4 and not summary.interrupted
    folder = sp.sweep_dir(config, tmp_path / "out")
    assert summary.folder == folder and sorted(p.name for p in folder.glob("trial-*")) == [
        f"trial-{k}" for k in range(4)
    ]
    configs = set()
    for k in range(4):
        record = json.loads((folder / f"trial-{k}" / "trial.json").read_text())
        arrays = np.load(folder / f"trial-{k}" / "validation.npz")
        total = arrays["aleatoric"] + arrays["epistemic"]
        # independently of udora's objective: scipy's Gaussian log density
        value = -np.mean(stats.norm.logpdf(arrays["targets"], arrays["mean"], np.sqrt(total)))
        assert record["status"] == "ok" and record["metric"] == "val_nll"
        assert record["value"] == pytest.approx(value, rel=1e-12)
        assert record["config"]["alpha"] == record["params"]["alpha"]
        configs.add(json.dumps(record["overrides"], sort_keys=True))
    assert len(configs) == 4  # the search proposed distinct configurations
    assert summary.best["value"] == min(t["value"] for t in summary.trials)


def test_rerun_resumes_and_feeds_finished_trials_back(tiny_preset, tmp_path):
    preset, data = tiny_preset
    path, _ = _sweep_file(tmp_path, preset)
    out = tmp_path / "out"
    args = ["sweep", "run", str(path), "--out", str(out), "--data-dir", str(data)]
    first = runner.invoke(app, [*args, "--trials", "2"])
    assert first.exit_code == 0, first.output
    assert "trial-0 ok val_nll=" in first.output and "2 trials (2 ok, 0 failed" in first.output
    before = {p: p.stat().st_mtime_ns for p in out.glob("*/trial-*/trial.json")}
    second = runner.invoke(app, [*args, "--trials", "4"])
    assert second.exit_code == 0, second.output
    assert "trial-0 " not in second.output and "trial-3 ok" in second.output
    assert "4 trials (4 ok, 0 failed, 2 ran now)" in second.output
    after = {p: p.stat().st_mtime_ns for p in out.glob("*/trial-*/trial.json")}
    assert len(after) == 4 and all(after[p] == t for p, t in before.items())
    # the same proposals as one uninterrupted sweep: the search is seeded by the sweep
    straight = sr.run_sweep(path, tmp_path / "straight", trials=4, data_dir=data)
    resumed = load_trials(next(out.iterdir()))
    assert [t["params"] for t in straight.trials] == [t["params"] for t in resumed]


class _FlakyConfig(BLRConfig):
    SEARCH_SPACE: ClassVar[dict] = {"alpha": {"values": [0.5, 2.0, 0.25]}}


@pytest.fixture
def flaky_method():
    class _Flaky(BayesianLinearRegression):
        """Raises for alpha > 1 (failure test)."""

        Config = _FlakyConfig

        def fit(self, X, y, *, seed, knowledge=None):
            if self.config.alpha > 1:
                raise RuntimeError("deliberate failure for alpha > 1")
            return super().fit(X, y, seed=seed, knowledge=knowledge)

    register("test_flaky")(_Flaky)
    yield "test_flaky"
    unregister("test_flaky")


def test_failing_trial_is_recorded_and_the_sweep_goes_on(tiny_preset, tmp_path, flaky_method):
    preset, data = tiny_preset
    path, config = _sweep_file(tmp_path, preset, method=flaky_method, search="grid", trials=3)
    out = tmp_path / "out"
    args = ["sweep", "run", str(path), "--out", str(out), "--data-dir", str(data), "--jobs", "1"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "3 trials (2 ok, 1 failed" in result.output
    assert "failed: RuntimeError: deliberate failure for alpha > 1" in result.output
    trials = load_trials(sp.sweep_dir(config, out))
    failed = [t for t in trials if t["status"] == "failed"]
    assert len(failed) == 1 and failed[0]["params"]["alpha"] == 2.0
    assert failed[0]["value"] is None and "deliberate failure" in failed[0]["error"]
    runs = sp._as_sweep_runs(trials, "val_nll")
    assert [r.state for r in runs].count("failed") == 1
    # bayes after a failure still proposes (the failed run is imputed as the worst)
    assert len(sp.propose({**config, "method": "bayes"}, trials, 1)) == 1


def test_wandb_online_without_credentials_exits_2_and_runs_nothing(
    tiny_preset, tmp_path, monkeypatch
):
    """Asked for online (WANDB_MODE=online) with no credentials: nothing runs. Without
    WANDB_MODE the sweep runs offline (tests/experiments/run/test_wandb.py)."""
    preset, data = tiny_preset
    path, _ = _sweep_file(tmp_path, preset)
    for var in ("WANDB_API_KEY", "WANDB_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("WANDB_MODE", "online")
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "wandb-config"))
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["sweep", "run", str(path), "--out", str(out), "--wandb", "--data-dir", str(data)]
    )
    assert result.exit_code == 2
    assert "WANDB_MODE=online but no W&B credentials" in result.output and not out.exists()


def test_wandb_api_key_reads_the_environment_then_the_netrc(monkeypatch, tmp_path):
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    assert sweep_wandb.wandb_api_key() == "x" * 40
    monkeypatch.delenv("WANDB_API_KEY")
    monkeypatch.delenv("WANDB_BASE_URL", raising=False)
    rc = tmp_path / "netrc"
    monkeypatch.setenv("NETRC", str(rc))
    assert sweep_wandb.wandb_api_key() is None  # no file
    rc.write_text("machine example.org login user password nope\n")
    rc.chmod(0o600)
    assert sweep_wandb.wandb_api_key() is None  # no entry for W&B
    rc.write_text("machine api.wandb.ai login user password " + "k" * 40 + "\n")
    assert sweep_wandb.wandb_api_key() == "k" * 40


def test_best_config_ignores_every_oracle_array(tiny_preset, tmp_path, monkeypatch):
    from udora.experiments.run import execute as run_module

    preset, data = tiny_preset
    path, _ = _sweep_file(tmp_path, preset, trials=5)
    honest = sr.run_sweep(path, tmp_path / "honest", trials=5, data_dir=data)
    original = run_module._cached_task

    def scrambled(preset_json, seed, data_dir):
        task = original(preset_json, seed, data_dir)
        rng = np.random.default_rng(11)
        noise = {
            k: rng.uniform(0.1, 5.0, size=np.shape(getattr(task, k)))
            for k in ("f", "y", "post_mean", "post_var", "noise_var")
        }
        return dataclasses.replace(task, **noise)

    monkeypatch.setattr(run_module, "_cached_task", scrambled)
    noisy = sr.run_sweep(path, tmp_path / "noisy", trials=5, data_dir=data)
    assert noisy.best["overrides"] == honest.best["overrides"]
    assert [t["value"] for t in noisy.trials] == [t["value"] for t in honest.trials]


def test_bad_sweep_file_and_trials_are_user_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("method: bayes\n")
    result = runner.invoke(app, ["sweep", "run", str(bad), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "parameters" in result.output


def test_tune_writes_best_configs_and_passes_gp_oracle_through(tiny_preset, tmp_path):
    preset, data = tiny_preset
    out = tmp_path / "tuned"
    args = [
        "tune",
        "--presets",
        str(preset),
        "--methods",
        "blr,gp_oracle",
        "--trials",
        "3",
        "--data-dir",
        str(data),
        "--out",
        str(out),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "tiny/gp_oracle: no tunable parameters" in result.output
    blr = yaml.safe_load((out / "tiny" / "blr.yaml").read_text())
    oracle = yaml.safe_load((out / "tiny" / "gp_oracle.yaml").read_text())
    assert (
        oracle["config"] == {} and oracle["tuned"] is False and "jitter" in oracle["default_config"]
    )
    assert set(blr["config"]) == {"alpha", "sigma", "fit_intercept"}
    assert blr["trials"] == {"ok": 3, "failed": 0} and blr["tuned"] is True
    trials = load_trials(blr["sweep_dir"])
    best = min(trials, key=lambda t: t["value"])
    assert blr["value"] == best["value"] and blr["config"] == best["overrides"]
    config = sweep_config.load_sweep_config(blr["sweep_file"])
    assert sp.sweep_hash(config) == blr["sweep_hash"]
    again = runner.invoke(app, args)  # resumes: nothing runs again
    assert again.exit_code == 0 and "0 ran now" in again.output
    assert yaml.safe_load((out / "tiny" / "blr.yaml").read_text()) == blr


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_bench_tuned_uses_the_tuned_config_and_records_its_source(tiny_preset, tmp_path):
    preset, data = tiny_preset
    tuned = tmp_path / "tuned"
    common = ["--presets", str(preset), "--data-dir", str(data)]
    result = runner.invoke(
        app, ["tune", *common, "--methods", "blr,gp_oracle", "--trials", "2", "--out", str(tuned)]
    )
    assert result.exit_code == 0, result.output
    out = tmp_path / "res"
    methods = "blr,gp_oracle,gp_linear"
    bench = runner.invoke(
        app, ["bench", *common, "--methods", methods, "--tuned", str(tuned), "--out", str(out)]
    )
    assert bench.exit_code == 0, bench.output
    assert "gp_linear: no tuned file" in bench.output
    records = {
        r["method"]: r
        for r in map(
            json.loads, map(lambda p: p.read_text(), out.glob("tiny/*/*/seed-0/result.json"))
        )
    }
    blr = yaml.safe_load((tuned / "tiny" / "blr.yaml").read_text())
    assert {k: records["blr"]["config"][k] for k in blr["config"]} == blr["config"]
    assert records["blr"]["config_source"]["path"] == str(tuned / "tiny" / "blr.yaml")
    assert len(records["blr"]["config_source"]["hash"]) == 12
    assert records["gp_oracle"]["config_source"]["path"].endswith("gp_oracle.yaml")
    assert records["gp_linear"]["config_source"] == "default"


@pytest.mark.parametrize("search", ["random", "grid", "bayes"])
def test_proposals_depend_on_the_sweep_and_its_trials_only(search):
    """The same sweep and trials propose the same values, whatever the global generators
    hold, and leave them as they were (random search drew from Python's unseeded
    ``random``: two runs of one sweep file proposed different values)."""
    import random

    config = {
        "method": search,
        "metric": {"name": "val_nll", "goal": "minimize"},
        "parameters": {
            "width": {"values": [16, 32, 64, 128]},
            "lr": {"values": [1e-4, 1e-3, 1e-2, 1e-1]}
            if search == "grid"
            else {"distribution": "log_uniform_values", "min": 1e-4, "max": 1e-1},
        },
    }
    proposals = []
    for seed in (1, 2):
        random.seed(seed)
        np.random.seed(seed)  # noqa: NPY002 (whatever another library left there)
        before = (random.random(), np.random.random())  # noqa: NPY002
        random.seed(seed)
        np.random.seed(seed)  # noqa: NPY002
        proposals.append(sp.propose(config, [], 3))
        assert (random.random(), np.random.random()) == before  # noqa: NPY002
    assert proposals[0] == proposals[1] and len(proposals[0]) == 3
