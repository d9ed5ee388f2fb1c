"""One contract over every registered method, present and future.

Parametrised over ``list_methods()`` at collection time, so a method registered later is
checked without touching this file. Methods that declare ``uses_task_prior`` (as
``gp_oracle`` does) get the hand-made prior in their ``knowledge``; methods trained for
``n_epochs`` run 60 of them here.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import sweeps
import yaml
from method_tasks import Task

from udora import methods
from udora.methods.base import ConfigError, Prediction, UQMethod

QUICK_EPOCHS = 60
SEED = 3


# Per-method settings for this small task, each with its reason.
METHOD_OVERRIDES: dict[str, dict] = {
    # Diagonal SWAG explores one basin; with tanh every hidden unit saturates at the far
    # points ([3, 5]^2 is ~7 sd out), so the sampled functions agree there more than near
    # the data (median EU far/near ~0.5 with tanh, ~50 with relu on this task).
    "swag": {"activation": "relu"},
    # Speed: 150 full-batch marginal-likelihood steps instead of 500.
    "dkl": {"n_steps": 150},
    # Speed: 5 members of 200 trees instead of 10 of 500.
    "ngboost_bag": {"n_members": 5, "n_estimators": 200},
}

# Trees predict a constant beyond the data: every far point ([3, 5]^2) falls in the leaves
# of the data's outer corner, so "EU far > EU near" compares the corner with the interior
# median and passes or fails with the task's seed (tree methods' report). For these
# methods the check is instead that the far prediction IS the corner's prediction.
CONSTANT_EXTRAPOLATION = {"ngboost_nig", "ngboost_bag", "catboost_ps"}


def quick_overrides(name: str) -> dict:
    fields = methods.get_method_class(name).Config.model_fields
    quick = {"n_epochs": QUICK_EPOCHS} if "n_epochs" in fields else {}
    return {**quick, **METHOD_OVERRIDES.get(name, {})}


def fit_method(name: str, task: Task, seed: int = SEED, **overrides) -> UQMethod:
    method = methods.get_method(name, **{**quick_overrides(name), **overrides})
    knowledge = task.prior.knowledge(task.X)
    if not type(method).uses_task_prior:
        knowledge = dataclasses.replace(knowledge, prior=None)
    return method.fit(task.X, task.y, seed=seed, knowledge=knowledge)


_FITTED: dict[str, UQMethod] = {}


def fitted(name: str, task: Task) -> UQMethod:
    """One fit per method per session, shared by the checks below."""
    if name not in _FITTED:
        _FITTED[name] = fit_method(name, task)
    return _FITTED[name]


def check_prediction(pred: Prediction, m: int) -> None:
    assert isinstance(pred, Prediction)
    for arr in (pred.mean, pred.aleatoric, pred.epistemic, pred.total):
        assert arr.shape == (m,) and arr.dtype == np.float64
        assert np.all(np.isfinite(arr))
    assert np.all(pred.aleatoric >= 0) and np.all(pred.epistemic >= 0)
    np.testing.assert_allclose(pred.total, pred.aleatoric + pred.epistemic)
    if pred.member_means is not None:
        assert pred.member_means.ndim == 2 and pred.member_means.shape[1] == m
        np.testing.assert_allclose(pred.member_means.mean(axis=0), pred.mean, rtol=1e-10)


def check_shapes(name: str, task: Task) -> None:
    method = fitted(name, task)
    check_prediction(method.predict(task.X_near), task.X_near.shape[0])
    check_prediction(method.predict(task.X_near[:1]), 1)


def check_same_seed_same_prediction(name: str, task: Task) -> None:
    again = fit_method(name, task).predict(task.X_near)
    first = fitted(name, task).predict(task.X_near)
    np.testing.assert_array_equal(again.mean, first.mean)
    np.testing.assert_array_equal(again.aleatoric, first.aleatoric)
    np.testing.assert_array_equal(again.epistemic, first.epistemic)


def check_r2(name: str, task: Task) -> None:
    mean = fitted(name, task).predict(task.X_near).mean
    r2 = 1.0 - np.mean((mean - task.f_near) ** 2) / np.var(task.f_near)
    assert r2 > 0.5, f"{name}: R^2 = {r2:.3f} against the noise-free function"


def check_epistemic_grows_far_from_data(name: str, task: Task) -> None:
    method = fitted(name, task)
    if name in CONSTANT_EXTRAPOLATION:
        corner = method.predict(task.X.max(axis=0, keepdims=True))
        far_pred = method.predict(task.X_far)
        np.testing.assert_allclose(far_pred.mean, corner.mean[0], rtol=1e-12)
        np.testing.assert_allclose(far_pred.epistemic, corner.epistemic[0], rtol=1e-12)
        return
    near = np.median(method.predict(task.X_near).epistemic)
    far = np.median(method.predict(task.X_far).epistemic)
    assert far > near, f"{name}: median EU far {far:.4g} <= near {near:.4g}"


def check_config_roundtrips_through_yaml(name: str) -> None:
    cls = methods.get_method_class(name)
    config = cls().config
    text = yaml.safe_dump(config.to_dict())
    assert cls.Config(**yaml.safe_load(text)) == config
    assert methods.get_method(name, **yaml.safe_load(text)).config == config


def check_unknown_field_lists_valid_ones(name: str) -> None:
    cls = methods.get_method_class(name)
    with pytest.raises(ConfigError, match="valid fields") as err:
        methods.get_method(name, no_such_field=1)
    assert all(f in str(err.value) for f in cls.Config.model_fields)


def check_search_space_accepted_by_sweeps(name: str) -> None:
    config = methods.get_method_class(name)().config
    space = config.search_space()
    assert set(space) <= set(type(config).model_fields), f"{name}: search space keys are not fields"
    if not space:
        return  # a reference method with nothing to tune (gp_oracle)
    for algorithm in ("random", "bayes"):
        sweep = {
            "method": algorithm,
            "metric": {"name": "val_nll", "goal": "minimize"},
            "parameters": space,
        }
        run = sweeps.next_run(sweep, [], validate=True)
        suggestion = {k: v["value"] for k, v in run.config.items()}
        assert set(suggestion) == set(space)
        built = methods.get_method(name, **suggestion)
        for key, value in suggestion.items():
            assert getattr(built.config, key) == value


CHECKS_WITH_TASK = [
    check_shapes,
    check_same_seed_same_prediction,
    check_r2,
    check_epistemic_grows_far_from_data,
]
CHECKS_CONFIG = [
    check_config_roundtrips_through_yaml,
    check_unknown_field_lists_valid_ones,
    check_search_space_accepted_by_sweeps,
]


@pytest.mark.parametrize("check", CHECKS_WITH_TASK, ids=lambda c: c.__name__[6:])
@pytest.mark.parametrize("name", methods.list_methods())
def test_contract_on_task(name, check, task):
    check(name, task)


@pytest.mark.parametrize("check", CHECKS_CONFIG, ids=lambda c: c.__name__[6:])
@pytest.mark.parametrize("name", methods.list_methods())
def test_contract_config(name, check):
    check(name)
