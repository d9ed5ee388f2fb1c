"""docs/adding_a_method.md: its file blocks are the example packages' files, every other
Python block runs, the worked example (the plugin module) meets the contract, and the
neural example on the shared trainer has the loss it states, is nn_ensemble at beta = 0
and gives a valid prediction through the runner on a tiny preset."""

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
        "docs/examples/udora_betanll/pyproject.toml",
        "docs/examples/udora_betanll/udora_betanll.py",
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


def _doc_module(file: str, module_name: str, name: str, cls: str):
    """The doc's block ``file`` executed as module ``module_name``, its class ``cls``
    registered in code as ``name`` (a plugin is named by its entry point only, so the
    block registers nothing); yields the module, then unregisters it."""
    source = dict(FILE_BLOCKS)[file]
    assert "@register" not in source
    module = types.ModuleType(module_name)
    sys.modules[module.__name__] = module
    exec(compile(source, str(DOC), "exec"), module.__dict__)
    register(name)(getattr(module, cls))
    yield module
    unregister(name)
    del sys.modules[module.__name__]


@pytest.fixture(scope="module")
def doc_method():
    yield from _doc_module("docs/examples/udora_knn/udora_knn.py", "udora_doc_knn", NAME, "KNN")


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


NEURAL = "beta_nll_doc_example"


@pytest.fixture(scope="module")
def neural_module():
    """The doc's neural example module, executed from its block and registered in code."""
    file = "docs/examples/udora_betanll/udora_betanll.py"
    assert "train_members" not in dict(FILE_BLOCKS)[file]  # no training loop of its own
    yield from _doc_module(file, "udora_doc_betanll", NEURAL, "BetaNLLEnsemble")


def test_the_neural_example_loss_is_the_beta_nll(neural_module):
    """Value and gradient against the formula, with the head written out by hand:
    mu = a, v = (softplus(rho) + eps)^2; l = v^beta (1/2 log v + (y - mu)^2 / (2 v)) with
    v^beta held constant, so dl/dmu = v^beta (mu - y) / v."""
    import jax
    import jax.numpy as jnp

    from udora.methods.nn.heads import HEAD_EPS

    raw = jnp.array([[0.3, -0.2], [1.5, 0.7], [-0.4, 1.1]])
    y = jnp.array([0.1, 2.0, -1.0])
    v = (np.log1p(np.exp(np.asarray(raw[:, 1]))) + HEAD_EPS) ** 2
    mu = np.asarray(raw[:, 0])
    for beta in (0.0, 0.5, 1.0):
        loss = neural_module.BetaNLL("standard", beta)
        expected = v**beta * (0.5 * np.log(v) + (np.asarray(y) - mu) ** 2 / (2 * v))
        np.testing.assert_allclose(loss(raw, y), expected, rtol=1e-5)
        grad = jax.grad(lambda r: jnp.sum(loss(r, y)))(raw)  # noqa: B023
        np.testing.assert_allclose(grad[:, 0], v**beta * (mu - np.asarray(y)) / v, rtol=1e-5)


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_the_neural_example_at_beta_0_is_nn_ensemble(neural_module, task):
    budget = {"n_epochs": 20, "n_members": 3}
    ours = methods.get_method(NEURAL, beta=0.0, **budget).fit(task.X, task.y, seed=1)
    theirs = methods.get_method("nn_ensemble", **budget).fit(task.X, task.y, seed=1)
    a, b = ours.predict(task.X_near), theirs.predict(task.X_near)
    for part in ("mean", "aleatoric", "epistemic"):
        np.testing.assert_array_equal(getattr(a, part), getattr(b, part))
    other = methods.get_method(NEURAL, beta=1.0, **budget).fit(task.X, task.y, seed=1)
    assert not np.allclose(other.predict(task.X_near).mean, a.mean)  # beta matters


@pytest.mark.slow  # seconds each: in the slow set (CI runs it)
def test_the_neural_example_runs_on_a_tiny_preset(neural_module, tiny_preset, tmp_path):
    from udora.experiments.run.execute import run_one

    path, data = tiny_preset
    budget = {"n_epochs": 10, "n_members": 2, "beta": 0.5}
    result = run_one(path, NEURAL, 0, budget, tmp_path / "runs", data_dir=data)
    assert result.status == "ok", result.error
    with np.load(result.path / "predictions.npz") as stored:
        parts = {k: stored[k] for k in ("mean", "aleatoric", "epistemic")}
    m = parts["mean"].shape[0]
    assert m > 0 and all(p.shape == (m,) and np.isfinite(p).all() for p in parts.values())
    assert (parts["aleatoric"] >= 0).all() and (parts["epistemic"] > 0).all()
    assert np.isfinite(result.metrics["spearman_eu"]) and np.isfinite(result.metrics["nll"])


@pytest.mark.slow
def test_the_neural_example_meets_the_contract(neural_module, task):
    assert contract.check_method(NEURAL, task=task) == []  # ~20 s: its networks train
