"""Joint batches and the posterior over them (oracle.joint, oracle.truths.posterior_cross)
against a dense posterior covariance computed from a textbook kernel with numpy."""

from __future__ import annotations

import numpy as np
import pytest
from tiny_presets import dense_posterior_covariance, matern32_task

from udora.oracle.joint import DESIGNS, design_batches, joint_batches
from udora.oracle.shift import mahalanobis_distance, quintile_bins


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("joint")


@pytest.fixture(scope="module")
def task(folder):
    return matern32_task(folder, 150, 40, 4)


def test_posterior_cross_is_the_dense_posterior_covariance(task):
    C = dense_posterior_covariance(task)
    rows, cols = np.array([3, 7, 7, 140, 0]), np.arange(0, 150, 7)
    np.testing.assert_allclose(
        task.posterior_cross(rows, cols), C[np.ix_(rows, cols)], rtol=1e-7, atol=1e-9
    )
    same = task.posterior_cross(cols, cols)
    np.testing.assert_allclose(np.diag(same), task.post_var[cols], rtol=1e-7, atol=1e-10)


def test_posterior_cross_of_the_features_family_is_its_cov_times(folder):
    t = matern32_task(folder, 150, 40, 1, {"family": "features", "features": 64, "seed": 2})
    rows, cols = np.array([1, 5, 9]), np.arange(20)
    E = np.zeros((150, cols.size))
    E[cols, np.arange(cols.size)] = 1.0
    np.testing.assert_allclose(
        t.posterior_cross(rows, cols), t.posterior_cov_times(E)[rows], rtol=1e-8, atol=1e-12
    )
    np.testing.assert_allclose(np.diag(t.posterior_cross(cols, cols)), t.post_var[cols], rtol=1e-8)


def test_designs_follow_their_rules(task):
    per = 25
    idx, design = design_batches(task, tau=10, per_design=per)
    assert idx.shape == (3 * per, 10) and list(np.bincount(design)) == [per] * 3
    bins = quintile_bins(mahalanobis_distance(task.X))
    b = np.arange(per)
    for k in range(3):  # anchors stratified: batch b's anchor is in bin b mod 5
        np.testing.assert_array_equal(bins[idx[design == k, 0]], b % 5)
    dyadic = idx[design == DESIGNS.index("dyadic")]
    assert all(len(set(row)) <= 2 for row in dyadic)
    second = [sorted(set(row) - {row[0]}) for row in dyadic]
    pairs = {(bins[row[0]], bins[s[0]]) for row, s in zip(dyadic, second, strict=True) if s}
    assert len(pairs) >= 20  # the 25 ordered bin pairs, but where a draw repeated one anchor
    C = dense_posterior_covariance(task)
    corr = C / np.sqrt(np.outer(np.diag(C), np.diag(C)))
    for row in idx[design == DESIGNS.index("neighbour")]:
        a, rest = row[0], row[1:]
        others = np.delete(corr[a], a)
        # the tau - 1 largest correlations with the anchor, from the dense covariance
        np.testing.assert_allclose(np.sort(corr[a, rest]), np.sort(others)[-9:], atol=1e-8)
    random = idx[design == DESIGNS.index("random")]
    assert all(len(set(row)) == 10 for row in random)


def test_batches_are_deterministic_and_their_covariance_isdense_posterior_covariance(task):
    first = joint_batches(task, per_design=10)
    again = joint_batches(task, per_design=10)
    np.testing.assert_array_equal(first.idx, again.idx)
    C = dense_posterior_covariance(task)
    for row, S in zip(first.idx, first.post_cov, strict=True):
        np.testing.assert_allclose(S, C[np.ix_(row, row)], rtol=1e-7, atol=1e-9)
