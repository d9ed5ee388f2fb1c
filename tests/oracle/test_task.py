"""Whole-pipeline checks of build_task: calibration over seeds, noise, determinism, errors."""

import json

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from udora.experiments.cli.main import app
from udora.oracle.preset import PresetError
from udora.oracle.store import ARRAYS
from udora.oracle.task import build_task


def test_posterior_is_calibrated_over_seeds(synthetic_preset):
    """z = (f - m_S)/s_f over 40 seeds x 300 points: mean 0, sd 1 (MC tolerance)."""
    preset, data = synthetic_preset(rows=300, shift=[0.5, 0.3, 0.2, 0.0, 0.0])
    z = []
    for seed in range(40):
        t = build_task(preset, seed, data_dir=data)
        z.append((t.f - t.post_mean) / np.sqrt(t.post_var))
    z = np.concatenate(z)
    # z is correlated within a seed; per-seed means give an honest standard error
    per_seed = z.reshape(40, -1).mean(axis=1)
    assert abs(z.mean()) < 4 * per_seed.std() / np.sqrt(40)
    assert abs(z.std() - 1) < 0.05


def test_realised_noise_is_gaussian_with_the_model_variance(synthetic_preset):
    preset, data = synthetic_preset(rows=600)
    t = build_task(preset, 7, data_dir=data)
    u = (t.y - t.f) / np.sqrt(t.noise_var)
    assert stats.kstest(u, "norm").pvalue > 0.01
    resid = (t.y_train - t.f[t.train_idx]) / np.sqrt(t.noise_var[t.train_idx])
    assert stats.kstest(resid, "norm").pvalue > 0.01
    # fresh noise on the pool: independent of the training noise at repeated points
    assert not np.allclose(t.y[t.train_idx], t.y_train)
    ratio = np.sqrt(t.noise_var.max() / t.noise_var.min())
    assert ratio == pytest.approx(3.0)  # std_max / std_min


def test_same_seed_identical_other_seed_differs(synthetic_preset):
    preset, data = synthetic_preset()
    a, b = build_task(preset, 3, data_dir=data), build_task(preset, 3, data_dir=data)
    c = build_task(preset, 4, data_dir=data)
    for name in ARRAYS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    for name in ("train_idx", "f", "y", "post_mean"):
        assert not np.array_equal(getattr(a, name), getattr(c, name)), name
    np.testing.assert_array_equal(a.X, c.X)  # the pool depends on pool_seed only


def test_pool_subsample_and_bin_quotas(synthetic_preset):
    preset, data = synthetic_preset(
        rows=400, pool_size=250, n_train=100, shift=[0.4, 0.1, 0.0, 0.1, 0.4]
    )
    t = build_task(preset, 0, data_dir=data)
    assert t.X.shape == (250, 3) and t.train_idx.shape == (100,)
    assert t.meta["bin_counts"] == [40, 10, 0, 10, 40]
    other = build_task(preset.with_overrides({"pool_seed": 1}), 0, data_dir=data)
    assert not np.array_equal(t.X, other.X)


def test_conditional_sampling_above_the_joint_limit(synthetic_preset):
    """Large-pool path: joint at training points, exact marginals elsewhere; still calibrated."""
    preset, data = synthetic_preset(rows=300)
    z = []
    for seed in range(30):
        t = build_task(preset, seed, data_dir=data, joint_limit=50)
        assert t.meta["joint_sampling"] is False
        z.append((t.f - t.post_mean) / np.sqrt(t.post_var))
    z = np.concatenate(z)
    assert abs(z.mean()) < 0.1 and abs(z.std() - 1) < 0.05


def test_task_prior_reproduces_noise(synthetic_preset):
    preset, data = synthetic_preset()
    t = build_task(preset, 0, data_dir=data)
    prior = t.prior
    np.testing.assert_allclose(prior.noise_std(t.X) ** 2, t.noise_var, rtol=1e-12)


@pytest.mark.parametrize(
    ("fields", "fragment"),
    [
        ({"kernel": [{"type": "sqexp", "variance": 1.0}]}, "unknown type 'sqexp'"),
        ({"kernel": [{"type": "rbf", "variance": 1.0, "lengthscale": [1.0, 1.0]}]}, "d=3"),
        ({"shift": [0.3, 0.3, 0.3, 0.3, 0.3]}, "sum to 1"),
        ({"n_train": 500}, "must not exceed pool_size"),
        ({"colour": "blue"}, "'colour': unknown key"),
    ],
)
def test_bad_preset_fields_give_one_clear_error(synthetic_preset, fields, fragment):
    with pytest.raises(PresetError, match=fragment):
        synthetic_preset(**fields)


def test_non_finite_covariates_are_named(synthetic_preset, tmp_path):
    preset, data = synthetic_preset()
    import pandas as pd

    frame = pd.read_csv(tmp_path / "synth.csv.gz")
    frame.loc[17, "x1"] = np.inf
    frame.to_csv(tmp_path / "synth.csv.gz", index=False)
    with pytest.raises(ValueError, match="non-finite covariate 'x1' in row 17"):
        build_task(preset, 0, data_dir=data)


def test_real_preset_and_cli_files(tmp_path, monkeypatch):
    """concrete from the package that ships it (no data directory), through the CLI."""
    monkeypatch.delenv("UDORA_DATA_DIR", raising=False)
    result = CliRunner().invoke(
        app, ["oracle", "build", "--preset", "concrete", "--seed", "2", "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    with np.load(tmp_path / "oracle.npz") as z:
        assert sorted(z.files) == sorted(ARRAYS)
        assert z["X"].shape == (1030, 8) and z["train_idx"].shape == (750,)
        assert all(z[k].dtype == np.float64 for k in ARRAYS if k != "train_idx")
    info = json.loads((tmp_path / "oracle.json").read_text())
    for key in (
        "preset",
        "seed",
        "x_mean",
        "x_sd",
        "y_mean",
        "y_sd",
        "kernel",
        "mean",
        "noise",
        "bin_counts",
        "n_unique_train",
        "jitter",
        "joint_sampling",
    ):
        assert key in info, key
    assert info["bin_counts"] == [300, 188, 112, 75, 75]  # 0.4/0.25/0.15/0.1/0.1 of 750
    shown = CliRunner().invoke(app, ["oracle", "show", str(tmp_path)])
    assert "median_sigma_f" in shown.output and "1030" in shown.output


def test_noise_for_median_std_gives_that_median_on_the_built_pool(synthetic_preset):
    """The noise a paper preset's aleatoric_std asks for, checked on the task it builds: the
    pool's median noise sd in target units is that value, and std_max / std_min = 3."""
    from udora.oracle.preset import Noise
    from udora.oracle.task import noise_for_median_std

    preset, data = synthetic_preset(rows=300)
    noise = noise_for_median_std(preset, 0.7, data)
    task = build_task(preset.model_copy(update={"noise": Noise(**noise)}), 0, data_dir=data)
    sigma = np.sqrt(task.noise_var)
    assert np.median(sigma) == pytest.approx(0.7, rel=1e-9)
    assert sigma.max() / sigma.min() == pytest.approx(3.0, rel=1e-9)
