"""docs/adding_a_method.md: its file blocks are the example package's files, every other
Python block runs, and the worked example (the plugin module) meets the contract."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from udora import methods
from udora.methods import contract
from udora.methods.registry import register, unregister

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "adding_a_method.md"
PACKAGE = ROOT / "docs" / "examples" / "udora_knn"
NAME = "knn_doc_example"  # not "knn": a real methods/knn.py may exist one day
BLOCK = re.compile(r"(?:<!-- file: (?P<file>\S+) -->\n)?```(?P<lang>\w+)\n(?P<body>.*?)```", re.S)


def _blocks() -> list[tuple[str | None, str, str]]:
    """``(file or None, language, body)`` of every fenced block of the doc, in order."""
    return [(m["file"], m["lang"], m["body"]) for m in BLOCK.finditer(DOC.read_text())]


FILE_BLOCKS = [(f, body) for f, _, body in _blocks() if f]
PYTHON_BLOCKS = [body for f, lang, body in _blocks() if lang == "python" and not f]


def test_file_blocks_are_the_example_package():
    assert {f for f, _ in FILE_BLOCKS} == {
        "docs/examples/udora_knn/pyproject.toml",
        "docs/examples/udora_knn/udora_knn.py",
    }
    for name, body in FILE_BLOCKS:
        assert body == (ROOT / name).read_text(), f"the doc's block is not {name}"


@pytest.mark.parametrize("source", PYTHON_BLOCKS, ids=lambda s: s.splitlines()[0][:40])
def test_python_block_runs(source, monkeypatch):
    monkeypatch.syspath_prepend(str(PACKAGE))  # `from udora_knn import KNN`, as installed
    exec(compile(source, str(DOC), "exec"), {"__name__": "doc_block"})


def test_the_doc_has_its_python_blocks():
    joined = "\n".join(PYTHON_BLOCKS)
    for needed in ("FAMILIES", "combine_members", "NotFittedError", "check_method(KNN)"):
        assert needed in joined


@pytest.fixture(scope="module")
def doc_method():
    source = dict(FILE_BLOCKS)["docs/examples/udora_knn/udora_knn.py"]
    assert "@register" not in source  # a plugin is named by its entry point only
    module = types.ModuleType("udora_doc_knn")
    sys.modules[module.__name__] = module
    exec(compile(source, str(DOC), "exec"), module.__dict__)
    register(NAME)(module.KNN)
    yield module
    unregister(NAME)
    del sys.modules[module.__name__]


@pytest.mark.parametrize("check", contract.RULES, ids=contract.rule_name)
def test_doc_example_passes_the_contract(doc_method, check, task):
    assert NAME in methods.list_methods()
    check(contract.subject(NAME, task=task))


def test_doc_example_mean_is_the_neighbour_average(doc_method):
    X = np.array([[0.0], [1.0], [2.0], [10.0]])
    y = np.array([1.0, 2.0, 3.0, 50.0])
    pred = methods.get_method(NAME, k=3).fit(X, y, seed=0).predict(np.array([[1.0]]))
    np.testing.assert_allclose(pred.mean, [2.0])
    np.testing.assert_allclose(pred.aleatoric, [np.var([1.0, 2.0, 3.0])])
