"""udora diagnose: Equations 31-32 against direct computations and known answers (a linear
fit of a quadratic, a well-specified GP), the sum check, and the command end to end."""

import json

import numpy as np
import pytest
from scipy import stats
from tiny_presets import two_tiny_presets
from typer.testing import CliRunner

from udora.experiments.cli.main import app
from udora.experiments.diagnostics.diagnose import (
    Diagnosis,
    diagnose,
    reference_indices,
    reference_means,
)
from udora.experiments.diagnostics.runner import run_diagnoses
from udora.experiments.run.spec import RunSpec, resolve
from udora.methods import get_method
from udora.methods.base import MethodConfig, UQMethod
from udora.methods.registry import register, unregister
from udora.oracle.preset import load_preset
from udora.oracle.task import build_task
from udora.scoring.decomposition import decompose

runner = CliRunner()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return two_tiny_presets(tmp_path_factory.mktemp("tiny"))


def test_decompose_is_equations_31_and_32():
    rng = np.random.default_rng(0)
    M, N = 5, 30
    f_hat, G, R = rng.normal(size=N), rng.normal(size=(M, N)), rng.normal(size=(M, N))
    post_mean, post_var = rng.normal(size=N), rng.uniform(0.1, 1.0, size=N)
    dec = decompose(f_hat, G, R, post_mean, post_var)
    own, ref = (f_hat - G) ** 2, (R - G) ** 2
    np.testing.assert_allclose(dec.estimation, (own - ref).mean(axis=0), rtol=1e-13)
    np.testing.assert_allclose(dec.approximation, ref.mean(axis=0), rtol=1e-13)
    np.testing.assert_allclose(dec.estimation + dec.approximation, own.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(dec.approximation_se, ref.std(axis=0, ddof=1) / np.sqrt(M))
    np.testing.assert_allclose(dec.estimation_se, (own - ref).std(axis=0, ddof=1) / np.sqrt(M))
    means = dec.pool_means(scale=2.0)
    assert means["sum"] == pytest.approx(own.mean() / 2.0)
    assert means["sum_se"] == pytest.approx(own.mean(axis=1).std(ddof=1) / np.sqrt(M) / 2)
    assert means["eu_target"] == pytest.approx(np.mean(post_var + (f_hat - post_mean) ** 2) / 2)
    est_draws = (own - ref).mean(axis=1)
    assert means["estimation_se"] == pytest.approx(est_draws.std(ddof=1) / np.sqrt(M) / 2)
    check = dec.sum_check()
    z = (own.mean() - np.mean(post_var + (f_hat - post_mean) ** 2)) / (2 * means["sum_se"])
    assert check["z"] == pytest.approx(z)
    assert check["p"] == pytest.approx(2 * stats.t.sf(abs(z), M - 1))
    shares = dec.shares()
    assert shares["estimation_share"] + shares["approximation_share"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match=r"draws and references must both have shape \(M, 30\)"):
        decompose(f_hat, G, R[:, :-1], post_mean, post_var)


def test_sum_is_the_eu_target_up_to_monte_carlo_error():
    # g_i ~ N(m, s2) independently per point: E (f - g)^2 = s2 + (f - m)^2 exactly
    rng = np.random.default_rng(1)
    N, M = 200, 400
    m, s2 = rng.normal(size=N), rng.uniform(0.1, 1.0, size=N)
    f_hat = m + rng.normal(size=N) * 0.5
    G = m + np.sqrt(s2) * rng.normal(size=(M, N))
    dec = decompose(f_hat, G, G + 0.1, m, s2)
    assert abs(dec.sum_check()["z"]) < 4.0
    assert abs(dec.sum_check()["relative_difference"]) < 0.05


def test_reference_inputs_cover_the_pool_evenly():
    rng = np.random.default_rng(2)
    idx = reference_indices(7, 24, rng)
    counts = np.bincount(idx, minlength=7)
    assert idx.size == 24 and set(counts) == {3, 4} and counts.sum() == 24
    assert np.array_equal(reference_indices(7, 24, np.random.default_rng(2)), idx)
    assert np.array_equal(np.bincount(reference_indices(5, 3, rng), minlength=5) <= 1, [True] * 5)


def test_linear_fit_of_a_quadratic_has_the_best_linear_fit_error():
    # g_i(x) = x^2 + a_i x + b_i: the best linear fit under the pool's distribution leaves
    # the residual r of x^2 on span{1, x} (least squares over the pool points, by lstsq);
    # BLR with a flat prior on 60 replicates of every point must find approx(x) = r(x)^2
    X = np.linspace(-1.0, 1.0, 200)[:, None]
    x = X[:, 0]
    rng = np.random.default_rng(3)
    G = np.stack([x**2 + a * x + b for a, b in rng.normal(size=(3, 2))])
    basis = np.column_stack([np.ones_like(x), x])
    coef, *_ = np.linalg.lstsq(basis, x**2, rcond=None)
    best_error = (x**2 - basis @ coef) ** 2
    R, _ = reference_means(
        lambda: get_method("blr", alpha=1e-8, sigma=0.1), X, G, np.full(200, 0.01), 60 * 200, seed=0
    )
    dec = decompose(G[0], G, R, G.mean(axis=0), np.zeros(200))
    # the fitted coefficients carry sampling error ~ 0.1 / sqrt(12000) ~ 1e-3
    np.testing.assert_allclose(dec.approximation, best_error, atol=5e-3)
    assert dec.approximation.mean() == pytest.approx(best_error.mean(), rel=0.02)


def _diagnose(path, data, method, scale, draws=8, **over):
    run = resolve(RunSpec(path, method, 0, over), data)
    record, arrays = diagnose(Diagnosis(run, draws, scale), str(data))
    assert record["status"] == "ok", record["error"]
    return record, arrays


@pytest.mark.slow  # seconds of compile: in the slow set (CI runs it)
def test_well_specified_gp_has_vanishing_approximation(tiny):
    # gp_oracle is the task's own GP: its reference fits' error is the posterior variance
    # after K * 40 observations on 120 points, which shrinks like 1/K, while its estimation
    # error is that of the 40 real observations
    (path, _), data = tiny
    small, arrays = _diagnose(path, data, "gp_oracle", scale=1)
    large, _ = _diagnose(path, data, "gp_oracle", scale=30)
    a1, a30 = small["normalised"]["approximation"], large["normalised"]["approximation"]
    assert a30 < a1 / 10
    assert a30 < 0.05 * large["normalised"]["eu_target"]
    assert large["normalised"]["estimation"] > 10 * a30
    for record in (small, large):
        assert abs(record["sum_check"]["z"]) < 4.0
    assert arrays["estimation"].shape == (120,) and np.all(arrays["approximation"] >= 0)
    assert large["pool_size"] == 120 and large["reference_size"] == 30 * 40


def test_a_class_without_an_intercept_gets_the_projection_form_alone(tiny):
    """blr without an intercept passes through its training sample's means, each reference
    fit through its own sample's: the projection form is reported, its relation to the
    Monte Carlo split is not (with a note saying why)."""
    (path, _), data = tiny
    record, arrays = _diagnose(path, data, "blr", scale=2, draws=3, fit_intercept=False)
    part = record["projection"]
    assert set(part["pool_means"]) == {"estimation", "approximation"}
    assert "another class" in part["note"]
    assert part["pool_means"]["estimation"] >= 0
    total = part["pool_means"]["estimation"] + part["pool_means"]["approximation"]
    assert total == pytest.approx(record["pool_means"]["eu_target"], rel=1e-9)
    assert "in_class_variance" not in arrays and arrays["projection_estimation"].shape == (120,)


class _Config(MethodConfig):
    pass


class _FailsOnLargeSamples(UQMethod):
    """Fits a constant, but raises when trained on more than 50 points."""

    Config = _Config

    def fit(self, X, y, *, seed, knowledge=None):
        if X.shape[0] > 50:
            raise RuntimeError("deliberate failure on a large sample")
        self.mu_ = float(np.mean(y))
        return self

    def predict(self, X):
        from udora.methods.base import Prediction

        n = X.shape[0]
        return Prediction(np.full(n, self.mu_), np.ones(n), np.ones(n))


def test_a_failing_reference_fit_fails_its_diagnosis_only(tiny, tmp_path):
    (path, _), data = tiny
    register("test_fails_large")(_FailsOnLargeSamples)
    try:
        jobs = [
            Diagnosis(resolve(RunSpec(path, m, 0, {}), data), 2, 2)
            for m in ("test_fails_large", "blr")
        ]
        summary = run_diagnoses(jobs, tmp_path / "out", data_dir=data)
    finally:
        unregister("test_fails_large")
    assert (summary.done, summary.failed) == (2, 1)
    failed = json.loads((jobs[0].folder(tmp_path / "out") / "decomposition.json").read_text())
    assert failed["status"] == "failed"
    assert "RuntimeError: deliberate failure on a large sample" in failed["error"]
    assert (jobs[1].folder(tmp_path / "out") / "decomposition.npz").is_file()


def test_diagnoses_logged_to_a_file_say_how_far_they_are(tiny, tmp_path, monkeypatch):
    """Not a terminal (CI, SLURM): a line per finished diagnosis when LOG_EVERY is 0 (rich's
    bar draws nothing in a log until the end; it printed no line before)."""
    import io

    from rich.console import Console

    from udora.experiments.grid import progress

    (path, _), data = tiny
    monkeypatch.setattr(progress, "LOG_EVERY", 0.0)
    log = io.StringIO()
    console = Console(file=log, force_terminal=False, width=120)
    jobs = [Diagnosis(resolve(RunSpec(path, "blr", s, {}), data), 2, 2) for s in (0, 1)]
    assert run_diagnoses(jobs, tmp_path / "out", data_dir=data, console=console).ok
    lines = [line.split("] ")[1] for line in log.getvalue().splitlines() if "done (" in line]
    assert lines == ["1/2 diagnoses done (0 failed)", "2/2 diagnoses done (0 failed)"]


def test_an_error_outside_the_fit_fails_its_diagnosis_only(tiny, tmp_path, monkeypatch):
    import udora.experiments.diagnostics.diagnose as diagnose_module

    (path_a, path_b), data = tiny
    real = diagnose_module.cached_task

    def broken(preset, seed, data_dir):
        if preset.name == "tinya":
            raise KeyError("column 'a' is missing")
        return real(preset, seed, data_dir)

    monkeypatch.setattr(diagnose_module, "cached_task", broken)
    jobs = [Diagnosis(resolve(RunSpec(p, "blr", 0, {}), data), 2, 2) for p in (path_a, path_b)]
    summary = run_diagnoses(jobs, tmp_path / "out", data_dir=data, summarise=True)
    assert (summary.done, summary.failed) == (2, 1)
    record = json.loads((jobs[0].folder(tmp_path / "out") / "decomposition.json").read_text())
    assert record["status"] == "failed" and "KeyError" in record["error"]
    assert list(summary.report["rows"]["preset"]) == ["tinyb"]


def _row(preset, n, est, se, method="m", setting="default"):
    return {
        "preset": preset,
        "method": method,
        "config": "{}",
        "setting": setting,
        "seed": 0,
        "draws": 4,
        "scale": 2,
        "n": n,
        "n_train": n,
        "estimation": est,
        "approximation": 1.0,
        "sum": est + 1.0,
        "eu_target": est + 1.0,
        "estimation_se": se,
        "approximation_se": se,
        "sum_se": se,
        "sum_check_z": 0.5,
        "sum_check_p": 0.6,
        "estimation_share": est / (est + 1.0),
        "seconds": 1.0,
        "folder": f"{preset}/{method}/{n}",
    }


def test_group_means_pool_errors_match_presets_and_refuse_duplicates():
    import pandas as pd

    from udora.experiments.diagnostics.summary import group_means

    rows = pd.DataFrame(
        [
            _row("a", 100, 0.4, 0.03),
            _row("b", 100, 0.2, 0.04),
            _row("a", 300, 0.1, 0.01),
            _row("c", 100, 0.9, 0.05),
            _row("a", 100, 0.3, 0.02, setting="width=64"),
        ]
    )
    groups = group_means(rows)
    first = groups[(groups["n"] == 100) & (groups["setting"] == "default")].iloc[0]
    assert first["presets"] == 3 and first["estimation"] == pytest.approx(0.5)
    assert first["estimation_se"] == pytest.approx(np.sqrt(0.03**2 + 0.04**2 + 0.05**2) / 3)
    assert len(groups) == 3  # another setting is another group, never averaged in
    matched = group_means(rows, matched=True)  # only preset a has both n of its series
    assert set(matched["preset_names"]) == {"a"} and len(matched) == 3
    with pytest.raises(ValueError, match="a appears twice in one group"):
        group_means(pd.concat([rows, rows.iloc[:1]]))


@pytest.mark.slow
def test_cli_end_to_end_resumes_and_summarises(tiny, tmp_path):
    (path_a, path_b), data = tiny
    out = tmp_path / "diag"
    args = [
        "diagnose",
        "--preset",
        f"{path_a},{path_b}",
        "--method",
        "blr,gp_linear",
        "--draws",
        "3",
        "--scale",
        "2",
        "--n",
        "20,40",
        "--out",
        str(out),
        "--data-dir",
        str(data),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "8 ran, 0 failed, 0 already done" in result.output
    records = sorted(out.glob("*/*/*/seed-0-M3-K2/decomposition.json"))
    assert len(records) == 8
    for path in records:
        record = json.loads(path.read_text())
        assert record["status"] == "ok" and record["draws"] == 3 and record["scale"] == 2
        with np.load(path.parent / "decomposition.npz") as z:
            assert z["estimation"].shape == (120,)
            # the EU target against a task rebuilt here and the method refitted here
            preset = load_preset(record["preset_arg"]).with_overrides(
                {"n_train": record["n_train"]}
            )
            task = build_task(preset, 0, data_dir=data)
            model = get_method(record["method"]).fit(task.X_train, task.y_train, seed=0)
            mean = model.predict(task.X).mean
            np.testing.assert_allclose(
                z["eu_target"], task.post_var + (mean - task.post_mean) ** 2, rtol=1e-6
            )
            assert record["target_variance"] == pytest.approx(np.var(task.y))
            # the projection form beside it (an affine class): it splits the exact EU
            # target, and its Monte Carlo columns are the record's own split
            proj = record["projection"]["normalised"]
            assert proj["estimation"] + proj["approximation"] == pytest.approx(
                record["normalised"]["eu_target"], rel=1e-9
            )
            assert proj["estimation"] >= 0 and proj["approximation"] >= proj["in_class_variance"]
            assert proj["mc_approximation"] == record["normalised"]["approximation"]
            assert proj["finite_k"] == pytest.approx(
                proj["mc_approximation"] - proj["expected_mc_approximation"]
            )
            np.testing.assert_allclose(
                z["projection_estimation"] + z["projection_approximation"],
                z["eu_target"],
                rtol=1e-9,
            )
    summary = (out / "summary.md").read_text()
    first, against_n = summary.split("## Against n")
    for part in (first, against_n):  # both presets have both n: the two tables agree
        # each config and n once in the Monte Carlo table and once in the projection one
        assert part.count("| blr | default |") == 4 and part.count("| gp_linear |") == 4
        assert part.count("| 2 | ") == 8  # two presets in every mean
        assert "| projection estimation | projection approximation |" in part
    assert (out / "errors_by_n.png").is_file() and (out / "shares.pdf").is_file()
    again = runner.invoke(app, args)
    assert again.exit_code == 0 and "0 ran, 0 failed, 8 already done" in again.output
    # a results folder holding the diagnoses in a subfolder: the report has the section
    bench = runner.invoke(
        app,
        [
            "run",
            "--preset",
            path_a,
            "--method",
            "blr",
            "--out",
            str(tmp_path),
            "--data-dir",
            str(data),
        ],
    )
    assert bench.exit_code == 0, bench.output
    report = runner.invoke(app, ["report", str(tmp_path)])
    assert report.exit_code == 0, report.output
    text = (tmp_path / "report" / "report.md").read_text()
    assert "### Diagnoses in `diag/`" in text and text.count("| blr | default |") == 4
    page = (tmp_path / "report" / "diagnostics.html").read_text()
    assert '<img alt="shares" src="../diag/shares.png"' in page and "<table>" in page


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--preset", "concrete", "--method", "blr", "--draws", "1"], "--draws: at least 2"),
        (["--sanity", "--method", "blr"], "--sanity chooses the methods"),
        (["--preset", "concrete"], "give --method M"),
        (["--method", "blr"], "give --preset P"),
        (["--preset", "concrete", "--method", "blr", "--n", "0"], "--n: expected positive"),
        (["--preset", "concrete", "--method", "nope"], "nope"),
    ],
)
def test_bad_arguments_are_one_line_errors(args, message, tmp_path):
    result = runner.invoke(app, ["diagnose", *args, "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert message in result.output


def test_pools_beyond_the_joint_limit_are_refused(tiny, monkeypatch):
    import udora.oracle.task as task_module
    from udora.oracle.preset import load_preset

    (path, _), data = tiny
    task = task_module.build_task(load_preset(path), 0, data_dir=data)
    with pytest.raises(ValueError, match="draws: expected a positive integer"):
        task.posterior_draws(0, 0)
    monkeypatch.setattr(task_module, "JOINT_LIMIT", 100)
    with pytest.raises(ValueError, match="at most 100 points; this pool has 120"):
        task.posterior_draws(2, 0)
    run = resolve(RunSpec(path, "blr", 0, {}), data)
    with pytest.raises(ValueError, match="diagnose draws jointly over the pool, at most 100"):
        Diagnosis(run, 2, 2)


def test_draws_nest_in_m_and_repeat_with_the_seed(tiny):
    from udora.oracle.preset import load_preset
    from udora.oracle.task import build_task

    (path, _), data = tiny
    task = build_task(load_preset(path), 0, data_dir=data)
    small, jitter = task.posterior_draws(3, 5)
    large, _ = task.posterior_draws(6, 5)
    np.testing.assert_allclose(large[:3], small, rtol=1e-10)  # BLAS blocks by width
    assert jitter <= 1e-12 and not np.array_equal(task.posterior_draws(3, 6)[0], small)


@pytest.mark.slow
def test_every_registered_method_can_be_diagnosed(tiny, tmp_path):
    # the whole registry through the command, quick budgets, the smallest M and K
    from udora.methods import get_method_class, list_methods

    (path, _), data = tiny
    names = [n for n in list_methods() if "regression" in get_method_class(n).kinds]
    out = tmp_path / "all"
    result = runner.invoke(
        app,
        [
            "diagnose",
            "--preset",
            path,
            "--method",
            ",".join(names),
            "--quick",
            "--draws",
            "2",
            "--scale",
            "1",
            "--out",
            str(out),
            "--data-dir",
            str(data),
        ],
    )
    assert result.exit_code == 0, result.output
    assert f"{len(names)} ran, 0 failed" in result.output
    rows = (out / "summary.csv").read_text().splitlines()[1:]
    assert sorted(row.split(",")[1] for row in rows) == sorted(names)
