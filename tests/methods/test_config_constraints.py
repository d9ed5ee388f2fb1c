"""Configs refuse values a method cannot use, naming the field and what was expected.

The case that motivated it: ``n_members=1`` for an ensemble gave EU = 0 at every point and a
run that ended "ok". Search spaces and quick budgets staying inside the constraints are
checked by test_search_spaces.py and the contract's ``declarations`` rule.
"""

from __future__ import annotations

import pytest
from pydantic import Field, ValidationError

from udora import methods
from udora.methods.base import ConfigError, MethodConfig
from udora.methods.registry import BUILTIN_METHODS

MEMBER_METHODS = [
    "catboost_kgb",
    "catboost_ps",
    "catboost_ve",
    "fsp_laplace",
    "laplace",
    "ngboost_bag",
    "nn_bagging",
    "nn_dropout",
    "nn_ensemble",
    "swag",
]
ONE_NETWORK = ["deup", "deup_unbiased", "edl"]  # n_members is fixed at 1: EU has its own form


def test_every_builtin_with_a_member_count_is_listed_here():
    fields = {name: methods.get_method_class(name).Config.model_fields for name in BUILTIN_METHODS}
    counted = {name for name, f in fields.items() if "n_members" in f}
    assert counted == set(MEMBER_METHODS) | set(ONE_NETWORK)


@pytest.mark.parametrize("name", MEMBER_METHODS)
def test_member_based_methods_refuse_one_member(name):
    with pytest.raises(ConfigError, match=r"n_members: Input should be greater than or equal to 2"):
        methods.get_method(name, n_members=1)
    assert methods.get_method(name, n_members=2).config.n_members == 2


@pytest.mark.parametrize("name", ONE_NETWORK)
def test_one_network_methods_keep_their_one_member(name):
    assert methods.get_method(name).config.n_members == 1
    with pytest.raises(ConfigError, match=r"n_members: Input should be less than or equal to 1"):
        methods.get_method(name, n_members=2)


UNUSABLE = [  # (method, field, value, what pydantic says was expected)
    ("nn_ensemble", "n_epochs", 0, "greater than or equal to 1"),
    ("nn_ensemble", "width", 0, "greater than or equal to 1"),
    ("nn_ensemble", "batch_size", 0, "greater than or equal to 1"),
    ("nn_ensemble", "learning_rate", 0.0, "greater than 0"),
    ("nn_dropout", "dropout", 1.0, "less than 1"),
    ("nn_bagging", "sample_fraction", 0.0, "greater than 0"),
    ("laplace", "val_fraction", 0.0, "greater than 0"),
    ("swag", "n_checkpoints", 1, "greater than or equal to 2"),
    ("dkl", "n_steps", 0, "greater than or equal to 1"),
    ("ngboost_bag", "n_estimators", 0, "greater than or equal to 1"),
    ("catboost_ps", "bagging_frac", 1.5, "less than or equal to 1"),
    ("gp_linear", "max_steps", 0, "greater than or equal to 1"),
]


@pytest.mark.parametrize(("name", "field", "value", "expected"), UNUSABLE)
def test_unusable_values_are_refused_naming_the_field(name, field, value, expected):
    with pytest.raises(ConfigError, match=rf"{field}: Input should be {expected}"):
        methods.get_method(name, **{field: value})


def test_a_default_is_checked_against_its_own_constraint():
    class Members(MethodConfig):
        n_members: int = Field(default=1, ge=2)

    with pytest.raises(ValidationError, match=r"n_members\n  Input should be greater than or"):
        Members()


def test_ngboost_bag_refuses_members_that_are_one_model():
    same = {"replace": False, "sample_fraction": 1.0}
    with pytest.raises(ConfigError, match=r"members are one model and EU is 0"):
        methods.get_method("ngboost_bag", **same)
    assert methods.get_method("ngboost_bag", **same, col_sample=0.5).config.col_sample == 0.5
    assert methods.get_method("ngboost_bag", replace=True, sample_fraction=1.0).config.replace
