"""A run's outcome is decided by what it stored, and a method never takes a grid down.

Methods registered here misbehave one way each: they exit the interpreter, return a
prediction changed after it was built, one built without its checks, one of another
class, complex values, values whose squares overflow, or a zero total variance. Each run
must be recorded as failed with the field named, no predictions file, while the other runs
of the grid finish ok (issue: every case was stored as an ok run, or ended the bench).
"""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from udora.experiments.grid.bench import make_grid, run_grid
from udora.experiments.run.execute import run_one
from udora.methods.base import Prediction
from udora.methods.blr import BayesianLinearRegression
from udora.methods.registry import register, unregister


def _good(X):
    n = X.shape[0]
    return np.zeros(n), np.full(n, 0.5), np.full(n, 0.1)


def exits(X):
    sys.exit(0)


def mutated(X):
    out = Prediction(*_good(X))
    out.mean[3] = np.nan  # after the checks ran
    out.epistemic[4] = -1.0
    return out


def unchecked(X):
    out = object.__new__(Prediction)  # no __post_init__: no checks
    mean, au, eu = _good(X)
    mean[0] = np.inf
    for name, value in (("mean", mean), ("aleatoric", au), ("epistemic", eu)):
        object.__setattr__(out, name, value)
    object.__setattr__(out, "member_means", None)
    return out


def duck_complex(X):
    mean, au, eu = _good(X)
    return SimpleNamespace(mean=mean + 1j, aleatoric=au, epistemic=eu)


def huge(X):
    mean, au, eu = _good(X)
    return Prediction(mean + 1e300, au, eu)


def flat(X):
    mean, au, eu = _good(X)
    return Prediction(mean, np.zeros_like(au), np.zeros_like(eu))


def duck_good(X):
    return SimpleNamespace(**dict(zip(("mean", "aleatoric", "epistemic"), _good(X), strict=True)))


CASES = {
    "exits": (exits, "SystemExit: 0"),
    "mutated": (mutated, "Prediction.mean: 1 of"),
    "unchecked": (unchecked, "Prediction.mean: 1 of"),
    "duck_complex": (duck_complex, "Prediction.mean: expected real numbers, got dtype complex"),
    "huge": (huge, "Prediction.mean: 120 of 120 values exceed 1e+150"),
    "flat": (flat, "the total variance is 0 at 120 of 120 points"),
}


@pytest.fixture
def misbehaving():
    names = []
    for name, (predict, _) in {**CASES, "duck_good": (duck_good, None)}.items():
        # predict replaced: blr's joint covariance no longer belongs to it
        body = {"predict": lambda self, X, f=predict: f(X), "predict_joint": None}
        cls = type(name, (BayesianLinearRegression,), body)
        register(f"bad_{name}")(cls)
        names.append(f"bad_{name}")
    yield names
    for name in names:
        unregister(name)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_misbehaving_prediction_fails_its_run_naming_why(
    misbehaving, tiny_preset, tmp_path, case
):
    path, data = tiny_preset
    res = run_one(path, f"bad_{case}", 0, None, tmp_path / "res", data_dir=data)
    assert res.status == "failed"
    assert CASES[case][1] in res.error, res.error
    assert not (res.path / "predictions.npz").exists()


def test_an_object_of_another_class_with_good_fields_is_stored_and_scored(
    misbehaving, tiny_preset, tmp_path
):
    path, data = tiny_preset
    res = run_one(path, "bad_duck_good", 0, None, tmp_path / "res", data_dir=data)
    assert res.status == "ok", res.error
    with np.load(res.path / "predictions.npz") as z:
        assert np.array_equal(z["epistemic"], np.full(120, 0.1))
    assert np.isfinite(res.metrics["nll"])


def test_a_method_that_exits_does_not_end_the_grid(misbehaving, tiny_preset, tmp_path):
    path, data = tiny_preset
    runs = make_grid([str(path)], ["bad_exits", "blr"], [0, 1], data_dir=data)
    summary = run_grid(runs, tmp_path / "grid", jobs=1, data_dir=data)
    assert (summary.done, summary.failed) == (4, 2)
    statuses = sorted(
        (p.parts[-4], json.loads(p.read_text())["status"])
        for p in (tmp_path / "grid").glob("*/*/*/seed-*/result.json")
    )
    assert statuses == [("bad_exits", "failed")] * 2 + [("blr", "ok")] * 2
