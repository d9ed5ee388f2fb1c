"""Tuning on classification tasks: trials fit on the training sample alone (no posterior is
sampled), the validation log loss and Brier score recomputed with scikit-learn and numpy,
objectives and methods checked against the preset's kind, and each method paired with the
presets of its kinds."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import log_loss
from tiny_presets import one_tiny_preset, tiny_classification_preset

from udora.experiments.grid.bench import pair_methods
from udora.experiments.tuning import protocol as tuning
from udora.experiments.tuning import sweep_file
from udora.experiments.tuning.trials import load_trial, run_trial, validation_fields


@pytest.fixture
def cls_preset(tmp_path):
    root = tmp_path / "cls"
    root.mkdir()
    _, data = tiny_classification_preset(root)
    return root / "tinycls.yaml", data


@pytest.fixture
def no_posterior(monkeypatch):
    """Sampling a posterior fails the test: tuning must never build the oracle."""
    import udora.oracle.classification.task as task_module

    def refuse(*args, **kwargs):
        raise AssertionError("tuning sampled the posterior")

    monkeypatch.setattr(task_module, "sample_posterior", refuse)


def test_a_trial_scores_the_held_out_labels_without_the_oracle(cls_preset, no_posterior):
    path, data = cls_preset
    result = tuning.trial(path, "blr_logistic", 3, {"n_samples": 30}, "nll", data_dir=data)
    from udora.oracle.classification.task import build_sample

    sample = build_sample(str(path), 3, data_dir=data)
    fit, val = tuning.split_training(30, 3)
    assert np.array_equal(result.val_idx, val) and np.array_equal(result.fit_idx, fit)
    y, prob = sample.y_train[val], result.arrays["prob"]
    assert np.array_equal(result.arrays["targets"], y) and prob.shape == (6, 3)
    assert result.metric == "val_nll"
    assert result.value == pytest.approx(log_loss(y, prob, labels=[0, 1, 2]), rel=1e-12)
    brier = np.mean([np.sum((prob[i] - np.eye(3)[y[i]]) ** 2) for i in range(6)])
    assert result.scores["val_brier"] == pytest.approx(brier, rel=1e-12)
    assert result.scores["val_accuracy"] == np.mean(prob.argmax(axis=1) == y)
    by_brier = tuning.trial(path, "blr_logistic", 3, {"n_samples": 30}, "brier", data_dir=data)
    assert by_brier.metric == "val_brier" and by_brier.value == pytest.approx(brier, rel=1e-12)


def test_a_trial_record_keeps_every_score_and_no_oracle_metrics(cls_preset, no_posterior, tmp_path):
    path, data = cls_preset
    params = {"preset": str(path), "method": "blr_logistic", "seed": 0, "n_samples": 30}
    record = run_trial(tmp_path / "sweep", 0, params, str(data))
    assert record["status"] == "ok", record["error"]
    again = load_trial(tmp_path / "sweep", 0)
    assert again["oracle"] is None and again["value"] == again["val_nll"]
    assert set(validation_fields(again)) == {"val_nll", "val_brier", "val_ece", "val_accuracy"}
    from udora.oracle.reading import arrays as read_npz

    saved = read_npz(tmp_path / "sweep" / "trial-0" / "validation.npz")
    assert saved["prob"].shape == (6, 3) and saved["targets"].dtype.kind == "i"
    assert log_loss(saved["targets"], saved["prob"], labels=[0, 1, 2]) == pytest.approx(
        again["val_nll"], rel=1e-12
    )


def test_objectives_and_methods_are_checked_against_the_kind(cls_preset, tiny_preset):
    path, _ = cls_preset
    with pytest.raises(tuning.SweepConfigError, match=r"'rmse' for classification.*nll, brier"):
        sweep_file.sweep_config(str(path), "blr_logistic", objective="rmse")
    with pytest.raises(tuning.SweepConfigError, match=r"'brier' for regression"):
        sweep_file.sweep_config(str(tiny_preset[0]), "blr", objective="brier")
    with pytest.raises(tuning.SweepConfigError, match=r"blr does not support classification"):
        sweep_file.sweep_config(str(path), "blr")
    config = sweep_file.sweep_config(str(path), "blr_logistic", objective="brier")
    assert config["metric"] == {"name": "val_brier", "goal": "minimize"}


def test_each_method_is_paired_with_the_presets_of_its_kinds(cls_preset, tmp_path):
    cls_path = str(cls_preset[0])
    (tmp_path / "reg").mkdir()
    reg_path = str(one_tiny_preset(tmp_path / "reg")[0])
    pairs = pair_methods([reg_path, cls_path], ["blr", "blr_logistic", "nn_ensemble"])
    assert pairs == [
        (reg_path, "blr"),
        (reg_path, "nn_ensemble"),
        (cls_path, "blr_logistic"),
        (cls_path, "nn_ensemble"),
    ]
    # a method of neither kind keeps its pairs, so that resolving one names the refusal
    assert pair_methods([cls_path], ["blr"]) == [(cls_path, "blr")]
