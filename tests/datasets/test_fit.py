"""`udora presets fit` on a small subset against a dense numpy marginal likelihood."""

import shutil
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from typer.testing import CliRunner

from udora.experiments.cli.main import app
from udora.oracle.fit import fit_preset, mll_and_grad, standardised_subset
from udora.oracle.fit_box import BOUNDS
from udora.oracle.preset import load_preset


def matern32_mll(Z, t, variance, lengthscale, noise):
    """Per-point log N(t | 0, K + noise I) with an ARD Matern-3/2 K, textbook numpy."""
    r = np.sqrt(np.sum(((Z[:, None, :] - Z[None, :, :]) / lengthscale) ** 2, axis=-1))
    K = variance * (1 + np.sqrt(3) * r) * np.exp(-np.sqrt(3) * r)
    L = np.linalg.cholesky(K + noise * np.eye(t.size))
    a = np.linalg.solve(L, t)
    return -(0.5 * a @ a + np.log(np.diag(L)).sum() + 0.5 * t.size * np.log(2 * np.pi)) / t.size


@pytest.fixture(scope="module")
def fitted(shared_data):
    lines = []
    result = fit_preset(
        load_preset("qsar_fish"), subset=300, data_dir=shared_data, progress=lines.append
    )
    return result, lines


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_fit_is_the_dense_likelihood_and_no_nearby_point_beats_it(fitted, shared_data):
    result, lines = fitted
    assert len(lines) >= 5 and lines[3].startswith("refine on 300 rows")
    Z, t = standardised_subset(load_preset("qsar_fish"), 300, 0, shared_data)
    (comp,) = result.kernel
    theta = {
        "variance": comp["variance"],
        "lengthscale": np.asarray(comp["lengthscale"]),
        "noise": result.noise_variance,
    }
    best = matern32_mll(Z, t, **theta)
    assert result.mll_per_point == pytest.approx(best, rel=1e-9)
    lo, hi = BOUNDS["lengthscale"]
    assert np.all((theta["lengthscale"] > lo) & (theta["lengthscale"] < hi))  # interior
    # a 1% step of any one hyperparameter either way does not raise the likelihood
    for name in ("variance", "noise", *(f"ls{i}" for i in range(Z.shape[1]))):
        for factor in (0.99, 1.01):
            moved = {k: np.array(v, dtype=float) for k, v in theta.items()}
            if name.startswith("ls"):
                moved["lengthscale"][int(name[2:])] *= factor
            else:
                moved[name] = moved[name] * factor
            assert matern32_mll(Z, t, **moved) <= best + 1e-12, (name, factor)


@pytest.mark.slow  # an end-to-end run of ~10 s (the default set stays under 4 minutes)
def test_cli_fit_writes_a_loadable_yaml_with_its_record(tmp_path, shared_data):
    path = tmp_path / "qsar_small.yaml"
    shutil.copy(load_preset.__globals__["preset_dir"]() / "qsar_fish.yaml", path)
    result = CliRunner().invoke(
        app,
        ["presets", "fit", str(path), "--subset", "300", "--write", "--data-dir", str(shared_data)],
    )
    assert result.exit_code == 0, result.output
    written = load_preset(path)
    assert written.fit["subset"] == 300 and written.fit["backend"] == jax.default_backend()
    assert written.fit["mll_per_point"] > -1.5
    assert written.kernel != load_preset("qsar_fish").kernel  # refitted on 300 rows


def test_written_noise_below_the_floor_is_an_error(shared_data):
    p = load_preset("qsar_fish")
    below = p.model_copy(update={"fit": {**p.fit, "noise_variance": 5e-5}})
    with pytest.raises(ValueError, match="below the floor"):
        mll_and_grad(below, shared_data)


@pytest.mark.slow  # 3-14 s: the default set's budget
def test_cli_fit_with_too_small_a_subset_is_one_clear_error(shared_data):
    exe = Path(sys.executable).with_name("udora")
    proc = subprocess.run(
        [str(exe), "presets", "fit", "qsar_fish", "--subset", "0", "--data-dir", str(shared_data)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "subset must be at least 10 rows, got 0" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
