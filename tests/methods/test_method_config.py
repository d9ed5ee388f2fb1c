"""Registry and config errors, and the per-optimizer search spaces of the NN methods."""

from __future__ import annotations

import pytest
import sweeps
import yaml

from udora import methods
from udora.methods.base import ConfigError
from udora.methods.nn.config import NNConfig


def test_every_issue_method_is_registered():
    expected = {"nn_ensemble", "nn_bagging", "nn_dropout", "blr", "gp_oracle", "gp_linear"}
    assert expected <= set(methods.list_methods())


def test_unknown_method_lists_the_valid_ones():
    with pytest.raises(KeyError, match=r"valid methods: .*nn_ensemble"):
        methods.get_method("nn_ensembel")


def test_bad_values_name_the_field():
    with pytest.raises(ConfigError, match="activation"):
        methods.get_method("nn_ensemble", activation="sigmoid")
    with pytest.raises(ConfigError, match="dropout"):
        methods.get_method("nn_dropout", dropout=0.0)  # MC dropout needs dropout on
    with pytest.raises(ConfigError, match=r"unknown field.*'widht'.*valid fields: .*width"):
        methods.get_method("nn_ensemble", widht=16)


def test_config_is_frozen():
    method = methods.get_method("blr")
    with pytest.raises(Exception, match="frozen"):
        method.config.alpha = 3.0


def test_paper_defaults():
    cfg = methods.get_method("nn_ensemble").config
    assert (cfg.activation, cfg.optimizer, cfg.n_members) == ("tanh", "adam", 10)
    assert cfg.width in (16, 32, 64)
    assert methods.get_method("nn_bagging").config.n_members == 10
    assert methods.get_method("nn_dropout").config.n_members == 10


@pytest.mark.parametrize(
    ("optimizer", "keys"),
    [
        ("adam", {"adam_b2", "adam_eps"}),
        ("sgd", {"sgd_nesterov"}),
        ("muon", {"muon_ns_steps", "muon_adam_b2", "muon_preconditioning", "muon_nesterov"}),
        ("soap", {"soap_b2", "soap_precondition_frequency", "soap_precondition_1d"}),
    ],
)
def test_optimizer_search_spaces(optimizer, keys):
    cfg = NNConfig(optimizer=optimizer)
    space = cfg.search_space()
    shared = set(NNConfig.SEARCH_SPACE)
    assert set(space) == shared | keys
    assert space["width"] == {"values": [16, 32, 64]}
    run = sweeps.next_run({"method": "random", "parameters": space}, [], validate=True)
    suggestion = {k: v["value"] for k, v in run.config.items()}
    built = methods.get_method("nn_ensemble", optimizer=optimizer, **suggestion)
    assert yaml.safe_load(yaml.safe_dump(built.config.to_dict())) == built.config.to_dict()


def test_search_space_is_a_copy():
    cfg = NNConfig()
    cfg.search_space()["width"]["values"].append(4096)
    assert cfg.search_space()["width"] == {"values": [16, 32, 64]}


# Names retired by the one vocabulary (docs/adding_a_method.md): members are ``n_members``,
# the learning rate ``learning_rate``, budgets ``n_epochs`` / ``n_steps`` / ``n_estimators``
# (``max_steps`` only for an optimiser's cap), patience ``patience`` and the gradient clip
# ``grad_clip_norm``.
RETIRED_NAMES = {
    "n_regressors",
    "lr",
    "epochs",
    "max_epochs",
    "max_iters",
    "num_iters",
    "iterations",
    "peak_learning_rate",
    "early_stopping_rounds",
    "gradient_clip",
    "swag_lr",
    "lr_excess",
}


@pytest.mark.parametrize("name", methods.list_methods())
def test_quick_budget_is_valid(name):
    config_cls = methods.get_method_class(name).Config
    quick = config_cls.QUICK
    assert isinstance(quick, dict)
    assert set(quick) <= set(config_cls.model_fields), sorted(
        set(quick) - set(config_cls.model_fields)
    )
    cfg = config_cls(**quick)
    assert {k: getattr(cfg, k) for k in quick} == quick
    assert methods.get_method(name, **quick).config == cfg


@pytest.mark.parametrize("name", methods.list_methods())
def test_field_vocabulary(name):
    config_cls = methods.get_method_class(name).Config
    fields = set(config_cls.model_fields)
    assert not fields & RETIRED_NAMES, f"{name} still uses {sorted(fields & RETIRED_NAMES)}"
    assert not set(config_cls.SEARCH_SPACE) & RETIRED_NAMES
    assert not set(config_cls.QUICK) & RETIRED_NAMES


@pytest.mark.parametrize("name", sorted(methods.registry.BUILTIN_METHODS))
def test_a_method_declares_every_library_its_modules_import(name):
    """``libraries`` (recorded as ``versions`` in every result.json) names each installed
    distribution that the modules of the method's classes import, beyond udora, JAX, numpy
    and pydantic, which every method has (the contract's own imports)."""
    import ast
    import importlib.metadata
    import inspect

    cls = methods.get_method_class(name)
    owners = importlib.metadata.packages_distributions()
    imported = set()
    for base in cls.__mro__:
        module = inspect.getmodule(base)
        if module is None or not module.__name__.startswith("udora."):
            continue
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    dists = {d for m in imported for d in owners.get(m, ()) if m != "udora"}
    every = {"jax", "jaxlib", "numpy", "pydantic"}
    logging = {"loguru"}  # laplace silences laplax's logger with it; no number depends on it
    assert dists - every - logging <= set(cls.libraries), name
    for dist in cls.libraries:
        importlib.metadata.version(dist)  # raises for a name that is not a distribution
