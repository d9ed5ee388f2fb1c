"""The acquisition oracle (oracle.acquisition) against dense posterior updates: each value
recomputed by conditioning a textbook-kernel GP on the training sample plus the candidate
(a dense solve, not the rank-one algebra the oracle uses)."""

from __future__ import annotations

import numpy as np
import pytest
from tiny_presets import dense_posterior_covariance, matern32_task

from udora.oracle.acquisition import acquisition_oracle, batch_values, greedy_batch, split_pool


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    return matern32_task(tmp_path_factory.mktemp("acq"), 130, 30, 5)


@pytest.fixture(scope="module")
def oracle(task):
    return acquisition_oracle(task)


def test_the_split_is_the_pool_outside_the_training_sample(task):
    cand, ev = split_pool(task)
    outside = np.setdiff1d(np.arange(130), task.train_idx)
    assert np.array_equal(np.sort(np.concatenate([cand, ev])), outside)
    assert abs(ev.size - cand.size) <= 1
    again = split_pool(task)
    assert np.array_equal(again[0], cand) and np.array_equal(again[1], ev)


def test_each_value_is_a_dense_update_with_the_candidate(task, oracle):
    C0 = dense_posterior_covariance(task)
    noise = task.noise_var
    ev = oracle.evaluation
    for j in (0, 7, len(oracle.candidates) - 1):
        x = oracle.candidates[j]
        C1 = dense_posterior_covariance(task, extra=[x])
        vr = np.mean(np.diag(C0)[ev] - np.diag(C1)[ev])
        bald = 0.5 * np.log(C0[x, x] / C1[x, x])  # information about f(x)
        epig = np.mean(0.5 * np.log((np.diag(C0)[ev] + noise[ev]) / (np.diag(C1)[ev] + noise[ev])))
        assert oracle.variance_reduction[j] == pytest.approx(vr, rel=1e-6)
        assert oracle.bald[j] == pytest.approx(bald, rel=1e-6)
        assert oracle.epig[j] == pytest.approx(epig, rel=1e-6)


def test_batch_values_are_dense_updates_with_the_batch(task, oracle):
    batch = np.array([2, 9, 15, 30])
    found = batch_values(oracle, batch)
    x = oracle.candidates[batch]
    C0, C1 = dense_posterior_covariance(task), dense_posterior_covariance(task, extra=x)
    bald = 0.5 * (np.linalg.slogdet(C0[np.ix_(x, x)])[1] - np.linalg.slogdet(C1[np.ix_(x, x)])[1])
    vr = np.mean(np.diag(C0)[oracle.evaluation] - np.diag(C1)[oracle.evaluation])
    assert found["bald"] == pytest.approx(bald, rel=1e-6)
    assert found["variance_reduction"] == pytest.approx(vr, rel=1e-6)


@pytest.mark.parametrize("value", ["bald", "variance_reduction"])
def test_the_greedy_batch_takes_the_best_dense_update_each_step(task, oracle, value):
    chosen = greedy_batch(oracle, 3, value)
    ev, noise = oracle.evaluation, task.noise_var
    for step in range(3):
        before = dense_posterior_covariance(task, extra=oracle.candidates[chosen[:step]])
        gains = []
        for j, x in enumerate(oracle.candidates):
            if j in chosen[:step]:
                gains.append(-np.inf)
            elif value == "bald":
                gains.append(0.5 * np.log1p(before[x, x] / noise[x]))
            else:
                gains.append(np.mean(before[ev, x] ** 2) / (before[x, x] + noise[x]))
        assert chosen[step] == int(np.argmax(gains))
