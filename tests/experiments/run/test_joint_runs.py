"""Joint predictions through the runner: an exact predict_joint is stored and scored (the
posterior itself captures all of the total correlation), a member method's covariance
comes from its members, a diagonal method's joint metrics are NaN, a covariance that
contradicts the pointwise EU fails the run naming it, and the stored oracle arrays keep
the batches so a rescoring of the stored prediction gives the run's numbers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from udora.experiments.run.execute import run_one
from udora.experiments.tasks import arrays as oracle_arrays
from udora.methods import register
from udora.methods.base import MethodConfig, Prediction, UQMethod
from udora.methods.registry import unregister
from udora.scoring import score


class _Config(MethodConfig):
    pass


class _WrongJoint(UQMethod):
    """A constant prediction whose joint covariance has twice its pointwise EU."""

    Config = _Config

    def fit(self, X, y, *, seed, knowledge=None):
        self.mu_ = float(np.mean(y))
        return self

    def predict(self, X):
        n = X.shape[0]
        return Prediction(np.full(n, self.mu_), np.ones(n), np.ones(n))

    def predict_joint(self, X):
        B, t, _ = X.shape
        return np.broadcast_to(2.0 * np.eye(t), (B, t, t)).copy()


def _metrics(res):
    return json.loads((res.path / "result.json").read_text())["metrics"]


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_joint_metrics_of_exact_member_and_diagonal_methods(tiny_preset, tmp_path):
    path, data = tiny_preset
    out = tmp_path / "out"
    exact = run_one(path, "gp_oracle", 0, {}, out, data_dir=data)
    m = _metrics(exact)
    for d in ("dyadic", "neighbour", "random"):
        assert m[f"joint_share_{d}"] == pytest.approx(1.0, abs=1e-5)
        assert m[f"joint_excess_{d}"] == pytest.approx(0.0, abs=1e-6)
    with np.load(exact.path / "predictions.npz") as z:
        assert z["joint_epistemic"].shape == (300, 10, 10)
    members = run_one(path, "nn_bagging", 0, {"n_members": 3, "n_epochs": 5}, out, data_dir=data)
    assert members.status == "ok" and np.isfinite(_metrics(members)["joint_excess_neighbour"])
    diagonal = run_one(path, "edl", 0, {"n_epochs": 5}, out, data_dir=data)
    assert diagonal.status == "ok"
    assert all(v is None for k, v in _metrics(diagonal).items() if k.startswith("joint_"))
    # the stored task keeps the batches: the stored prediction rescored gives the run's numbers
    record = json.loads((exact.path / "result.json").read_text())
    stored = oracle_arrays.load(
        out,
        record["identity"]["task_hash"]
        if "task_hash" in record.get("identity", {})
        else exact.run.task_hash,
    )
    assert stored.joint is not None
    with np.load(exact.path / "predictions.npz") as z:
        pred = Prediction(**{k: z[k] for k in z.files})
    again = score(stored, pred)
    for d in ("dyadic", "neighbour", "random"):
        assert again[f"joint_share_{d}"] == pytest.approx(m[f"joint_share_{d}"], rel=1e-12)


def test_a_joint_covariance_that_is_not_the_pointwise_eu_fails_the_run(tiny_preset, tmp_path):
    path, data = tiny_preset
    register("test_wrong_joint")(_WrongJoint)
    try:
        res = run_one(path, "test_wrong_joint", 0, {}, tmp_path, data_dir=data)
    finally:
        unregister("test_wrong_joint")
    assert res.status == "failed"
    assert "predict_joint: the variance of batch 0, point 0 is 2" in res.error
    assert "the diagonal must be the pointwise EU" in res.error


class _CovarianceInPredict(UQMethod):
    """Returns a joint_epistemic from predict, without predict_joint."""

    Config = _Config

    def fit(self, X, y, *, seed, knowledge=None):
        self.mu_ = float(np.mean(y))
        return self

    def predict(self, X):
        n = X.shape[0]
        p = Prediction(np.full(n, self.mu_), np.ones(n), np.ones(n))
        return type(
            "P",
            (),
            {
                **{k: getattr(p, k) for k in ("mean", "aleatoric", "epistemic")},
                "member_means": None,
                "joint_epistemic": np.ones((3, 2, 2)),
            },
        )()


def test_a_covariance_from_predict_is_not_taken(tiny_preset, tmp_path):
    path, data = tiny_preset
    register("test_cov_in_predict")(_CovarianceInPredict)
    try:
        res = run_one(path, "test_cov_in_predict", 0, {}, tmp_path, data_dir=data)
    finally:
        unregister("test_cov_in_predict")
    assert res.status == "ok"
    with np.load(res.path / "predictions.npz") as z:
        assert "joint_epistemic" not in z.files


def test_a_folder_stored_before_the_batches_gains_them(tiny_preset, tmp_path):
    path, data = tiny_preset
    out = tmp_path / "out"
    first = run_one(path, "blr", 0, {}, out, data_dir=data)
    for stored in oracle_arrays.paths(out, first.run.task_hash, oracle_arrays.JOINT):
        stored.unlink()  # as a folder written before joint batches existed
    assert oracle_arrays.load(out, first.run.task_hash).joint is None
    run_one(path, "blr", 0, {"alpha": 2.0}, out, data_dir=data)
    assert oracle_arrays.load(out, first.run.task_hash).joint.idx.shape == (300, 10)
