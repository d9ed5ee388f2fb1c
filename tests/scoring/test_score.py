"""score/curves on stand-in tasks: documented names, exact-GP reference values, wiring
against independent formulas, degenerate inputs and shape errors."""

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from udora.scoring import (
    curves,
    curves_arrays,
    gaussian_crps,
    observable_arrays,
    score,
    score_arrays,
)

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

DOCS = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"


def _task(n=400, seed=0):
    rng = np.random.default_rng(seed)
    f = rng.normal(size=n) * 3.0 + 10.0
    noise_var = rng.uniform(0.2, 2.0, size=n)
    post_var = rng.gamma(1.0, size=n) * 0.5
    post_mean = f + np.sqrt(post_var) * rng.normal(size=n)
    y = f + np.sqrt(noise_var) * rng.normal(size=n)
    return SimpleNamespace(f=f, y=y, noise_var=noise_var, post_mean=post_mean, post_var=post_var)


def _prediction(mean, aleatoric, epistemic, member_means=None):
    return SimpleNamespace(
        mean=mean,
        aleatoric=aleatoric,
        epistemic=epistemic,
        total=aleatoric + epistemic,
        member_means=member_means,
    )


def _exact_gp(task):
    return _prediction(task.post_mean, task.noise_var, task.post_var)


def _documented(section_start, section_end):
    text = DOCS.read_text()
    body = text[text.index(section_start) : text.index(section_end)]
    names = set()
    for line in body.splitlines():
        if line.startswith("| `"):
            names |= set(re.findall(r"`([A-Za-z0-9_<>]+)`", line.split("|")[1]))
    return names


def test_every_metric_and_curve_is_documented_and_nothing_else():
    task = _task()
    pred = _exact_gp(task)
    assert set(score(task, pred)) == _documented("## Agreement", "## Curves")
    documented = set()
    for name in _documented("## Curves", "## Across"):
        kinds = ("au", "eu", "total") if "<kind>" in name else ("",)
        documented |= {name.replace("<kind>", k) for k in kinds}
    assert set(curves(task, pred)) == documented


def test_exact_gp_reference_is_oracle_perfect():
    task = _task()
    s = score(task, _exact_gp(task))
    for key in ("spearman_au", "spearman_eu", "spearman_eu_var", "spearman_total"):
        assert s[key] == pytest.approx(1.0)
    for key in ("scale_ratio_au", "scale_ratio_eu", "scale_ratio_total"):
        assert s[key] == pytest.approx(1.0)
    for key in ("mse_au", "mse_eu", "mse_total", "mse_mean_post", "calib_abs_log_ratio_eu"):
        assert s[key] == pytest.approx(0.0, abs=1e-12)
    assert s["nAURC_eu"] == pytest.approx(1.0) and s["nAURC_total"] == pytest.approx(1.0)
    assert np.isnan(s["spearman_eu_bias"])  # the exact GP has no bias at all: constant target
    assert np.isnan(s["crps_fair"]) and np.isnan(s["spread_skill"])  # no members


def test_bias_metrics_are_nan_when_the_bias_is_round_off_only():
    # a mean equal to m up to round-off (as gp_oracle's, computed by another code path)
    # gives a bias target of 1e-26 against variances near 1: its agreements are undefined
    task = _task(seed=4)
    rng = np.random.default_rng(4)
    n = task.f.size
    off = task.post_mean * (1.0 + 1e-13 * rng.normal(size=n))
    s = score(task, _prediction(off, task.noise_var, task.post_var * (1 + 1e-13)))
    for key in (
        "spearman_eu_bias",
        "pearson_eu_bias",
        "spearman_eu_bias_crps",
        "spearman_eu_bias_nll",
        "pearson_eu_bias_nll",
    ):
        assert np.isnan(s[key]), key
    assert s["spearman_eu"] == pytest.approx(1.0, abs=1e-9)  # the rest is unaffected
    # a real bias (1e-4 of the sd) is kept, and agrees with scipy
    shifted = task.post_mean + 1e-4 * rng.normal(size=n)
    s = score(task, _prediction(shifted, task.noise_var, task.post_var))
    bias = (shifted - task.post_mean) ** 2
    assert s["spearman_eu_bias"] == pytest.approx(stats.spearmanr(task.post_var, bias).statistic)


def test_exact_gp_minimises_the_oracle_selective_utility():
    # the oracle form is the expected score under the posterior predictive, which the exact
    # GP reports: any other predictive must score at least as high (properness)
    task = _task(seed=1)
    gp = score(task, _exact_gp(task))["util_selective_oracle"]
    rng = np.random.default_rng(1)
    for scale_a, scale_e, shift in ((0.5, 1.0, 0.0), (1.0, 3.0, 0.0), (1.0, 1.0, 0.3), (2, 0, 0)):
        other = _prediction(
            task.post_mean + shift * rng.normal(size=task.f.size),
            scale_a * task.noise_var,
            scale_e * task.post_var,
        )
        assert gp <= score(task, other)["util_selective_oracle"]


def test_wiring_against_independent_formulas():
    task = _task(seed=2)
    rng = np.random.default_rng(2)
    n = task.f.size
    members = task.post_mean + np.sqrt(task.post_var) * rng.normal(size=(6, n))
    mu, e = members.mean(axis=0), members.var(axis=0, ddof=1)
    a = task.noise_var * rng.uniform(0.5, 1.5, size=n)
    s = score(task, _prediction(mu, a, e, members))
    eu = task.post_var + (mu - task.post_mean) ** 2
    risk = task.noise_var + eu
    assert s["mse_eu"] == pytest.approx(np.mean((e - eu) ** 2))
    assert s["spearman_eu"] == pytest.approx(stats.spearmanr(e, eu).statistic)
    assert s["pearson_total"] == pytest.approx(stats.pearsonr(a + e, risk).statistic)
    assert s["mse_mean_f"] == pytest.approx(np.mean((mu - task.f) ** 2))
    assert s["nll"] == pytest.approx(-np.mean(stats.norm.logpdf(task.y, mu, np.sqrt(a + e))))
    # CRPS risk target = expected CRPS under N(m, S2), here by Gauss-Hermite quadrature
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    s2 = task.noise_var + task.post_var
    crps_risk = sum(
        w * gaussian_crps(mu, a + e, task.post_mean + np.sqrt(s2) * z)
        for z, w in zip(nodes, weights / weights.sum(), strict=True)
    )
    assert s["spearman_total_crps"] == pytest.approx(
        stats.spearmanr(a + e, crps_risk).statistic, abs=1e-6
    )
    assert np.isfinite([s["crps_fair"], s["spread_skill"], s["top_decile_err_ratio"]]).all()
    # interval score at 90%, by hand from the Winkler formula; realised nAURC by its ranks
    half = stats.norm.ppf(0.95) * np.sqrt(a + e)
    lo, hi = mu - half, mu + half
    winkler = (hi - lo) + 20.0 * (np.maximum(lo - task.y, 0) + np.maximum(task.y - hi, 0))
    assert s["interval_score_90"] == pytest.approx(np.mean(winkler))
    loss = (mu - task.y) ** 2
    order = np.argsort(-e, kind="stable")  # most uncertain first: dropped first
    kept = loss[order][::-1].cumsum() / np.arange(1, n + 1)  # risk keeping the k most certain
    best = np.sort(loss).cumsum() / np.arange(1, n + 1)
    aurc, oracle_aurc, random_aurc = kept.mean(), best.mean(), loss.mean()
    assert s["nAURC_eu_realised"] == pytest.approx(
        (random_aurc - aurc) / (random_aurc - oracle_aurc), abs=1e-9
    )


def test_degenerate_predictions_give_nan_not_exceptions():
    task = _task(seed=3)
    n = task.f.size
    s = score(task, _prediction(task.post_mean, np.zeros(n), np.full(n, 0.5)))
    assert np.isnan(s["spearman_eu"]) and np.isnan(s["spearman_au"])  # constant estimates
    assert s["nAURC_eu"] == pytest.approx(0.0, abs=1e-12)  # ties: the random baseline
    assert np.isnan(s["calib_log_ratio_au"]) and s["scale_ratio_au"] == 0.0
    zero = score(task, _prediction(task.post_mean, np.zeros(n), np.zeros(n)))
    assert np.isnan(zero["nll"]) and np.isnan(zero["spearman_eu_crps"])
    assert zero["crps"] == pytest.approx(np.mean(np.abs(task.post_mean - task.y)))
    one_member = score(task, _prediction(task.f, task.noise_var, task.post_var, task.f[None]))
    assert np.isnan(one_member["crps_fair"])


def test_bad_shapes_raise_one_clear_error():
    task = _task(n=50)
    ok = _exact_gp(task)
    with pytest.raises(ValueError, match=r"score_arrays: `mean` must have shape \(N,\) with N=50"):
        score(task, _prediction(ok.mean[:, None], ok.aleatoric, ok.epistemic))
    with pytest.raises(ValueError, match=r"`member_means` must have shape \(K, N\) with N=50"):
        score(task, _prediction(ok.mean, ok.aleatoric, ok.epistemic, np.zeros((4, 49))))
    with pytest.raises(ValueError, match=r"curves_arrays: `f` must have shape \(N,\)"):
        curves(SimpleNamespace(**{**vars(task), "f": task.f[:, None]}), ok)
    arrays = {"f": task.f, "y": task.y, "noise_var": task.noise_var, "post_mean": task.post_mean}
    with pytest.raises(TypeError, match=r"curves_arrays: missing arrays \['post_var', 'mean'"):
        curves_arrays(**arrays)
    with pytest.raises(TypeError, match=r"unknown arrays \['mu'\]"):
        curves_arrays(
            **arrays,
            post_var=task.post_var,
            mean=ok.mean,
            aleatoric=ok.aleatoric,
            epistemic=ok.epistemic,
            mu=ok.mean,
        )


def test_score_is_score_arrays_on_the_objects():
    task = _task(n=60, seed=4)
    pred = _exact_gp(task)
    a = score(task, pred)
    b = score_arrays(
        **vars(task), mean=pred.mean, aleatoric=pred.aleatoric, epistemic=pred.epistemic
    )
    assert a.keys() == b.keys()
    np.testing.assert_equal(list(a.values()), list(b.values()))


def test_observable_metrics_need_only_the_outcomes():
    """What meta rescores on pool subsets: score_arrays' realised-outcome metrics, unmoved
    by the oracle's arrays (here replaced by unrelated ones), and every one of them."""
    import pandas as pd

    from udora.experiments.meta.taus import OBSERVABLE, goodness

    task = _task(n=90, seed=5)
    rng = np.random.default_rng(5)
    members = task.f + rng.normal(size=(4, 90))
    pred = _prediction(members.mean(axis=0), task.noise_var, members.var(axis=0, ddof=1), members)
    arrays = {
        "mean": pred.mean,
        "aleatoric": pred.aleatoric,
        "epistemic": pred.epistemic,
        "member_means": members,
    }
    seen = observable_arrays(y=task.y, **arrays)
    other = {k: rng.normal(size=90) for k in ("f", "post_mean")}
    other |= {k: rng.uniform(0.1, 1.0, size=90) for k in ("noise_var", "post_var")}
    for oracle in (vars(task), other):
        full = score_arrays(**{**oracle, "y": task.y}, **arrays)
        assert {k: full[k] for k in seen} == seen
    ranked = set(goodness(pd.DataFrame([seen]), OBSERVABLE))  # what meta can rank from them
    assert set(OBSERVABLE) - ranked == {"energy_score_block", "variogram_score_block"}
    assert seen["nll"] == pytest.approx(
        -np.mean(stats.norm.logpdf(task.y, pred.mean, np.sqrt(pred.total)))
    )


@pytest.mark.parametrize("with_members", [False, True])
def test_observable_metrics_of_rows_are_each_rows_own(with_members):
    """(R, N) inputs, as meta scores R subsets at once, give row r exactly what row r
    alone gives: with ties (a constant AU, repeated points), a NaN row and a constant-y row."""
    rng = np.random.default_rng(8)
    R, N, K = 6, 40, 5
    y = rng.normal(size=(R, N))
    member_means = y[None] + 0.5 * rng.normal(size=(K, R, N))
    mean = member_means.mean(axis=0)
    aleatoric = np.full((R, N), 0.3)
    epistemic = member_means.var(axis=0, ddof=1)
    mean[1, :10], epistemic[1, :10], y[1, :10] = mean[1, 0], epistemic[1, 0], y[1, 0]  # ties
    epistemic[2, 3] = np.nan  # a non-finite row: NaN where the row's metric is undefined
    y[3] = 1.5  # constant outcomes: undefined utilities
    x = member_means if with_members else None
    both = observable_arrays(
        y=y, mean=mean, aleatoric=aleatoric, epistemic=epistemic, member_means=x
    )
    for r in range(R):
        one = observable_arrays(
            y=y[r],
            mean=mean[r],
            aleatoric=aleatoric[r],
            epistemic=epistemic[r],
            member_means=None if x is None else x[:, r],
        )
        for name, value in one.items():
            assert isinstance(value, float)
            np.testing.assert_allclose(
                both[name][r], value, rtol=1e-12, atol=1e-14, err_msg=f"{name}, row {r}"
            )
    assert np.isnan(both["nll"][2]) and np.isnan(both["util_topk"][3])
