"""External predictions on classification tasks: export without the oracle, every form
read and checked, and a built-in run's own predictions scored from a file with exactly the
built-in run's metrics; the observed scores recomputed with scikit-learn."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import log_loss
from tiny_presets import tiny_classification_preset

from udora.errors import UserError
from udora.experiments.open import evaluate, export_task, load_task, read_task
from udora.experiments.open.adapters import bagged_fields, classifier_fields
from udora.experiments.open.forms import parse
from udora.experiments.open.score import score_file
from udora.oracle.reading import arrays as read_npz


@pytest.fixture(scope="module")
def cls(tmp_path_factory):
    root = tmp_path_factory.mktemp("opencls")
    _, data = tiny_classification_preset(root)
    return root / "tinycls.yaml", data


@pytest.fixture(autouse=True)
def _own_task_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("UDORA_TASK_CACHE", str(tmp_path_factory.getbasetemp() / "cls-cache"))


@pytest.fixture
def no_posterior(monkeypatch):
    import udora.oracle.classification.task as task_module

    def refuse(*args, **kwargs):
        raise AssertionError("the posterior was sampled")

    monkeypatch.setattr(task_module, "sample_posterior", refuse)


def _probabilities(rng, n, C):
    q = rng.dirichlet(np.ones(C), size=n)
    return q / q.sum(axis=1, keepdims=True)


def test_export_needs_no_oracle_and_reads_back(cls, tmp_path, no_posterior):
    path, data = cls
    task = load_task(path, 0, data)
    assert task.kind == "classification" and task.classes == ("c0", "c1", "c2")
    export_task(task, tmp_path / "t")
    info = json.loads((tmp_path / "t" / "task.json").read_text())
    assert info["kind"] == "classification" and info["classes"] == ["c0", "c1", "c2"]
    assert set(info["prediction_forms"]) == {"split", "members", "samples", "probs"}
    back = read_task(tmp_path / "t")
    assert back.task_hash == task.task_hash and np.array_equal(back.y_train, task.y_train)
    assert back.y_train.dtype.kind == "i" and set(back.y_train) <= {0, 1, 2}


def test_forms_are_recognised_and_bad_input_names_the_field(cls, no_posterior):
    path, data = cls
    task = load_task(path, 0, data)
    rng = np.random.default_rng(0)
    N = task.n_pool
    q = _probabilities(rng, N, 3)
    h = task.task_hash
    fields = {"prob": q, "aleatoric": np.ones(N), "epistemic": np.zeros(N), "task_hash": h}
    split = parse(fields, task)
    assert split.form == "split" and split.split
    assert parse({"prob": q, "task_hash": h}, task).form == "probs"
    members = rng.dirichlet(np.ones(3), size=(4, N))
    assert parse({"member_probs": members, "task_hash": h}, task).form == "members"
    got = parse({"prob_samples": members, "task_hash": h}, task).prediction
    np.testing.assert_allclose(got.prob, members.mean(axis=0), rtol=1e-12)
    # rows keyed by row_id in any order are put in pool order
    perm = rng.permutation(N)
    shuffled = parse({"prob": q[perm], "row_id": perm}, task).prediction
    np.testing.assert_array_equal(shuffled.prob, q)
    bad = q.copy()
    bad[5] *= 1.1
    with pytest.raises(UserError, match=r"prob"):
        parse({"prob": bad, "task_hash": h}, task)
    with pytest.raises(UserError, match=r"'prob' has shape \(\d+, 2\); expected \(\d+, 3\)"):
        parse({"prob": q[:, :2], "task_hash": h}, task)
    with pytest.raises(UserError, match=r"one classification prediction form"):
        parse({"mean": np.zeros(N), "task_hash": h}, task)
    with pytest.raises(  # two forms' fields that are together the split's, short of two
        UserError,
        match=r"got 'member_probs', 'prob'; the split form also needs aleatoric, epistemic$",
    ):
        parse({"prob": q, "member_probs": members, "task_hash": h}, task)
    with pytest.raises(
        UserError,
        match=r"'aleatoric' is not part of the probs form \(prob\); "
        r"the split form also needs epistemic$",
    ):
        parse({"prob": q, "aleatoric": np.ones(N), "task_hash": h}, task)
    with pytest.raises(
        UserError,
        match=r"^predictions: fields 'aleatoric_brier', 'epistemic_brier': set both or neither$",
    ):
        parse({**fields, "aleatoric_brier": np.ones(N)}, task)
    negative = members.copy()
    negative[0, 0] = [-0.1, 0.6, 0.5]
    with pytest.raises(UserError, match=r"^predictions: field 'prob_samples': probabilities "):
        parse({"prob_samples": negative, "task_hash": h}, task)
    with pytest.raises(UserError, match=r"^predictions: field 'prob': .* do not sum to 1"):
        parse({"prob": bad, "task_hash": h}, task)
    with pytest.raises(UserError, match=r"'member_means' is not part of the members form"):
        parse({"member_probs": members, "member_means": np.zeros((4, N)), "task_hash": h}, task)
    # a table's probability columns: one per class of the task, named by its label
    columns = {f"prob_{c}": q[:, c] for c in range(3)}
    np.testing.assert_array_equal(parse({**columns, "task_hash": h}, task).prediction.prob, q)
    for given in (["prob_1"], ["prob_0", "prob_1"], ["prob_0", "prob_1", "prob_2", "prob_3"]):
        with pytest.raises(
            UserError,
            match=r"^predictions: the columns prob_<c> must be prob_0 \.\. prob_2, one per "
            rf"class of the task \(c0, c1, c2\); got {', '.join(given)}$",
        ):
            parse({**{k: q[:, 0] for k in given}, "task_hash": h}, task)


def test_the_command_lines_estimator_is_seeded_and_its_file_is_the_runs_own(
    cls, tmp_path, no_posterior, monkeypatch
):
    """`udora score --estimator` fits a randomised classifier the same way twice
    (random_state=0), names its fields' file by the run's method (two runs into one
    folder keep their own), writes them to a scratch folder only (never into --out), names
    the command in the record's external.file and leaves no scratch folder behind."""
    import tempfile

    from udora.experiments.cli.open import _fit_here

    path, data = cls
    task = load_task(path, 0, data)
    forest = "sklearn.ensemble:RandomForestClassifier"
    one = _fit_here(forest, None, task, tmp_path, "rf")
    two = _fit_here(forest, None, task, tmp_path, "rf_again")
    bag = _fit_here(forest, 3, task, tmp_path, "rf_bag")
    assert len({one, two, bag}) == 3 and all(p.parent == tmp_path for p in (one, two, bag))
    np.testing.assert_array_equal(read_npz(one)["prob"], read_npz(two)["prob"])
    assert read_npz(bag)["member_probs"].shape == (3, task.n_pool, 3)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    from typer.testing import CliRunner

    from udora.experiments.cli.main import app

    export_task(task, tmp_path / "t")
    import udora.experiments.open.score as score_module

    scored, named = [], []

    def fake_score(file, task, method, out, data_dir, source=None):  # no oracle built here
        scored.append(read_npz(file)["prob"])
        named.append(source)
        return {"metrics": {}, "external": {"form": "probs", "split": False}}

    monkeypatch.setattr(score_module, "score_file", fake_score)
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # the command's scratch folder
    cli = ["score", "--estimator", forest, "--task", str(tmp_path / "t")]
    done = CliRunner().invoke(app, [*cli, "--method", "rf", "--out", str(tmp_path / "res")])
    assert done.exit_code == 0, done.output
    np.testing.assert_array_equal(scored[0], read_npz(one)["prob"])
    assert named == [f"--estimator {forest}"]  # the record names the command, not scratch
    assert list(scratch.iterdir()) == []  # scored, then removed with its folder
    assert not (tmp_path / "res").exists()  # the fields never go into --out
    done = CliRunner().invoke(app, [*cli, "--method", "../x"])
    assert done.exit_code == 2 and "--method '../x' is not a valid name" in done.output
    assert list(scratch.iterdir()) == [] and not (tmp_path / "x").exists()


def test_samples_is_a_split_on_a_classification_task_and_total_only_on_a_regression_one():
    """`samples` (draws of the predictive) has no AU/EU split for a regression task but is
    combined into one for a classification task: the report's line on external runs, the
    configs `udora meta` ranks and the reasons for an empty cell read the run's own split
    flag (``has_split``) and the kind's total-only forms, never the form's name alone."""
    from udora.experiments.meta.outputs import practitioner_configs
    from udora.experiments.report.gaps import why_empty
    from udora.experiments.report.write import _external_lines

    def row(config, kind, form, split, eu):
        return dict(
            config=config,
            method=config,
            kind=kind,
            external=True,
            status="ok",
            prediction_form=form,
            has_split=split,
            preset="p",
            seed=0,
            spearman_eu=eu,
        )

    table = pd.DataFrame(
        [
            row("cls (external)", "classification", "samples", True, np.nan),
            row("reg (external)", "regression", "samples", False, np.nan),
            row("probs (external)", "classification", "probs", False, np.nan),
        ]
    )
    (line, _) = _external_lines(table)
    assert "`cls (external)` (samples form)" in line
    assert "`reg (external)` (samples form: total only" in line
    assert "`probs (external)` (probs form: total only" in line
    _, left_out = practitioner_configs(table)
    assert set(left_out) == {"reg (external)", "probs (external)"}
    assert why_empty(table, "reg (external)", "spearman_eu").startswith(
        "scored from a predictions file of the `samples` form"
    )
    assert why_empty(table, "probs (external)", "spearman_eu").startswith(
        "scored from a predictions file of the `probs` form"
    )
    assert why_empty(table, "cls (external)", "spearman_eu").startswith("no run has a finite")


@pytest.mark.slow  # builds the tiny task's sampled oracle (~15 s) and runs two methods
def test_a_run_scored_from_its_file_equals_the_builtin_run(cls, tmp_path):
    from udora.experiments.run.execute import run_one

    path, data = cls
    task = load_task(path, 0, data)
    runs = (
        ("blr_logistic", {"n_samples": 30}),
        ("gp_approx", {}),
        ("nn_ensemble", {"n_epochs": 20}),  # its file holds member_probs too
    )
    for method, overrides in runs:
        run = run_one(path, method, 0, overrides, tmp_path / "builtin", data_dir=data)
        assert run.status == "ok", run.error
        builtin = json.loads((run.path / "result.json").read_text())
        stored = read_npz(run.path / "predictions.npz")
        fields = dict(stored)  # a built-in run's own file: a split with its members
        pd_file = tmp_path / f"{method}.npz"
        np.savez(pd_file, task_hash=task.task_hash, **fields)
        record = score_file(pd_file, task, f"mine-{method}", out=tmp_path / "ext", data_dir=data)
        assert record["kind"] == "classification" and record["external"]["form"] == "split"
        assert ("member_probs" in stored) == (method == "nn_ensemble")
        for name, value in builtin["metrics"].items():
            assert record["metrics"][name] == pytest.approx(value, abs=1e-12, nan_ok=True), name
        for name, value in builtin["metrics_se"].items():
            assert record["metrics_se"][name] == pytest.approx(value, abs=1e-12, nan_ok=True)
        assert record["oracle_sha256"] == builtin["oracle_sha256"]
    # the ensemble's members alone: the members form, the same metrics
    members_file = tmp_path / "members.npz"
    np.savez(members_file, task_hash=task.task_hash, member_probs=stored["member_probs"])
    members = score_file(members_file, task, "members", data_dir=data)
    for name, value in builtin["metrics"].items():
        assert members["metrics"][name] == pytest.approx(value, abs=1e-9, nan_ok=True), name
    # the same probabilities as a csv of prob_<c> columns, rows shuffled, total-only
    rng = np.random.default_rng(1)
    perm = rng.permutation(task.n_pool)
    table = pd.DataFrame(stored["prob"][perm], columns=["prob_0", "prob_1", "prob_2"])
    table.insert(0, "row_id", perm)
    table.to_csv(tmp_path / "probs.csv", index=False, float_format="%.17g")
    probs = score_file(tmp_path / "probs.csv", task, "probs-only", data_dir=data)
    oracle = read_npz(next((tmp_path / "builtin" / "oracle").glob("*.npz")))
    assert probs["metrics"]["nll"] == pytest.approx(
        log_loss(oracle["y"], stored["prob"], labels=[0, 1, 2]), rel=1e-12
    )
    assert probs["metrics"]["spearman_eu"] is None and probs["metrics"]["spearman_au"] is None
    assert probs["metrics"]["kl_mean"] == pytest.approx(builtin["metrics"]["kl_mean"], rel=1e-9)


@pytest.mark.slow  # builds the tiny task's sampled oracle (~15 s)
def test_scikit_learn_classifiers_single_and_bagged(cls):
    from sklearn.linear_model import LogisticRegression

    path, data = cls
    task = load_task(path, 0, data)
    one = classifier_fields(LogisticRegression(), task)
    assert one["prob"].shape == (task.n_pool, 3)
    table = evaluate(LogisticRegression(), presets=[str(path)], seeds=[0], data_dir=data)
    assert table.loc[0, "form"] == "probs" and np.isnan(table.loc[0, "spearman_eu"])
    bagged = bagged_fields(LogisticRegression, task, n_members=5, seed=0)
    assert bagged["member_probs"].shape == (5, task.n_pool, 3)
    row = evaluate(bagged, task, data_dir=data).iloc[0]
    assert row["form"] == "members" and np.isfinite(row["spearman_eu"])


def test_a_classifier_without_predict_proba_is_refused_single_or_bagged(cls, no_posterior):
    """SVC has predict_proba only with probability=True: both routes refuse it with one
    UserError before a fit (the bagged one crashed in its first member's predict_proba)."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    path, data = cls
    task = load_task(path, 0, data)
    for estimator in (SVC(), make_pipeline(StandardScaler(), SVC())):
        with pytest.raises(UserError, match="SVC has no predict_proba"):
            classifier_fields(estimator, task)
        with pytest.raises(UserError, match="SVC has no predict_proba"):
            bagged_fields(estimator, task, n_members=3)
        svc = estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator
        assert not hasattr(svc, "classes_")  # refused before its fit
    fits = []

    class Counted(SVC):
        def fit(self, X, y):
            fits.append(len(y))
            return super().fit(X, y)

    with pytest.raises(UserError, match="Counted has no predict_proba"):
        bagged_fields(Counted, task, n_members=3)
    assert fits == []  # no member was fitted
    bagged = bagged_fields(SVC(probability=True), task, n_members=2)  # with it, members
    assert bagged["member_probs"].shape == (2, task.n_pool, 3)


def test_a_run_record_accepts_every_form_and_no_other():
    """result.json's ``external.form`` (a literal in the record's schema) lists exactly the
    forms of both kinds (one list each, in experiments.open.tasks)."""
    from typing import get_args

    from udora.experiments.open.tasks import CLASSIFICATION_FORMS, FORMS
    from udora.experiments.run.record import External

    declared = set(get_args(External.model_fields["form"].annotation))
    assert declared == set(FORMS) | set(CLASSIFICATION_FORMS)
