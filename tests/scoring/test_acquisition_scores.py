"""A method's acquisition scores (scoring.acquisition): the posterior's own estimates give
BALD exactly, the AU floor makes a method without AU rank by EU, the Spearman metrics are
scipy's and the batch shares are the joint values of the top-k over the greedy batch's."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr
from tiny_presets import matern32_task

from udora.oracle.acquisition import acquisition_oracle, batch_values, greedy_batch
from udora.scoring.acquisition import acquisition_metrics, acquisition_names, method_scores


@pytest.fixture(scope="module")
def task_and_oracle(tmp_path_factory):
    task = matern32_task(tmp_path_factory.mktemp("acqs"), 140, 30, 6)
    return task, acquisition_oracle(task)


def test_the_posteriors_own_estimates_give_bald_exactly(task_and_oracle):
    task, oracle = task_and_oracle
    c = oracle.candidates
    scores = method_scores(task.noise_var[c], task.post_var[c])
    np.testing.assert_allclose(scores["bald"], oracle.bald, rtol=1e-7)
    m = acquisition_metrics(oracle, task.noise_var, task.post_var, k=10)
    assert set(m) == set(acquisition_names())
    assert m["acq_spearman_bald_bald"] == pytest.approx(1.0, abs=1e-12)
    for name in ("eu", "bald"):  # against scipy, for each exact value
        for value in ("variance_reduction", "bald", "epig"):
            rho = spearmanr(scores[name], oracle.value(value)).statistic
            assert m[f"acq_spearman_{name}_{value}"] == pytest.approx(rho, abs=1e-12)
    top = np.argsort(-scores["bald"], kind="stable")[:10]
    for value in ("bald", "variance_reduction"):
        best = batch_values(oracle, greedy_batch(oracle, 10, value))[value]
        share = batch_values(oracle, top)[value] / best
        assert m[f"acq_batch_bald_{value}"] == pytest.approx(share, rel=1e-12)
        assert 0 < share <= 1 + 1e-9  # the greedy batch beats the top-10 here


def test_without_aleatoric_variance_bald_ranks_by_eu(task_and_oracle):
    task, oracle = task_and_oracle
    zero = acquisition_metrics(oracle, np.zeros_like(task.post_var), task.post_var, k=5)
    for value in ("variance_reduction", "bald", "epig"):
        assert zero[f"acq_spearman_bald_{value}"] == zero[f"acq_spearman_eu_{value}"]
    # a heteroscedastic AU changes the order: largest EU is not BALD
    c = oracle.candidates
    assert spearmanr(oracle.bald, task.post_var[c]).statistic < 0.999
