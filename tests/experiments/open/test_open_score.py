"""Predictions made outside udora are scored exactly like a built-in run
(docs/evaluate_any_model.md)."""

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from tiny_presets import one_tiny_preset
from typer.testing import CliRunner

from udora.errors import UserError
from udora.experiments.cli.main import app
from udora.experiments.open.forms import parse
from udora.experiments.open.score import TOTAL_METRICS, score_file, score_predictions
from udora.experiments.open.tasks import export_task, load_task, read_task
from udora.experiments.results.store import load_runs
from udora.experiments.run.execute import run_one
from udora.experiments.run.records import RunRecord, read_run

runner = CliRunner()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A tiny preset, a built-in blr run on it and the exported task."""
    root = tmp_path_factory.mktemp("open")
    one_tiny_preset(root, rows=90, seed=1)
    data = root / "data"
    built = run_one(root / "tiny.yaml", "blr", 0, {}, root / "results", data_dir=data)
    assert built.status == "ok"
    export_task(load_task(root / "tiny.yaml", 0, data), root / "task")
    return root, data, built.path


def _record(run_dir):
    return json.loads((run_dir / "result.json").read_text())


def test_a_built_in_runs_predictions_score_exactly_as_the_built_in_run(world):
    root, data, run_dir = world
    task = read_task(root / "task")  # exported, then read back as another program would
    built = _record(run_dir)
    assert task.task_hash == built["task_hash"]
    assert task.joint_idx.shape == (300, 10) and task.joint_design.shape == (300,)
    scored = score_file(run_dir / "predictions.npz", task, "blr_again", root / "ext", data)
    assert scored["metrics"] == built["metrics"]  # every metric, bit for bit
    found = read_run(scored["path"])
    assert found.finished and found.record.external.form == "split"
    # what scored it is recorded as for a built-in run; the versions are udora's and JAX's
    # only (the method ran elsewhere)
    assert (found.record.code, found.record.compute) == (
        RunRecord.model_validate(built).code,
        RunRecord.model_validate(built).compute,
    )
    assert found.record.code is not None and found.record.compute.cpus >= 1
    assert set(found.record.versions) == {"udora", "jax"}
    # the same arrays as a csv in shuffled row order, with row ids
    with np.load(run_dir / "predictions.npz") as z:
        arrays = {k: z[k] for k in z.files}
    order = np.random.default_rng(0).permutation(task.n_pool)
    frame = pd.DataFrame(
        {"row_id": order, **{k: arrays[k][order] for k in ("mean", "aleatoric", "epistemic")}}
    )
    frame.to_csv(root / "shuffled.csv", index=False)
    again = score_file(root / "shuffled.csv", task, "blr_csv", None, data)
    # a table has no place for blr's joint covariance (batches of points): without it the
    # joint metrics are undefined, every other metric is the run's
    joint = {k for k in built["metrics"] if k.startswith("joint_")}
    assert len(joint) == 6 and all(built["metrics"][k] is not None for k in joint)
    assert all(again["metrics"][k] is None for k in joint)
    assert {k: v for k, v in again["metrics"].items() if k not in joint} == {
        k: v for k, v in built["metrics"].items() if k not in joint
    }


def test_members_and_draws_are_combined_as_udora_combines_members(world):
    root, data, _ = world
    task = read_task(root / "task")
    rng = np.random.default_rng(2)
    means = rng.normal(size=(4, task.n_pool))
    variances = rng.uniform(0.1, 0.5, size=(4, task.n_pool))
    fields = {"member_means": means, "member_variances": variances, "task_hash": task.task_hash}
    members, _ = score_predictions(parse(fields, task), task, data)
    by_hand = {
        "mean": means.mean(0),
        "aleatoric": variances.mean(0),
        "epistemic": means.var(0),
        "member_means": means,
        "task_hash": task.task_hash,
    }
    split, _ = score_predictions(parse(by_hand, task), task, data)
    np.testing.assert_equal(members, split)
    draws = {"latent_draws": means, "aleatoric": variances.mean(0), "task_hash": task.task_hash}
    np.testing.assert_equal(score_predictions(parse(draws, task), task, data)[0], split)


def test_total_only_forms_keep_exactly_the_metrics_no_split_changes(world):
    root, data, run_dir = world
    task = read_task(root / "task")
    built = _record(run_dir)["metrics"]
    with np.load(run_dir / "predictions.npz") as z:
        mean, total = z["mean"], z["aleatoric"] + z["epistemic"]
    fields = {"mean": mean, "variance": total, "task_hash": task.task_hash}
    metrics, _ = score_predictions(parse(fields, task), task, data)
    kept = set(TOTAL_METRICS["gaussian"])
    for name, value in metrics.items():
        if name in kept:  # the split is invisible to these: the built-in run's own value
            assert value == pytest.approx(built[name], rel=1e-12, nan_ok=True), name
        else:
            assert np.isnan(value), name
    assert np.isnan(metrics["spearman_eu"]) and np.isfinite(metrics["spearman_total"])


def test_the_crps_of_samples_and_quantiles_is_the_reference_librarys(world):
    import properscoring

    from udora.oracle.task import build_task

    root, data, _ = world
    task = read_task(root / "task")
    y = build_task(root / "tiny.yaml", 0, data_dir=data).y
    rng = np.random.default_rng(3)
    samples = rng.normal(size=(200, task.n_pool))
    fields = {"samples": samples, "task_hash": task.task_hash}
    metrics, _ = score_predictions(parse(fields, task), task, data)
    expected = properscoring.crps_ensemble(y, samples.T).mean()
    assert metrics["crps"] == pytest.approx(expected, rel=1e-10)
    levels = np.array([0.1, 0.5, 0.9])
    q = np.quantile(samples, levels, axis=0)
    fields = {"quantiles": q, "quantile_levels": levels, "task_hash": task.task_hash}
    metrics, _ = score_predictions(parse(fields, task), task, data)
    pinball = [
        np.mean(np.maximum(a * (y - qa), (a - 1) * (y - qa)))
        for a, qa in zip(levels, q, strict=True)
    ]
    assert metrics["crps"] == pytest.approx(2 * np.mean(pinball), rel=1e-10)
    assert np.isnan(metrics["nll"]) and np.isnan(metrics["spearman_au"])


def _csv(root, name, **columns):
    path = root / name
    pd.DataFrame(columns).to_csv(path, index=False)
    return path


BAD = {
    "too few rows": (
        lambda n, h: {
            "row_id": np.arange(n - 1),
            "mean": np.zeros(n - 1),
            "variance": np.ones(n - 1),
        },
        "field 'row_id' must hold",
    ),
    "no pool id": (
        lambda n, h: {"mean": np.zeros(n), "variance": np.ones(n)},
        "must say which pool it predicts",
    ),
    "another task": (
        lambda n, h: {"task_hash": ["0123456789"] * n, "mean": np.zeros(n), "variance": np.ones(n)},
        "a prediction for another task",
    ),
    "missing column": (
        lambda n, h: {"row_id": np.arange(n), "mean": np.zeros(n), "aleatoric": np.ones(n)},
        "expected the fields of one",
    ),
    "extra column": (
        lambda n, h: {
            "row_id": np.arange(n),
            "mean": np.zeros(n),
            "variance": np.ones(n),
            "extra": np.ones(n),
        },
        "field 'extra' is not part of the gaussian form",
    ),
    "NaN": (
        lambda n, h: {
            "row_id": np.arange(n),
            "mean": np.r_[np.nan, np.zeros(n - 1)],
            "variance": np.ones(n),
        },
        "field 'mean' has 1 values that are NaN",
    ),
    "negative variance": (
        lambda n, h: {"row_id": np.arange(n), "mean": np.zeros(n), "variance": -np.ones(n)},
        "negative variances",
    ),
    "repeated rows": (
        lambda n, h: {"row_id": np.zeros(n, int), "mean": np.zeros(n), "variance": np.ones(n)},
        "each pool row 0..",
    ),
    "quantile levels out of order": (
        lambda n, h: {"row_id": np.arange(n), "q_0.9": np.zeros(n), "q_0.1": np.ones(n)},
        "'quantile_levels' must increase; got [0.9, 0.1]",
    ),
    "quantiles crossing": (
        lambda n, h: {"row_id": np.arange(n), "q_0.1": np.ones(n), "q_0.9": np.zeros(n)},
        "'quantiles' decreases",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_naming_the_file_and_field_and_writes_nothing(world, case):
    root, _, _ = world
    make, message = BAD[case]
    task = read_task(root / "task")
    path = _csv(root, "bad.csv", **make(task.n_pool, task.task_hash))
    out = root / f"bad-{case.replace(' ', '_')}"
    result = runner.invoke(
        app,
        ["score", str(path), "--task", str(root / "task"), "--method", "mine", "--out", str(out)],
    )
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: {path}: ") and message in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not list(out.rglob("result.json"))


@pytest.mark.slow  # an end-to-end run of ~10 s (the default set stays under 4 minutes)
def test_external_runs_join_the_report_and_the_leaderboard(world):
    root, data, _ = world
    results = root / "results"
    with np.load(next(results.glob("tiny/blr/*/seed-0/predictions.npz"))) as z:
        mean, total = z["mean"], z["aleatoric"] + z["epistemic"]
    path = _csv(root, "mine.csv", row_id=np.arange(len(mean)), mean=mean + 0.1, variance=total)
    done = runner.invoke(
        app,
        [
            "score",
            str(path),
            "--task",
            str(root / "task"),
            "--method",
            "mine",
            "--out",
            str(results),
            "--data-dir",
            str(data),
        ],
    )
    assert done.exit_code == 0, done.output
    assert "gaussian form (total only" in done.output
    table, _ = load_runs(results)
    assert set(table["config"]) >= {"blr", "mine (external)"}
    from udora.experiments.meta.outputs import practitioner_configs

    ranked, left_out = practitioner_configs(table)  # what udora meta ranks
    assert left_out["mine (external)"] == "total-only predictions (no AU/EU split)"
    assert "blr" in set(ranked["config"])
    report = runner.invoke(app, ["report", str(results)])
    assert report.exit_code == 0, report.output
    text = (results / "report" / "report.md").read_text()
    assert "`mine (external)` (gaussian form: total only" in text
    assert "mine (external)" in (results / "report" / "index.html").read_text()


def test_an_estimator_by_import_path_scores_as_evaluate_does(world):
    from sklearn.linear_model import BayesianRidge

    from udora.experiments.open import evaluate

    root, data, _ = world
    out = root / "by_path"
    done = runner.invoke(
        app,
        [
            "score",
            "--estimator",
            "sklearn.linear_model:BayesianRidge",
            "--task",
            str(root / "task"),
            "--out",
            str(out),
            "--data-dir",
            str(data),
        ],
    )
    assert done.exit_code == 0, done.output
    record = _record(next(p.parent for p in out.rglob("result.json")))
    assert record["method"] == "BayesianRidge" and record["external"]["form"] == "split"
    row = evaluate(BayesianRidge(), read_task(root / "task"), data_dir=data).iloc[0]
    for name, value in record["metrics"].items():
        if value is None:
            assert np.isnan(row[name]), name
        else:
            assert row[name] == pytest.approx(value, rel=1e-12), name


@pytest.mark.parametrize("levels", [[0.05, 0.5, 0.95], [0.1, 0.3, 0.9], [0.6, 0.8], [0.1, 0.2]])
def test_the_median_of_quantiles_is_numpys_interpolation_at_one_half(world, levels):
    root, _, _ = world
    task = read_task(root / "task")
    levels = np.array(levels)
    q = np.sort(np.random.default_rng(4).normal(size=(len(levels), task.n_pool)), axis=0)
    fields = {"quantiles": q, "quantile_levels": levels, "task_hash": task.task_hash}
    expected = [np.interp(0.5, levels, q[:, i]) for i in range(task.n_pool)]
    np.testing.assert_allclose(parse(fields, task).mean, expected, rtol=0, atol=1e-14)


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda info: info.update(seed=info["seed"] + 1), "hash to"),
        (lambda info: info["preset_config"].update(n_train=30), "hash to"),
        (lambda info: info.update(data_sha256="0" * 64), "hash to"),
        (lambda info: info["shapes"].update(X_pool=[7, 2]), "records X_pool of shape [7, 2]"),
    ],
)
def test_a_task_file_edited_under_its_hash_is_refused(world, tmp_path, edit, says):
    root, _, _ = world
    copy = tmp_path / "task"
    shutil.copytree(root / "task", copy)
    info = json.loads((copy / "task.json").read_text())
    edit(info)
    (copy / "task.json").write_text(json.dumps(info))
    with pytest.raises(UserError, match=re.escape(says)):
        read_task(copy)


def test_a_task_whose_arrays_were_swapped_is_refused(world, tmp_path):
    root, _, _ = world
    copy = tmp_path / "task"
    shutil.copytree(root / "task", copy)
    with np.load(copy / "pool.npz") as pool:
        np.savez(copy / "pool.npz", X=pool["X"][:-1], row_id=pool["row_id"][:-1])
    n = read_task(root / "task").n_pool
    with pytest.raises(UserError, match=r"pool\.npz: does not match the SHA-256 in task\.json"):
        read_task(copy)
    manifest = json.loads((copy / "task.json").read_text())  # an export that lists no checksums
    (copy / "task.json").write_text(json.dumps({**manifest, "files": None}))
    with pytest.raises(
        UserError,
        match=rf"pool\.npz: 'X' has shape \[{n - 1}, 2\], but task\.json records X_pool of "
        rf"shape \[{n}, 2\]",
    ):
        read_task(copy)


def test_an_estimator_without_a_std_points_to_bagged(world, tmp_path):
    root, data, _ = world
    args = ["score", "--estimator", "sklearn.linear_model:LinearRegression"]
    result = runner.invoke(app, [*args, "--task", str(root / "task"), "--method", "lr"])
    assert result.exit_code == 2, result.output
    assert "has no return_std" in result.output and "--bagged K (K >= 2)" in result.output
    bagged = runner.invoke(
        app,
        [
            *args,
            "--bagged",
            "3",
            "--task",
            str(root / "task"),
            "--method",
            "lr",
            "--data-dir",
            str(data),
        ],
    )
    assert bagged.exit_code == 0, bagged.output


def test_an_exported_file_changed_after_the_export_is_refused(world, tmp_path):
    root, _, _ = world
    copy = tmp_path / "task"
    shutil.copytree(root / "task", copy)
    info = json.loads((copy / "task.json").read_text())
    assert set(info["files"]) == {
        f"{stem}.{ext}" for stem in ("train", "pool") for ext in ("npz", "csv", "parquet")
    } | {"joint.npz"}
    text = (copy / "train.csv").read_text().splitlines()
    text[1] = ",".join(["0"] * len(text[1].split(",")))  # one training row edited
    (copy / "train.csv").write_text("\n".join(text) + "\n")
    with pytest.raises(UserError, match=r"train.csv: does not match the SHA-256 in task.json"):
        read_task(copy)


def test_an_external_joint_covariance_is_kept_checked_and_rescored(world, tmp_path):
    root, data, run_dir = world
    task = read_task(root / "task")
    with np.load(run_dir / "predictions.npz") as z:
        arrays = {k: z[k] for k in z.files} | {"task_hash": np.array(task.task_hash)}
    scored = score_file(run_dir / "predictions.npz", task, "blr_joint", tmp_path / "ext", data)
    with np.load(Path(scored["path"]) / "predictions.npz") as z:  # the run folder keeps it
        np.testing.assert_array_equal(z["joint_epistemic"], arrays["joint_epistemic"])
    # a covariance whose diagonal is not the file's EU, or of the wrong shape, is refused
    wrong = dict(arrays, joint_epistemic=2.0 * arrays["joint_epistemic"])
    np.savez(tmp_path / "wrong.npz", **wrong)
    with pytest.raises(UserError, match="field 'joint_epistemic': predict_joint: the variance"):
        score_file(tmp_path / "wrong.npz", task, "wrong", None, data)
    np.savez(tmp_path / "flat.npz", **dict(arrays, joint_epistemic=np.ones((300, 10))))
    with pytest.raises(UserError, match=r"joint_epistemic: expected shape \(B, tau, tau\)"):
        score_file(tmp_path / "flat.npz", task, "flat", None, data)
    # exported batches that are not this udora's: export again
    other = dict(vars(task))
    other["joint_idx"] = task.joint_idx[::-1].copy()
    with pytest.raises(UserError, match="holds other batches than this udora builds"):
        score_file(run_dir / "predictions.npz", type(task)(**other), "other", None, data)
