"""Classification runs end to end on a tiny three-class preset: a run is scored by the
classification kind (its metrics recomputed here from the stored prediction with
scikit-learn and the oracle's stored arrays), a regression-only method is refused before
anything runs, and broken probabilities are one recorded failure naming the field."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import log_loss
from tiny_presets import tiny_classification_preset

from udora.experiments.run.checks import UsageError
from udora.experiments.run.execute import run_one
from udora.methods.base import MethodConfig, UQMethod
from udora.methods.classification.prediction import ClassificationPrediction
from udora.methods.registry import register, unregister
from udora.oracle.reading import arrays as read_npz


@pytest.fixture(scope="module")
def cls_preset(tmp_path_factory):
    root = tmp_path_factory.mktemp("clsrun")
    _, data = tiny_classification_preset(root)
    return root / "tinycls.yaml", data


@pytest.fixture(autouse=True)
def _own_task_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("UDORA_TASK_CACHE", str(tmp_path_factory.getbasetemp() / "task-cache"))


@pytest.mark.slow  # builds the tiny task's sampled oracle (~15 s)
def test_a_classification_run_is_scored_by_its_kind(cls_preset, tmp_path):
    preset, data = cls_preset
    result = run_one(preset, "blr_logistic", 0, {"n_samples": 30}, tmp_path / "res", data_dir=data)
    assert result.status == "ok", result.error
    record = json.loads((result.path / "result.json").read_text())
    assert record["kind"] == "classification"
    stored = read_npz(result.path / "predictions.npz")
    assert "member_probs" not in stored and stored["epistemic_brier"].shape == (90,)
    oracle = read_npz(next((tmp_path / "res" / "oracle").glob("*.npz")))
    q, y = stored["prob"], oracle["y"]
    assert record["metrics"]["nll"] == pytest.approx(log_loss(y, q, labels=range(3)))
    # the EU target from the stored expectations, E KL(p_f || q), by its definition
    eu_target = -oracle["entropy"] - np.sum(oracle["prob"] * np.log(q), axis=1)
    from scipy.stats import spearmanr

    rho = spearmanr(stored["epistemic"], eu_target).statistic
    assert record["metrics"]["spearman_eu"] == pytest.approx(rho, abs=1e-12)
    assert 0 < record["metrics_se"]["spearman_eu"] < 0.2
    assert "nll" not in record["metrics_se"]  # realised labels: no Monte Carlo error


def test_a_regression_method_is_refused_before_anything_runs(cls_preset, tmp_path):
    preset, data = cls_preset
    refusal = r"blr does not support classification tasks.*\(a conjugate Gaussian model"
    with pytest.raises(UsageError, match=refusal):
        run_one(preset, "blr", 0, None, tmp_path / "res", data_dir=data)
    assert not (tmp_path / "res").exists()


class _Unnormalised(UQMethod):
    """Returns class probabilities whose rows sum to 1.2."""

    kinds = ("classification",)
    Config = MethodConfig

    def fit(self, X, y, *, seed, knowledge=None):
        self.C_, self.fitted_ = knowledge.n_classes, True
        return self

    def predict(self, X):
        out = ClassificationPrediction(
            prob=np.full((X.shape[0], self.C_), 1 / self.C_),
            aleatoric=np.ones(X.shape[0]),
            epistemic=np.ones(X.shape[0]),
        )
        object.__setattr__(out, "prob", out.prob * 1.2)  # broken after it was built
        return out


@pytest.mark.slow  # builds the tiny task's sampled oracle (~15 s)
def test_probabilities_that_do_not_sum_to_one_are_the_runs_failure(cls_preset, tmp_path):
    preset, data = cls_preset
    register("unnormalised_cls")(_Unnormalised)
    try:
        result = run_one(preset, "unnormalised_cls", 0, None, tmp_path / "res", data_dir=data)
    finally:
        unregister("unnormalised_cls")
    assert result.status == "failed"
    assert "ClassificationPrediction.prob" in result.error and "sum to 1" in result.error


@pytest.mark.slow  # ~20 s: NUTS chains of the method's own
def test_gp_oracle_reaches_the_split_half_ceiling(cls_preset, tmp_path):
    """The reference samples the task's posterior again with chains of its own: its EU
    Spearman against the oracle reaches the oracle's own split-half agreement minus 0.01."""
    preset, data = cls_preset
    result = run_one(preset, "gp_oracle", 0, None, tmp_path / "res", data_dir=data)
    assert result.status == "ok", result.error
    from udora.experiments.run.execute import cached_task
    from udora.oracle.preset import load_preset

    task = cached_task(load_preset(preset), 0, data)
    ceiling = task.meta["diagnostics"]["split_half_spearman"]["mutual_information"]
    assert result.metrics["spearman_eu"] >= ceiling - 0.01
    assert result.metrics["kl_mean"] < 0.01


@pytest.mark.slow  # builds the tiny task's sampled oracle (~15 s)
def test_the_report_has_a_classification_leaderboard_of_seed_means(cls_preset, tmp_path):
    """Two configs at two seeds: the section's leaderboard holds each config's seed mean
    (one preset), the figure is written, and no regression table shows these runs; a GP
    reference's run is in the references' table, not in the leaderboard."""
    from udora.experiments.report.write import write_report

    preset, data = cls_preset
    out = tmp_path / "res"
    found = {}
    for alpha in (0.5, 2.0):
        for seed in (0, 1):
            r = run_one(preset, "blr_logistic", seed, {"alpha": alpha}, out, data_dir=data)
            assert r.status == "ok", r.error
            found.setdefault(alpha, []).append(r.metrics["spearman_eu"])
    reference = run_one(preset, "gp_approx", 0, {}, out, data_dir=data)
    assert reference.status == "ok", reference.error
    report = write_report(out, tmp_path / "rep").read_text()
    section = report.split("## Classification", 1)[1]
    ranked, references = section.split("GP references, not ranked", 1)
    assert "gp_approx" not in ranked and "blr_logistic" in ranked
    assert "gp_approx" in references.split("per preset (seed means)")[0]
    for alpha, values in found.items():
        row = next(line for line in section.splitlines() if f"alpha={alpha}" in line)
        cells = [c.strip() for c in row.split("|")]
        assert f"{np.mean(values):.3f}" in cells, (row, values)
    assert (tmp_path / "rep" / "classification_eu_calibration_risk_coverage.png").is_file()
    assert "## Per method and config" not in report  # the regression core: no runs of its kind
