"""The classification scores against independent computations: scikit-learn's log loss,
Brier score and accuracy, scipy's Spearman correlation of targets averaged draw by draw
(not through the linear formulas the scorer uses), a hand-counted ECE, and the jackknife
standard errors against the spread of the metrics over independent posteriors."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import rel_entr
from scipy.stats import entropy as scipy_entropy
from scipy.stats import spearmanr
from sklearn.metrics import accuracy_score, brier_score_loss, log_loss

from udora.scoring import classification as cls_scoring
from udora.scoring.registry import names, scored


def _posterior(rng, N=200, C=3, S=400, B=40):
    """Draws ``p_s`` (S, N, C) of a posterior whose concentration varies over the points,
    their expectations and B batch means."""
    centre = rng.dirichlet(np.ones(C), size=N)
    conc = np.exp(rng.uniform(0.0, 4.0, size=N))
    draws = np.stack([rng.dirichlet(conc[i] * centre[i] + 0.05, size=S) for i in range(N)], axis=1)
    batches = draws.reshape(B, S // B, N, C)
    pb = batches.mean(axis=1)
    hb = scipy_entropy(batches, axis=-1).mean(axis=1)
    qb = np.sum(batches**2, axis=-1).mean(axis=1)
    return draws, pb, hb, qb


def _prediction(rng, N=200, C=3, K=8):
    members = rng.dirichlet(np.ones(C) * 2.0, size=(K, N))
    q = members.mean(axis=0)
    au = scipy_entropy(members, axis=-1).mean(axis=0)
    eu = scipy_entropy(q, axis=-1) - au
    return members, q, au, eu


def test_oracle_metrics_match_targets_averaged_draw_by_draw():
    rng = np.random.default_rng(0)
    draws, pb, hb, qb = _posterior(rng)
    members, q, au, eu = _prediction(rng)
    y = rng.integers(0, 3, size=200)
    au_b = 1 - np.sum(members**2, -1).mean(0)
    eu_b = np.sum(members**2, -1).mean(0) - np.sum(q**2, -1)
    got = cls_scoring.score_arrays(
        prob_bar=pb.mean(0),
        exp_entropy=hb.mean(0),
        exp_square=qb.mean(0),
        y=y,
        prob=q,
        aleatoric=au,
        epistemic=eu,
        aleatoric_brier=au_b,
        epistemic_brier=eu_b,
    )
    # the targets, each draw's own quantity averaged over the draws
    eu_log = rel_entr(draws, q[None]).sum(-1).mean(0)  # E KL(p_f || q)
    au_log = scipy_entropy(draws, axis=-1).mean(0)
    pbar = draws.mean(0)
    mi = scipy_entropy(pbar, axis=-1) - au_log
    kl = rel_entr(pbar, q).sum(-1)
    eu_brier = np.sum((draws - q[None]) ** 2, -1).mean(0)
    au_brier = 1 - np.sum(draws**2, -1).mean(0)
    rho = lambda a, b: spearmanr(a, b).statistic  # noqa: E731
    expected = {
        "spearman_au": rho(au, au_log),
        "spearman_eu": rho(eu, eu_log),
        "spearman_total": rho(au + eu, au_log + eu_log),
        "spearman_eu_mi": rho(eu, mi),
        "spearman_eu_kl": rho(eu, kl),
        "spearman_au_brier": rho(au_b, au_brier),
        "spearman_eu_brier": rho(eu_b, eu_brier),
        "spearman_total_brier": rho(au_b + eu_b, au_brier + eu_brier),
        "kl_mean": kl.mean(),
        "accuracy_regret": pbar.max(1).mean() - pbar[np.arange(200), q.argmax(1)].mean(),
    }
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=1e-10), name
    assert set(got) == set(scored("classification"))


def test_realised_label_scores_match_scikit_learn():
    rng = np.random.default_rng(1)
    _, q, au, eu = _prediction(rng, N=500, C=4)
    y = rng.integers(0, 4, size=500)
    flat = dict(prob_bar=q, exp_entropy=au, exp_square=np.ones(500), y=y)
    got = cls_scoring.score_arrays(**flat, prob=q, aleatoric=au, epistemic=eu)
    assert got["nll"] == pytest.approx(log_loss(y, q, labels=range(4)), rel=1e-12)
    assert got["accuracy"] == pytest.approx(accuracy_score(y, q.argmax(1)))
    onehot = np.eye(4)[y]
    assert got["brier"] == pytest.approx(np.mean(np.sum((q - onehot) ** 2, axis=1)), rel=1e-12)
    # binary: the summed Brier score is twice scikit-learn's
    p1 = rng.uniform(size=300)
    q2 = np.stack([1 - p1, p1], axis=1)
    y2 = rng.integers(0, 2, size=300)
    got2 = cls_scoring.score_arrays(
        prob_bar=q2,
        exp_entropy=np.ones(300),
        exp_square=np.ones(300),
        y=y2,
        prob=q2,
        aleatoric=np.ones(300),
        epistemic=p1,
    )
    assert got2["brier"] == pytest.approx(2 * brier_score_loss(y2, p1), rel=1e-12)
    assert got2["nll"] == pytest.approx(log_loss(y2, p1), rel=1e-12)
    # no Brier-scale estimates: the Brier-side agreement is empty, not invented
    assert np.isnan(got2["spearman_eu_brier"]) and np.isnan(got2["spearman_au_brier"])


def test_expected_calibration_error_by_hand():
    """Six points in three of the 15 bins (0.6-0.667, 0.867-0.933, 0.933-1], counted by hand:
    bin (0.6, 0.667]: confidences 0.62, 0.65, correct 1 of 2 -> |0.5 - 0.635| * 2/6;
    bin (0.867, 0.933]: 0.9, 0.9, 0.9, all correct -> |1 - 0.9| * 3/6;
    bin (0.933, 1]: 1.0, wrong -> |0 - 1| * 1/6."""
    top = np.array([0.62, 0.65, 0.9, 0.9, 0.9, 1.0])
    prob = np.stack([top, 1 - top], axis=1)
    y = np.array([0, 1, 0, 0, 0, 1])
    expected = (abs(0.5 - 0.635) * 2 + abs(1 - 0.9) * 3 + 1.0) / 6
    assert cls_scoring.expected_calibration_error(prob, y) == pytest.approx(expected, abs=1e-12)


@pytest.mark.slow  # 3-14 s: the default set's budget
def test_jackknife_standard_errors_match_the_spread_over_independent_posteriors():
    """For one prediction, 150 independent sets of posterior draws: the standard
    deviation of each metric over the sets and the median jackknife standard error agree
    within 25 % (seed 2; at 150 sets the sd itself is known to about 6 %)."""
    rng = np.random.default_rng(2)
    N, C, B = 150, 3, 20
    centre = rng.dirichlet(np.ones(C), size=N)
    conc = np.exp(rng.uniform(0.5, 3.0, size=N))
    _, q, au, eu = _prediction(rng, N=N, C=C)
    values, ses = [], []
    for _ in range(150):
        draws = [rng.dirichlet(conc[i] * centre[i] + 0.1, size=B * 5) for i in range(N)]
        draws = np.stack(draws, axis=1)
        batches = draws.reshape(B, 5, N, C)
        pb = batches.mean(1)
        hb = scipy_entropy(batches, axis=-1).mean(1)
        qb = np.sum(batches**2, -1).mean(1)
        arrays = dict(prob=q, aleatoric=au, epistemic=eu)
        values.append(
            cls_scoring.score_arrays(
                prob_bar=pb.mean(0),
                exp_entropy=hb.mean(0),
                exp_square=qb.mean(0),
                y=np.zeros(N, int),
                **arrays,
            )
        )
        ses.append(
            cls_scoring.standard_errors_arrays(
                prob_batches=pb, entropy_batches=hb, square_batches=qb, **arrays
            )
        )
    for name in ("spearman_eu", "spearman_au", "spearman_eu_mi", "kl_mean", "nAURC_eu"):
        sd = np.std([v[name] for v in values], ddof=1)
        se = np.median([s[name] for s in ses])
        assert se == pytest.approx(sd, rel=0.25), (name, se, sd)


def test_the_classification_metrics_are_declared_for_the_kind():
    declared = set(names("classification"))
    assert {"spearman_eu", "spearman_au", "spearman_total", "nll", "ece"} <= declared
    assert "ece" not in names("regression") and "spearman_eu_var" not in declared
    assert names("classification", "ranked")[0] == "spearman_eu"
