"""The worked example of docs/adding_a_method.md (the plugin module), run through the contract."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from test_contract import CHECKS_CONFIG, CHECKS_WITH_TASK

from udora import methods
from udora.methods.registry import register, unregister

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "adding_a_method.md"
MODULE = ROOT / "docs" / "examples" / "udora_knn" / "udora_knn.py"
NAME = "knn_doc_example"  # not "knn": a real methods/knn.py may exist one day


@pytest.fixture(scope="module")
def doc_method():
    source = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S).group(1)
    assert source == MODULE.read_text(), f"the doc's block is not {MODULE}"
    assert "@register" not in source  # a plugin is named by its entry point only
    module = types.ModuleType("udora_doc_knn")
    sys.modules[module.__name__] = module
    exec(compile(source, str(DOC), "exec"), module.__dict__)
    register(NAME)(module.KNN)
    yield module
    unregister(NAME)
    del sys.modules[module.__name__]


@pytest.mark.parametrize("check", CHECKS_WITH_TASK + CHECKS_CONFIG, ids=lambda c: c.__name__[6:])
def test_doc_example_passes_the_contract(doc_method, check, task):
    assert NAME in methods.list_methods()
    if check in CHECKS_WITH_TASK:
        check(NAME, task)
    else:
        check(NAME)


def test_doc_example_mean_is_the_neighbour_average(doc_method):
    X = np.array([[0.0], [1.0], [2.0], [10.0]])
    y = np.array([1.0, 2.0, 3.0, 50.0])
    pred = methods.get_method(NAME, k=3).fit(X, y, seed=0).predict(np.array([[1.0]]))
    np.testing.assert_allclose(pred.mean, [2.0])
    np.testing.assert_allclose(pred.aleatoric, [np.var([1.0, 2.0, 3.0])])
