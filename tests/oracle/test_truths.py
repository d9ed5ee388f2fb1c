"""Ground-truth families (oracle.truths, oracle.features) against independent computations.

The random features of every kernel component reproduce the textbook kernel
(tests/oracle/numpy_kernels.py) within their Monte Carlo error; the features family's
weight-space posterior equals a dense function-space solve with the Gram ``Phi Phi^T``;
the warped family's task equals a dense solve with the kernel at warped inputs; the
posterior draws of both converge to the task's posterior (seeded Monte Carlo); and the GP
family keeps every task hash it had.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from numpy_kernels import numpy_kernel, numpy_sum_kernel
from typer.testing import CliRunner

from udora.oracle.features import kernel_features
from udora.oracle.preset import PresetError, parse_preset
from udora.oracle.task import build_task
from udora.oracle.truths import FeatureTruth

COMPONENTS = [
    {"type": "rbf", "variance": 1.3, "lengthscale": [0.7, 1.4, 1.0]},
    {"type": "matern12", "variance": 0.8, "lengthscale": 1.1},
    {"type": "matern32", "variance": 1.0, "lengthscale": [1.2, 0.6, 0.9]},
    {"type": "matern52", "variance": 2.0, "lengthscale": 0.9},
    {"type": "rational_quadratic", "variance": 0.5, "lengthscale": 0.8, "alpha": 1.0},
    {"type": "rational_quadratic", "variance": 1.0, "lengthscale": 1.3, "alpha": 2.5},
    {"type": "powered_exponential", "variance": 1.0, "lengthscale": 1.5, "power": 1.0},
    {"type": "powered_exponential", "variance": 0.7, "lengthscale": 1.0, "power": 2.0},
    {"type": "periodic", "variance": 0.9, "lengthscale": [0.8, 1.5, 1.1], "period": 1.7},
    {"type": "linear", "variance": 0.3},
    {"type": "arccosine", "variance": 1.1, "order": 0},
    {
        "type": "arccosine",
        "variance": 0.6,
        "order": 1,
        "weight_variance": [1.0, 0.5, 2.0],
        "bias_variance": 0.3,
    },
    {"type": "arccosine", "variance": 0.4, "order": 2},
]


@pytest.mark.parametrize("spec", COMPONENTS, ids=lambda s: f"{s['type']}-{s.get('order', '')}")
def test_random_features_reproduce_each_kernel_component(spec):
    """``Phi Phi^T`` is a mean over D features of ``D phi_j(x) phi_j(y)``; every entry lies
    within 5 standard errors (their sd over features / sqrt D) of the textbook kernel."""
    rng = np.random.default_rng(3)
    Z = rng.normal(size=(12, 3))
    D = 20_000
    Phi = kernel_features([spec], 3, D, np.random.default_rng(11))(Z)
    exact = numpy_kernel(spec, Z, Z)
    if spec["type"] == "linear":  # exact features: no Monte Carlo at all
        np.testing.assert_allclose(Phi @ Phi.T, exact, rtol=1e-12)
        return
    terms = D * Phi[:, None, :] * Phi[None, :, :]  # (12, 12, D), mean = the estimate
    estimate, se = terms.mean(axis=2), terms.std(axis=2) / np.sqrt(D)
    assert np.all(np.abs(estimate - exact) <= 5 * se + 1e-12), np.max(np.abs(estimate - exact) / se)


def test_other_powers_of_the_powered_exponential_have_no_features():
    spec = {"type": "powered_exponential", "variance": 1.0, "power": 1.5}
    with pytest.raises(ValueError, match=r"power 1 or 2, got 1\.5"):
        kernel_features([spec], 3, 10, np.random.default_rng(0))


def _dense_posterior(K_PS, K_SS, k_PP, y, noise, mean):
    """Function-space posterior by a dense solve: mean and variance (N,)."""
    A = K_SS + np.diag(noise)
    return mean + K_PS @ np.linalg.solve(A, y - mean), k_PP - np.sum(
        K_PS * np.linalg.solve(A, K_PS.T).T, axis=1
    )


def test_the_features_posterior_is_the_dense_solve_with_the_feature_gram():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(60, 3))
    S = rng.choice(60, 25, replace=False)
    phi = kernel_features(COMPONENTS[:3] + COMPONENTS[9:10], 3, 30, np.random.default_rng(1))
    truth = FeatureTruth(phi, 0.4)
    noise = rng.uniform(0.05, 0.3, 25)
    y = rng.normal(size=25)
    mean, var = truth.condition(Z[S], y, noise).predict(Z)
    Phi = phi(Z)
    K = Phi @ Phi.T
    dense_mean, dense_var = _dense_posterior(K[:, S], K[np.ix_(S, S)], np.diag(K), y, noise, 0.4)
    np.testing.assert_allclose(mean, dense_mean, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(var, dense_var, rtol=1e-7, atol=1e-10)


TINY_KERNEL = [
    {"type": "matern32", "variance": 1.0, "lengthscale": [0.8, 1.5, 1.2]},
    {"type": "linear", "variance": 0.2},
]


@pytest.mark.parametrize("family", ["warped", "features"])
def test_a_familys_task_equals_a_dense_solve_and_its_draws_converge(synthetic_preset, family):
    """The task's posterior against a dense solve (warped: the textbook kernel at
    ``sinh(2 asinh z) / 2``; features: the Gram of its features); 3000 posterior draws'
    mean and variance within 5 standard errors of it."""
    preset, data = synthetic_preset(rows=150, kernel=TINY_KERNEL, truth=family)
    task = build_task(preset, 4, data_dir=data)
    std = task.prior.standardiser
    Z = std.x(task.X)
    S = task.train_idx
    noise = task.noise_var[S] / std.y_sd**2
    y = std.y(task.y_train)
    mean = preset.mean.value
    if family == "warped":
        W = np.sinh(2.0 * np.arcsinh(Z)) / 2.0
        K = numpy_sum_kernel(TINY_KERNEL, W, W)
    else:
        Phi = kernel_features(TINY_KERNEL, 3, 64, _truth_stream(0))(Z)
        K = Phi @ Phi.T
    dense_mean, dense_var = _dense_posterior(K[:, S], K[np.ix_(S, S)], np.diag(K), y, noise, mean)
    np.testing.assert_allclose(std.y(task.post_mean), dense_mean, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(task.post_var / std.y_sd**2, dense_var, rtol=1e-6, atol=1e-8)
    G, _ = task.posterior_draws(3000, seed=9)
    se_mean = np.sqrt(task.post_var / 3000)
    assert np.all(np.abs(G.mean(axis=0) - task.post_mean) <= 5 * se_mean + 1e-9)
    se_var = task.post_var * np.sqrt(2 / 2999)  # sd of a Gaussian sample variance
    assert np.all(np.abs(G.var(axis=0, ddof=1) - task.post_var) <= 5 * se_var + 1e-9)


def _truth_stream(seed):
    from udora.oracle.streams import stream

    return stream(seed, "truth_features")


def test_the_features_prior_lies_in_the_span_of_its_features(synthetic_preset):
    wide = {"family": "features", "features": 20}
    preset, data = synthetic_preset(rows=120, kernel=TINY_KERNEL, truth=wide)
    task = build_task(preset, 1, data_dir=data)
    std = task.prior.standardiser
    Phi = kernel_features(TINY_KERNEL, 3, 20, _truth_stream(0))(std.x(task.X))
    assert Phi.shape == (120, 23)  # 20 random, 3 exact linear
    f = std.y(task.f) - preset.mean.value
    beta, *_ = np.linalg.lstsq(Phi, f, rcond=None)
    np.testing.assert_allclose(Phi @ beta, f, atol=1e-9)


def test_the_gp_family_keeps_every_task_hash(synthetic_preset):
    from udora.experiments.run.spec import task_identity

    preset, _ = synthetic_preset(rows=60)
    explicit = preset.with_overrides({"truth": "gp"})
    assert "truth" not in task_identity(preset)
    assert task_identity(explicit) == task_identity(preset)
    warped = task_identity(preset.with_overrides({"truth": "warped"}))
    assert warped["truth"] == {"family": "warped", "warp": 2.0, "features": None, "seed": None}
    wider = preset.with_overrides({"truth": "features", "truth.features": 256})
    assert task_identity(wider)["truth"]["features"] == 256


@pytest.mark.parametrize(
    ("truth", "fragment"),
    [
        ({"family": "gp", "warp": 2.0}, "warp is not a field of the 'gp' family"),
        ({"family": "features", "warp": 1.0}, "(it takes features, seed)"),
        ("student", "Input should be 'gp', 'warped' or 'features'"),
        ({"family": "warped", "warp": -1}, "greater than 0"),
    ],
)
def test_a_bad_truth_is_one_error_naming_the_field(synthetic_preset, truth, fragment):
    preset, _ = synthetic_preset(rows=60)
    data = preset.model_dump()
    data["truth"] = truth
    with pytest.raises(PresetError, match=r"field 'truth") as err:
        parse_preset(data, "p.yaml")
    assert fragment in str(err.value)


def test_oracle_build_writes_a_familys_targets(synthetic_preset, tmp_path):
    """``udora oracle build --set preset.truth=warped`` writes the warped task's arrays."""
    from udora.experiments.cli.main import app
    from udora.oracle.preset import preset_to_yaml

    preset, data = synthetic_preset(rows=90, kernel=TINY_KERNEL)
    (tmp_path / "p.yaml").write_text(preset_to_yaml(preset))
    result = CliRunner().invoke(
        app,
        [
            "oracle",
            "build",
            "--preset",
            str(tmp_path / "p.yaml"),
            "--seed",
            "2",
            "--data-dir",
            data,
            "--out",
            str(tmp_path / "o"),
            "--set",
            "preset.truth=warped",
            "--set",
            "preset.truth.warp=1.5",
        ],
    )
    assert result.exit_code == 0, result.output
    arrays = np.load(tmp_path / "o" / "oracle.npz")
    info = json.loads((tmp_path / "o" / "oracle.json").read_text())
    assert info["truth"] == {"family": "warped", "warp": 1.5, "features": None, "seed": None}
    task = build_task(
        preset.with_overrides({"truth": {"family": "warped", "warp": 1.5}}), 2, data_dir=data
    )
    std = task.prior.standardiser
    W = np.sinh(1.5 * np.arcsinh(std.x(arrays["X"]))) / 1.5
    S = arrays["train_idx"]
    K = numpy_sum_kernel(TINY_KERNEL, W, W)
    noise = arrays["noise_var"][S] / std.y_sd**2
    mean, var = _dense_posterior(
        K[:, S], K[np.ix_(S, S)], np.diag(K), std.y(arrays["y_train"]), noise, 0.0
    )
    np.testing.assert_allclose(std.y(arrays["post_mean"]), mean, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(arrays["post_var"] / std.y_sd**2, var, rtol=1e-6, atol=1e-8)
    bad = CliRunner().invoke(
        app,
        [
            "oracle",
            "build",
            "--preset",
            str(tmp_path / "p.yaml"),
            "--out",
            str(tmp_path / "x"),
            "--set",
            "width=3",
        ],
    )
    assert bad.exit_code != 0 and "oracle build takes preset fields only" in str(bad.exception)
