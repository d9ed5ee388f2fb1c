"""A field a method declares unused on a task kind (``MethodConfig.unused_on``; left out
of that kind's search space) must change nothing: fitted with another value on a tiny
classification sample, the method predicts exactly the same."""

from __future__ import annotations

import numpy as np
import pytest
from tiny_presets import tiny_classification_preset

from udora import methods
from udora.oracle.classification.task import build_sample


def _cases():
    out = []
    for name in methods.list_methods():
        cls = methods.get_method_class(name)
        if "classification" not in getattr(cls, "kinds", ()):
            continue
        for field in cls.Config().unused_on("classification"):
            slow = name in ("swag",)  # a network's training: the default set's budget
            out.append(pytest.param(name, field, marks=[pytest.mark.slow] if slow else []))
    return out


def _other_value(config, field):
    """A valid value of ``field`` other than ``config``'s, from its search-space spec."""
    spec = config.search_space()[field]
    now = getattr(config, field)
    if "values" in spec:
        return next(v for v in spec["values"] if v != now)
    return spec["min"] if spec["min"] != now else spec["max"]


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    preset, data = tiny_classification_preset(tmp_path_factory.mktemp("unused"))
    return build_sample(preset, 0, data_dir=data)


def test_some_fields_are_declared_unused():
    assert {(p.values[0], p.values[1]) for p in _cases()} >= {
        ("catboost_ps", "standardize_y"),
        ("ngboost_bag", "standardize_y"),
        ("swag", "val_fraction"),
    }


@pytest.mark.parametrize(("method", "field"), _cases())
def test_an_unused_field_changes_no_prediction(sample, method, field):
    cls = methods.get_method_class(method)
    quick = dict(cls.Config.QUICK)
    base = cls.Config(**quick)
    preds = []
    for value in (getattr(base, field), _other_value(base, field)):
        model = methods.get_method(method, **{**quick, field: value})
        model.fit(sample.X_train, sample.y_train, seed=0, knowledge=sample.knowledge())
        preds.append(model.predict(sample.X))
    assert _other_value(base, field) != getattr(base, field)
    for name in ("prob", "aleatoric", "epistemic"):
        np.testing.assert_array_equal(getattr(preds[0], name), getattr(preds[1], name), name)
    assert field not in base.search_space_on("classification")
    assert field in base.search_space_on("regression") or "regression" not in cls.kinds
