"""Every method's search space is well-formed, sweepable, and pinned to the paper's Appendix D.

docs/tuning.md lists each parameter next to the paper's range; ``PAPER_RANGES`` below pins a
handful of them so that an edit drifting from the paper fails here.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import sweeps

from udora import methods
from udora.methods.nn.config import _OPTIMIZER_SPACES, NNConfig

DISTRIBUTIONS = {"log_uniform_values", "uniform", "int_uniform"}
REFERENCE_METHODS = {"gp_oracle", "gp_linear", "gp_approx"}  # no paper space (docs/tuning.md)


def _spaces() -> list[tuple[str, str, dict[str, Any]]]:
    """``(method, optimizer or "", space)``: each method's default space, and for the NN
    methods the space under every optimizer."""
    out = []
    for name in methods.list_methods():
        config = methods.get_method_class(name).Config()
        if isinstance(config, NNConfig):
            for optimizer in _OPTIMIZER_SPACES:
                cfg = type(config)(optimizer=optimizer)
                out.append((name, optimizer, cfg.search_space()))
        else:
            out.append((name, "", config.search_space()))
    return out


SPACES = _spaces()
IDS = [f"{name}-{opt}" if opt else name for name, opt, _ in SPACES]


def _build(name: str, optimizer: str, **values: Any):
    extra = {"optimizer": optimizer} if optimizer else {}
    return methods.get_method(name, **extra, **values)


@pytest.mark.parametrize(("name", "optimizer", "space"), SPACES, ids=IDS)
def test_space_keys_are_config_fields(name, optimizer, space):
    fields = set(methods.get_method_class(name).Config.model_fields)
    assert set(space) <= fields, f"{name}: not fields: {set(space) - fields}"


@pytest.mark.parametrize(("name", "optimizer", "space"), SPACES, ids=IDS)
def test_space_specs_are_well_formed(name, optimizer, space):
    for key, spec in space.items():
        if "values" in spec:
            assert set(spec) == {"values"}, f"{name}.{key}: {spec}"
            assert spec["values"], f"{name}.{key}: empty values"
            assert len(set(map(repr, spec["values"]))) == len(spec["values"])
            for value in spec["values"]:
                built = _build(name, optimizer, **{key: value})
                assert getattr(built.config, key) == value
            continue
        assert set(spec) == {"distribution", "min", "max"}, f"{name}.{key}: {spec}"
        dist, lo, hi = spec["distribution"], spec["min"], spec["max"]
        assert dist in DISTRIBUTIONS, f"{name}.{key}: {dist}"
        assert lo < hi, f"{name}.{key}: min {lo} >= max {hi}"
        if dist == "log_uniform_values":
            assert lo > 0, f"{name}.{key}: log range must be positive"
        if dist == "int_uniform":
            assert isinstance(lo, int) and isinstance(hi, int), f"{name}.{key}: {spec}"
        for value in (lo, hi):  # both ends validate in the config
            assert math.isfinite(value)
            _build(name, optimizer, **{key: value})


@pytest.mark.parametrize(("name", "optimizer", "space"), SPACES, ids=IDS)
def test_sweeps_accepts_the_space(name, optimizer, space):
    if not space:
        assert name in REFERENCE_METHODS
        return
    for algorithm in ("random", "bayes"):
        sweep = {
            "method": algorithm,
            "metric": {"name": "x", "goal": "minimize"},
            "parameters": space,
        }
        run = sweeps.next_run(sweep, [], validate=True)
        suggestion = {k: v["value"] for k, v in run.config.items()}
        assert set(suggestion) == set(space)
        built = _build(name, optimizer, **suggestion)
        for key, value in suggestion.items():
            assert getattr(built.config, key) == value


def test_deup_unbiased_shares_deup_space():
    space = methods.get_method_class("deup").Config().search_space()
    assert methods.get_method_class("deup_unbiased").Config().search_space() == space


NN_METHODS = [
    "nn_ensemble",
    "nn_bagging",
    "nn_dropout",
    "edl",
    "deup",
    "laplace",
    "fsp_laplace",
    "swag",
]


def _log(lo: float, hi: float) -> dict[str, Any]:
    return {"distribution": "log_uniform_values", "min": lo, "max": hi}


def _uni(lo: float, hi: float) -> dict[str, Any]:
    return {"distribution": "uniform", "min": lo, "max": hi}


def _int(lo: int, hi: int) -> dict[str, Any]:
    return {"distribution": "int_uniform", "min": lo, "max": hi}


# (method, field, the paper's space) -- Appendix D (and E.2 for the NN width).
PAPER_RANGES = [
    *[(m, "width", {"values": [16, 32, 64]}) for m in NN_METHODS],  # E.2
    *[(m, "blocks", {"values": [1, 2, 3, 4]}) for m in NN_METHODS],  # D.4 resnet_blocks
    *[(m, "n_epochs", _int(50, 200)) for m in NN_METHODS],  # D.4
    *[(m, "batch_size", {"values": [64, 128, 256, 512]}) for m in NN_METHODS],  # D.4
    *[(m, "learning_rate", _log(1e-4, 5e-3)) for m in NN_METHODS],  # D.4 lr
    *[(m, "weight_decay", _log(1e-6, 1e-2)) for m in NN_METHODS],  # D.4
    *[(m, "momentum", _uni(0.7, 0.95)) for m in NN_METHODS],  # D.4
    *[(m, "adam_b2", _uni(0.95, 0.999)) for m in NN_METHODS],  # D.4, Adam default
    *[(m, "adam_eps", _log(1e-9, 1e-6)) for m in NN_METHODS],  # D.4
    ("nn_dropout", "dropout", _uni(0.05, 0.35)),
    ("nn_bagging", "sample_fraction", _uni(0.6, 0.95)),
    ("edl", "evi_reg", _log(1e-3, 3e-1)),
    ("deup", "learning_rate_excess", _log(1e-4, 1e-1)),
    ("deup", "n_epochs_excess", _int(30, 200)),
    ("deup", "batch_size_excess", {"values": [32, 64, 128, 256]}),
    ("swag", "n_checkpoints", _int(10, 40)),
    ("swag", "epochs_per_checkpoint", _int(2, 12)),
    ("swag", "swag_learning_rate", _log(1e-3, 1e-1)),
    ("swag", "swag_momentum", {"values": [0.0, 0.9, 0.95]}),
    ("swag", "val_fraction", _uni(0.05, 0.25)),  # the paper's calibration_fraction
    ("blr", "alpha", _log(1e-4, 10.0)),
    ("blr", "sigma", _log(1e-2, 2.0)),
    ("dkl", "hidden_dim", {"values": [16, 32, 64, 128]}),
    ("dkl", "n_steps", _int(200, 1000)),  # the paper's num_iters
    ("dkl", "learning_rate", _log(5e-4, 5e-2)),  # the paper's peak_learning_rate
    ("ngboost_nig", "learning_rate", _log(0.01, 0.2)),
    ("ngboost_nig", "evid_strength", _log(1e-4, 1.0)),
    ("ngboost_bag", "learning_rate", _log(0.005, 0.1)),
    ("ngboost_bag", "n_members", _int(5, 25)),  # the paper's n_regressors
    ("catboost_ps", "n_estimators", _int(100, 600)),  # the paper's iterations
    ("catboost_ps", "l2_leaf_reg", _log(0.5, 10.0)),
    ("catboost_kgb", "n_estimators", _int(200, 1000)),  # the paper's posterior_iterations
    ("catboost_kgb", "n_prior_estimators", _int(50, 300)),  # prior_iterations
    ("catboost_kgb", "eps", _log(1e-5, 1e-3)),
]

# Optimizer ablation spaces (Appendix D.4).
PAPER_OPTIMIZER_RANGES = [
    ("sgd", "sgd_nesterov", {"values": [False, True]}),
    ("muon", "muon_ns_steps", {"values": [3, 5, 7]}),
    ("muon", "muon_adam_b2", _uni(0.95, 0.999)),
    ("muon", "muon_preconditioning", {"values": ["frobenius", "spectral"]}),
    ("soap", "soap_b2", _uni(0.9, 0.99)),
    ("soap", "soap_precondition_frequency", {"values": [1, 5, 10, 20]}),
]


@pytest.mark.parametrize(("name", "field", "paper"), PAPER_RANGES)
def test_space_matches_the_paper(name, field, paper):
    space = methods.get_method_class(name).Config().search_space()
    assert space[field] == paper


@pytest.mark.parametrize(("optimizer", "field", "paper"), PAPER_OPTIMIZER_RANGES)
def test_optimizer_space_matches_the_paper(optimizer, field, paper):
    for name in NN_METHODS:
        cfg = methods.get_method_class(name).Config(optimizer=optimizer)
        assert cfg.search_space()[field] == paper


def test_paper_fixed_members_are_not_tuned():
    """The paper fixes K (D.4: 10 for ensemble/bagging/dropout, 30 for Laplace/FSP/SWAG)."""
    for name, k in [
        ("nn_ensemble", 10),
        ("nn_bagging", 10),
        ("nn_dropout", 10),
        ("laplace", 30),
        ("fsp_laplace", 30),
        ("swag", 30),
    ]:
        config = methods.get_method_class(name).Config()
        assert config.n_members == k
        assert "n_members" not in config.search_space()
