"""One contract over every registered method, present and future.

The rules live in the package (:mod:`udora.methods.contract`), so that a plugin's author
runs the same ones on an installed method; here they are parametrised over
``list_methods()`` at collection time, so a method registered later is checked without
touching this file. One fit per method is shared by the task rules.
"""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import Field

from udora import methods
from udora.methods import contract
from udora.methods.base import MethodConfig, Prediction
from udora.methods.blr import BayesianLinearRegression, BLRConfig
from udora.methods.contract_classification import CLASSIFICATION_RULES

_SUBJECTS: dict[str, contract.Subject] = {}


def _subject(name: str, task) -> contract.Subject:
    if name not in _SUBJECTS:
        _SUBJECTS[name] = contract.subject(name, task=task)
    return _SUBJECTS[name]


# Fitting these takes 8-30 s each on a cold cache (compiling programs of their own, or
# boosting many members): the slow set checks them; the default run keeps nn_ensemble for
# the networks, one tree method of each library and the linear and GP methods.
_SLOW_FITS = {
    "catboost_kgb",
    "deup",
    "deup_unbiased",
    "dkl",
    "edl",
    "fsp_laplace",
    "laplace",
    "ngboost_bag",
    "nn_bagging",
    "nn_dropout",
    "swag",
}


def _task_subjects() -> list:
    """The methods that declare regression (the task rules' kind)."""
    names = [n for n in methods.list_methods() if "regression" in methods.get_method_class(n).kinds]
    return [pytest.param(n, marks=pytest.mark.slow) if n in _SLOW_FITS else n for n in names]


@pytest.mark.parametrize("check", contract.TASK_RULES, ids=contract.rule_name)
@pytest.mark.parametrize("name", _task_subjects())
def test_contract_on_task(name, check, task):
    check(_subject(name, task))


_CLS_SUBJECTS: dict[str, object] = {}
# The classification rules fit each method on its own task; in the default run only the
# ensemble (the networks' classification head), the others in the slow set.
_CLS_DEFAULT = {"nn_ensemble"}


def _classification_subjects() -> list:
    names = [
        n for n in methods.list_methods() if "classification" in methods.get_method_class(n).kinds
    ]
    return [n if n in _CLS_DEFAULT else pytest.param(n, marks=pytest.mark.slow) for n in names]


@pytest.mark.parametrize("check", CLASSIFICATION_RULES, ids=contract.rule_name)
@pytest.mark.parametrize("name", _classification_subjects())
def test_contract_on_classification_task(name, check, task):
    if name not in _CLS_SUBJECTS:
        _CLS_SUBJECTS[name] = contract.classification_subject(_subject(name, task))
    check(_CLS_SUBJECTS[name])


@pytest.mark.parametrize("check", contract.CONFIG_RULES, ids=contract.rule_name)
@pytest.mark.parametrize("name", methods.list_methods())
def test_contract_config(name, check, task):
    check(_subject(name, task))


def test_check_method_passes_a_method_that_meets_the_contract(task):
    assert contract.check_method("blr", task=task) == []


class _OneMemberConfig(BLRConfig):
    n_members: int = Field(default=3, ge=1)


class _FlatEU(BayesianLinearRegression):
    """BLR whose EU is the same everywhere, with a member count that accepts 1."""

    Config = _OneMemberConfig

    def predict(self, X: np.ndarray) -> Prediction:
        pred = super().predict(X)
        return Prediction(pred.mean, pred.aleatoric, np.full(len(pred), 0.1))


class _Unfitted(BayesianLinearRegression):
    """BLR that predicts zeros (unit variances) before fit instead of raising NotFittedError."""

    def predict(self, X: np.ndarray) -> Prediction:
        zeros, ones = np.zeros(np.asarray(X).shape[0]), np.ones(np.asarray(X).shape[0])
        return Prediction(zeros, ones, ones) if not hasattr(self, "d_") else super().predict(X)


def test_check_method_names_each_broken_rule(task):
    failures = contract.check_method(_FlatEU, task=task)
    assert failures == [
        f"member_count_refuses_one: {contract.ONE_MEMBER}; constrain it with Field(ge=2)",
        "epistemic_grows_far_from_data: median EU far 0.1 <= near 0.1",
    ]
    unfitted = contract.check_method(_Unfitted, task=task)
    returned = "predict before fit returned a prediction"
    assert unfitted == [f"predict_before_fit_raises: {returned}; {contract.NOT_FITTED}"]


class _UndeclaredConstantAU(BayesianLinearRegression):
    """BLR (one noise variance) that does not declare its AU constant."""

    aleatoric = "per point"


class _FalselyConstantAU(BayesianLinearRegression):
    """BLR whose AU varies with |x_0| while it declares it constant."""

    def predict(self, X: np.ndarray) -> Prediction:
        pred = super().predict(X)
        return Prediction(pred.mean, pred.aleatoric * (1 + np.abs(X[:, 0])), pred.epistemic)


def test_the_aleatoric_declaration_is_checked_against_the_prediction(task):
    [undeclared] = contract.check_method(_UndeclaredConstantAU, task=task)
    assert undeclared.startswith("aleatoric_as_declared: its AU is ")
    assert 'declare aleatoric = "constant"' in undeclared
    [false] = contract.check_method(_FalselyConstantAU, task=task)
    assert false.startswith('aleatoric_as_declared: declares aleatoric = "constant", but its AU')
    bad = type("Bad", (BayesianLinearRegression,), {"aleatoric": "sometimes"})
    [unusable] = contract.check_method(bad, task=task)
    assert "aleatoric 'sometimes' is not one of 'per point', 'constant'" in unusable


def test_check_method_stops_at_unusable_declarations(task):
    class NoDefault(MethodConfig):
        k: int

    class Bad(BayesianLinearRegression):
        Config = NoDefault
        family = "forests"

    failures = contract.check_method(Bad, task=task)
    assert len(failures) == 1 and failures[0].startswith("declarations: family 'forests'")
    assert "has no default for field k" in failures[0]


def test_check_method_of_an_unknown_name_says_it_does_not_load():
    valid = ", ".join(methods.list_methods())
    assert contract.check_method("no_such_method") == [
        f"loads: unknown method 'no_such_method'; valid methods: {valid}"
    ]


def test_main_prints_one_line_per_method_and_exits_1_on_a_failure(capsys):
    assert contract.main(["blr"]) == 0
    assert capsys.readouterr().out == "blr: meets the method contract (11 rules)\n"
    assert contract.main(["blr", "no_such_method"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("blr: meets") and lines[1].startswith("no_such_method: loads: ")
