"""Tuning: the validation split and objectives, trials that never read the oracle, sweep YAML."""

import dataclasses

import numpy as np
import pytest
import sweeps
import yaml
from scipy import stats
from scipy.stats import norm
from typer.testing import CliRunner

from udora import methods
from udora.experiments.cli.main import app
from udora.experiments.tuning import protocol as tuning
from udora.experiments.tuning import sweep_file as sweep_config

runner = CliRunner()


def test_gaussian_nll_and_rmse_match_an_independent_computation():
    rng = np.random.default_rng(1)
    mean, y = rng.normal(size=50), rng.normal(size=50)
    var = rng.uniform(0.1, 2.0, size=50)
    expected = -np.mean(norm.logpdf(y, loc=mean, scale=np.sqrt(var)))
    assert tuning.gaussian_nll(mean, var, y) == pytest.approx(expected, rel=1e-12)
    assert tuning.rmse(mean, y) == pytest.approx(np.sqrt(np.mean((y - mean) ** 2)), rel=1e-12)
    assert tuning.gaussian_nll(mean, np.zeros(50), y) == np.inf
    with pytest.raises(ValueError, match=r"shapes"):
        tuning.rmse(mean, y[:3])


def test_split_is_seeded_disjoint_covering_with_the_fraction():
    fit, val = tuning.split_training(40, seed=3, val_fraction=0.25)
    again = tuning.split_training(40, seed=3, val_fraction=0.25)
    assert all(np.array_equal(a, b) for a, b in zip((fit, val), again, strict=True))
    assert not np.array_equal(val, tuning.split_training(40, seed=4, val_fraction=0.25)[1])
    assert len(val) == 10 and len(fit) == 30
    assert not set(fit) & set(val) and set(fit) | set(val) == set(range(40))
    assert len(tuning.split_training(40, 0)[1]) == round(tuning.VAL_FRACTION * 40)
    with pytest.raises(ValueError, match=r"val_fraction"):
        tuning.split_training(40, 0, val_fraction=1.0)


def _check_recomputed(result):
    a = result.arrays
    total = a["aleatoric"] + a["epistemic"]
    expected = (
        tuning.gaussian_nll(a["mean"], total, a["targets"])
        if result.objective == "nll"
        else tuning.rmse(a["mean"], a["targets"])
    )
    assert result.value == expected


@pytest.mark.slow  # 3-14 s: the default set's budget
def test_trial_on_tiny_preset_returns_arrays_that_recompute_the_objective(tiny_preset):
    path, data = tiny_preset
    result = tuning.trial(path, "gp_oracle", 0, {}, "nll", data_dir=data)
    assert result.metric == "val_nll" and np.isfinite(result.value)
    assert len(result.arrays["targets"]) == 8 and len(result.fit_idx) == 32  # 0.2 of 40
    _check_recomputed(result)
    rmse = tuning.trial(path, "blr", 0, {"alpha": 0.5}, "rmse", data_dir=data)
    assert rmse.metric == "val_rmse" and rmse.config["alpha"] == 0.5
    _check_recomputed(rmse)


def test_trial_objective_ignores_every_oracle_array(tiny_preset):
    from udora.oracle.task import build_task

    path, data = tiny_preset
    task = build_task(str(path), 0, data_dir=data)
    rng = np.random.default_rng(7)
    noise = {
        k: rng.uniform(0.1, 5.0, size=np.shape(getattr(task, k)))
        for k in ("f", "y", "post_mean", "post_var", "noise_var")
    }
    scrambled = dataclasses.replace(task, **noise)
    for method in ("gp_oracle", "blr"):
        a = tuning.trial_on_task(task, method, 0)
        b = tuning.trial_on_task(scrambled, method, 0)
        assert a.value == b.value, method
        for name in ("mean", "epistemic"):
            assert np.array_equal(a.arrays[name], b.arrays[name]), (method, name)


def test_trial_oracle_metrics_match_a_dense_posterior_on_the_fit_part(tiny_preset):
    """The analysis-only oracle metrics of a trial, against a textbook numpy GP posterior
    conditioned on the fit part, and scipy's Spearman."""
    from dense_gp import dense_fit_part_posterior

    from udora.oracle.task import build_task

    path, data = tiny_preset
    task = build_task(str(path), 0, data_dir=data)
    result = tuning.trial_on_task(task, "blr", 0, {"alpha": 0.3})
    metrics = tuning.trial_oracle_metrics(task, result)
    post_mean, post_var = dense_fit_part_posterior(task, result.fit_idx)
    pred = result.model.predict(task.X)
    eu_target = post_var + (pred.mean - post_mean) ** 2
    expected = stats.spearmanr(pred.epistemic, eu_target).statistic
    assert metrics["spearman_eu"] == pytest.approx(expected, abs=1e-9)
    total = stats.spearmanr(pred.total, eu_target + task.noise_var).statistic
    assert metrics["spearman_total"] == pytest.approx(total, abs=1e-9)
    assert metrics["spearman_au"] is None  # blr's AU is constant: Spearman undefined
    # the trial's own objective is untouched by the analysis
    assert result.value == tuning.trial_on_task(task, "blr", 0, {"alpha": 0.3}).value


def test_trial_oracle_metrics_of_the_exact_gp_rank_eu_perfectly(tiny_preset):
    path, data = tiny_preset
    result = tuning.trial(path, "gp_oracle", 0, {}, "nll", data_dir=data)
    metrics = tuning.trial_oracle_metrics(result.task, result)
    assert metrics["spearman_eu"] == pytest.approx(1.0, abs=1e-12)
    assert metrics["spearman_au"] == pytest.approx(1.0, abs=1e-12)


def test_the_fit_part_posterior_is_stored_once_per_sweep_folder(tiny_preset, tmp_path, monkeypatch):
    """The first trial's analysis conditions the GP and stores the posterior; a later one
    (another process: the in-process cache emptied) reads it and conditions nothing."""
    from udora.experiments.tasks import arrays as oracle_arrays

    path, data = tiny_preset
    result = tuning.trial(path, "blr", 0, {"alpha": 0.3}, "nll", data_dir=data)
    first = tuning.trial_oracle_metrics(result.task, result, store=tmp_path)
    key = oracle_arrays.fit_part_key(result.task_hash, result.fit_idx)
    stored = oracle_arrays.load_posterior(tmp_path, key)
    assert stored is not None and stored[0].shape == (result.task.X.shape[0],)
    monkeypatch.setattr(tuning, "_POSTERIORS", {})

    def no_gp(*args):
        raise AssertionError("the stored posterior must be read, not computed")

    monkeypatch.setattr(tuning, "_fit_part_posterior", no_gp)
    other = tuning.trial(path, "blr", 0, {"alpha": 3.0}, "nll", data_dir=data)
    assert other.task_hash == result.task_hash
    assert np.array_equal(other.fit_idx, result.fit_idx)  # one split per (task, seed)
    again = tuning.trial_oracle_metrics(result.task, result, store=tmp_path)
    assert again == first
    tuning.trial_oracle_metrics(other.task, other, store=tmp_path)  # reads, computes nothing
    assert oracle_arrays.fit_part_key("t", np.arange(3)) != oracle_arrays.fit_part_key(
        "t", np.arange(1, 4)
    )
    npz, _ = oracle_arrays.paths(tmp_path, key)
    npz.write_bytes(npz.read_bytes()[:-10])  # truncated: an error naming the file
    with pytest.raises(ValueError, match=npz.name):
        tuning.trial_oracle_metrics(result.task, result, store=tmp_path)


def test_trial_knowledge_has_the_fit_part_size(tiny_preset):
    from udora.oracle.task import build_task

    path, data = tiny_preset
    seen = {}
    cls = methods.get_method_class("blr")
    original = cls.fit

    def spy(self, X, y, *, seed, knowledge=None):
        seen["n"], seen["rows"] = knowledge.n, X.shape[0]
        return original(self, X, y, seed=seed, knowledge=knowledge)

    task = build_task(str(path), 0, data_dir=data)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cls, "fit", spy)
        tuning.trial_on_task(task, "blr", 0)
    assert seen == {"n": 32, "rows": 32}


@pytest.mark.parametrize("search", ["random", "bayes"])
def test_sweep_init_writes_a_config_the_sweeps_package_runs(tmp_path, search):
    out = tmp_path / "s.yaml"
    args = [
        "sweep",
        "init",
        "--preset",
        "concrete",
        "--method",
        "nn_ensemble",
        "--search",
        search,
        "--trials",
        "5",
        "--objective",
        "rmse",
        "--out",
        str(out),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    config = yaml.safe_load(out.read_text())
    assert config["method"] == search and config["run_cap"] == 5
    assert config["metric"] == {"name": "val_rmse", "goal": "minimize"}
    assert {"method", "metric", "parameters", "command"} <= set(config)
    assert config["command"][-1] == "${args_no_hyphens}"
    proposal = sweeps.next_run(config, [])
    params = {k: v["value"] for k, v in proposal.config.items()}
    fields = set(methods.get_method_class("nn_ensemble").Config.field_names())
    assert set(params) - set(sweep_config.FIXED) <= fields
    assert params["preset"] == "concrete" and params["objective"] == "rmse"
    sweep_config.load_sweep_config(out)  # valid by our own check too
    # a proposal, as W&B's ${args_no_hyphens}, parses back into trial keywords
    kwargs = sweep_config.parse_trial_args([f"{k}={v}" for k, v in params.items()])
    assert kwargs["method"] == "nn_ensemble" and set(kwargs["config_overrides"]) <= fields


@pytest.mark.parametrize("method", methods.list_methods())
def test_every_method_gets_a_sweep_whose_proposal_reaches_its_config(tmp_path, method):
    """No search-space key may shadow a sweep key (swag's own ``val_fraction`` once did);
    each method is tuned on a preset of a kind it declares."""
    kinds = getattr(methods.get_method_class(method), "kinds", ("regression",))
    preset = "concrete" if "regression" in kinds else "banknote"
    config = sweep_config.sweep_config(preset, method, search="random", trials=2)
    path = sweep_config.write_sweep_config(config, tmp_path / "s.yaml")
    sweep_config.load_sweep_config(path)
    space = methods.get_method_class(method).Config().search_space()
    if not space:
        return
    params = {k: v["value"] for k, v in sweeps.next_run(config, []).config.items()}
    kwargs = sweep_config.parse_trial_args([f"{k}={v}" for k, v in params.items()])
    assert set(kwargs["config_overrides"]) == set(space)
    assert kwargs["val_fraction"] == tuning.VAL_FRACTION


def test_wandb_sweep_reads_the_file_as_written(tmp_path):
    """What `wandb sweep FILE` does on this machine before it contacts the server: wandb's
    own loader reads the file, and W&B's schema (the ``sweeps`` package, which the local
    controller validates with) has no complaint except ``run_cap``, a documented W&B key
    that the older ``sweeps`` 0.2 schema lacks and the server accepts."""
    from wandb.sdk.launch.sweeps import utils as wandb_sweep_utils

    out = tmp_path / "s.yaml"
    result = runner.invoke(
        app,
        [
            "sweep",
            "init",
            "--preset",
            "concrete",
            "--method",
            "swag",
            "--trials",
            "5",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    loaded = wandb_sweep_utils.load_sweep_config(str(out))
    assert loaded == yaml.safe_load(out.read_text())
    problems = sweeps.schema_violations_from_proposed_config(loaded)
    assert problems == ["Additional properties are not allowed ('run_cap' was unexpected)"]
    rest = {k: v for k, v in loaded.items() if k != "run_cap"}
    assert sweeps.schema_violations_from_proposed_config(rest) == []


def test_grid_needs_finite_values(tmp_path):
    out = tmp_path / "g.yaml"
    args = [
        "sweep",
        "init",
        "--preset",
        "concrete",
        "--method",
        "gp_linear",
        "--search",
        "grid",
        "--out",
        str(out),
    ]
    assert runner.invoke(app, args).exit_code == 0
    proposal = sweeps.next_run(yaml.safe_load(out.read_text()), [])
    assert proposal.config["mean"]["value"] in ("zero", "constant")
    with pytest.raises(tuning.SweepConfigError, match=r"grid search needs finite values.*alpha"):
        sweep_config.sweep_config("concrete", "blr", search="grid")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--preset", "nope", "--method", "blr"], "unknown preset 'nope'"),
        (["--preset", "concrete", "--method", "bogus"], "unknown method 'bogus'"),
        (["--preset", "concrete", "--method", "blr", "--objective", "mae"], "unknown objective"),
        (["--preset", "concrete", "--method", "blr", "--search", "tpe"], "unknown search"),
        (["--preset", "concrete", "--method", "blr", "--trials", "0"], "--trials"),
    ],
)
def test_sweep_init_bad_input_is_one_line_exit_2(tmp_path, extra, message):
    result = runner.invoke(app, ["sweep", "init", *extra, "--out", str(tmp_path / "s.yaml")])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize("out", ["s.txt", "missing/s.yaml", "."])
def test_sweep_init_malformed_out(tmp_path, out):
    target = tmp_path / out if out != "." else tmp_path
    args = ["sweep", "init", "--preset", "concrete", "--method", "blr", "--out", str(target)]
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "--out" in result.output
    assert len(result.output.strip().splitlines()) == 1


def _write(tmp_path, config):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_load_sweep_config_errors(tmp_path):
    good = sweep_config.sweep_config("concrete", "blr", search="random", trials=3)
    assert sweep_config.load_sweep_config(_write(tmp_path, good))["run_cap"] == 3

    bad = {**good, "parameters": {**good["parameters"], "widthh": {"values": [1, 2]}}}
    with pytest.raises(tuning.SweepConfigError, match=r"'widthh'.*valid fields: .*alpha"):
        sweep_config.load_sweep_config(_write(tmp_path, bad))

    params = {
        **good["parameters"],
        "alpha": {"distribution": "log_uniform_values", "min": -1.0, "max": 1.0},
    }
    with pytest.raises(tuning.SweepConfigError, match=r"'alpha'"):
        sweep_config.load_sweep_config(_write(tmp_path, {**good, "parameters": params}))

    params = {**good["parameters"], "alpha": {"distribution": "uniform", "min": -1.0, "max": 1.0}}
    with pytest.raises(tuning.SweepConfigError, match=r"parameter 'alpha': value -1.0"):
        sweep_config.load_sweep_config(_write(tmp_path, {**good, "parameters": params}))

    params = {**good["parameters"], "fit_intercept": {"values": ["maybe"]}}
    with pytest.raises(tuning.SweepConfigError, match=r"'fit_intercept'"):
        sweep_config.load_sweep_config(_write(tmp_path, {**good, "parameters": params}))

    broken = tmp_path / "broken.yaml"
    broken.write_text("method: [bayes\nparameters: {")
    with pytest.raises(tuning.SweepConfigError, match=r"broken.yaml.*not valid YAML"):
        sweep_config.load_sweep_config(broken)
    with pytest.raises(tuning.SweepConfigError, match=r"absent.yaml"):
        sweep_config.load_sweep_config(tmp_path / "absent.yaml")


def test_sweep_trial_command_prints_the_objective(tiny_preset):
    import json

    path, data = tiny_preset
    args = [
        "sweep",
        "trial",
        f"preset={path}",
        "method=blr",
        "seed=1",
        "objective=rmse",
        "alpha=0.5",
        "--data-dir",
        str(data),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["objective"] == "rmse" and summary["n_val"] == 8
    assert summary["val_rmse"] == tuning.trial(path, "blr", 1, {"alpha": 0.5}, "rmse", data).value
    bad = runner.invoke(app, ["sweep", "trial", "method=blr"])
    assert bad.exit_code == 2 and "missing preset" in bad.output
    bad = runner.invoke(
        app, ["sweep", "trial", f"preset={path}", "method=blr", "alpha=-1", "--data-dir", str(data)]
    )
    assert bad.exit_code == 2 and "alpha" in bad.output


def test_trials_runs_and_public_tasks_of_a_preset_share_one_task_build(
    tiny_preset, tmp_path, monkeypatch
):
    """In one process (a pool worker), a trial, a run and load_task of the same (preset,
    seed) build the task's GP once: they share one cache key (a trial keyed it with the
    preset's paper block, so a worker built the task twice)."""
    from udora.experiments.open.tasks import load_task
    from udora.experiments.run import execute
    from udora.oracle import task as oracle_task

    path, data = tiny_preset
    builds = []
    build = oracle_task.build_task
    monkeypatch.setattr(
        oracle_task, "build_task", lambda *a, **k: builds.append(a) or build(*a, **k)
    )
    execute._cached_task.cache_clear()
    result = tuning.trial(path, "blr", 3, data_dir=data)
    run = execute.run_one(path, "blr", 3, {}, tmp_path / "results", data_dir=data)
    public = load_task(path, 3, data)
    assert run.status == "ok" and len(builds) == 1
    np.testing.assert_array_equal(public.X_train, result.task.X_train)
