"""The two classification presets whose tables ship with udora build at seed 0 with their
diagnostics passing, and their targets are stable across chains (slow: ~3 minutes).

Split-half stability: the mutual information and the AU estimated from chains 1-2 and
from chains 3-4 rank the pool alike, Spearman >= 0.99 for both."""

import numpy as np
import pytest
from scipy.stats import spearmanr

from udora.oracle.classification.targets import entropy
from udora.oracle.classification.task import build_task
from udora.oracle.preset import load_preset

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", ["banknote", "vehicle"])
def test_a_shipped_preset_builds_and_is_stable_across_chains(name, monkeypatch):
    monkeypatch.delenv("UDORA_DATA_DIR", raising=False)  # the shipped table
    task = build_task(load_preset(name), 0)
    diag = task.meta["diagnostics"]
    assert diag["failures"] == []
    assert diag["per_point"]["min_ess_bulk"] >= 1000 and diag["per_point"]["max_rhat"] < 1.02
    # independently of the sampler's own check: the stored batch means, chain-major
    m, half = task.moments, task.moments.n_batches // 2
    mi, au = [], []
    for rows in (slice(0, half), slice(half, None)):
        pbar, h = m.prob_batches[rows].mean(0), m.entropy_batches[rows].mean(0)
        mi.append(entropy(pbar) - h)
        au.append(h)
    assert spearmanr(mi[0], mi[1]).statistic >= 0.99
    assert spearmanr(au[0], au[1]).statistic >= 0.99
    np.testing.assert_allclose(task.moments.prob.sum(axis=1), 1.0, rtol=1e-12)
