"""The rankings (udora.experiments.rankings) against independent computations: scipy's
Friedman test, the studentised-range CD of Demsar (2006) from scipy, Holm's step-down
formula written out, win rates and ranks counted by hand, and the bootstrap's known mean
and variance when only presets are resampled."""

from __future__ import annotations

from itertools import product

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from udora.experiments.rankings.blocks import blocks
from udora.experiments.rankings.section import rankings, tied_with_best, write
from udora.experiments.rankings.stats import bootstrap_mean_ranks, holm, rank, win_rates
from udora.experiments.results.sections import ReportContext

METHODS = ("nn_ensemble", "laplace", "blr", "catboost_ps", "gp_oracle")


def table(n_presets=8, seeds=(0, 1, 2), seed=0, shift=(0.3, 0.2, 0.0, 0.1, 0.5)):
    """One row per run: EU Spearman = method shift + preset effect + noise; blr has no AU."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(n_presets):
        effect = rng.normal(0, 0.2)
        for s in seeds:
            for m, d in zip(METHODS, shift, strict=True):
                eu = d + effect + rng.normal(0, 0.1)
                rows.append(
                    {
                        "preset": f"p{p}",
                        "suite": "dev",
                        "method": m,
                        "config": m,
                        "seed": s,
                        "status": "ok",
                        "spearman_eu": eu,
                        "spearman_au": np.nan if m == "blr" else -eu,
                        "nll": -eu,
                    }
                )
    return pd.DataFrame(rows)


def test_blocks_leave_out_the_reference_the_constant_au_and_the_incomplete():
    t = table()
    t = t[~((t["config"] == "laplace") & (t["preset"] == "p3"))]  # laplace misses a preset
    b = blocks(t, "spearman_au", "higher")  # 7 presets x 3 configs beat 8 x 2
    assert list(b.means.columns) == ["catboost_ps", "laplace", "nn_ensemble"]
    assert b.presets_left_out == ("p3",) and "p3" not in b.means.index
    assert b.left_out == {
        "gp_oracle": "a GP reference",
        "blr": "no finite spearman_au on any ok run",
    }
    few = t[~((t["config"] == "laplace") & t["preset"].isin(["p3", "p4", "p5", "p6"]))]
    assert blocks(few, "spearman_au", "higher").left_out["laplace"] == (
        "no ok spearman_au on p3, p4, p5, p6"
    )  # 8 x 2 beat 4 x 3
    seed_means = t[t["config"] == "nn_ensemble"].groupby("preset")["spearman_au"].mean()
    np.testing.assert_allclose(b.means["nn_ensemble"], seed_means.loc[b.means.index], rtol=1e-12)


def test_a_failed_run_leaves_its_seed_out_of_the_mean():
    t = table()
    hit = (t["config"] == "blr") & (t["preset"] == "p0") & (t["seed"] == 1)
    t.loc[hit, "status"] = "failed"
    b = blocks(t, "spearman_eu", "higher")
    ok = t[(t["config"] == "blr") & (t["preset"] == "p0") & (t["seed"] != 1)]
    assert b.means.at["p0", "blr"] == pytest.approx(ok["spearman_eu"].mean(), rel=1e-12)
    assert np.isnan(b.seeds["p0"][b.seed_ids["p0"].index(1), list(b.means.columns).index("blr")])


def test_friedman_p_and_nemenyi_cd_match_scipy():
    t = table()
    r = rank(blocks(t, "spearman_eu", "higher"))
    ok = t[t["config"] != "gp_oracle"]
    m = ok.groupby(["preset", "config"])["spearman_eu"].mean().unstack()
    assert r.p_friedman == pytest.approx(stats.friedmanchisquare(*m.T.to_numpy()).pvalue, rel=1e-10)
    k, n = m.shape[1], m.shape[0]
    q = stats.studentized_range.ppf(0.95, k, np.inf) / np.sqrt(2)
    assert r.cd == pytest.approx(q * np.sqrt(k * (k + 1) / (6 * n)), rel=1e-4)  # Demsar's CD
    by_hand = (-m).rank(axis=1).mean()  # 1 = the highest EU Spearman
    np.testing.assert_allclose(r.summary["mean_rank"], by_hand[r.summary.index], rtol=1e-12)
    assert r.summary.index[0] == "nn_ensemble"  # the largest shift
    assert r.significant and not r.summary["tied_best"].all()  # the CD path is exercised
    best = r.summary["mean_rank"].iloc[0]
    np.testing.assert_array_equal(r.summary["tied_best"], r.summary["mean_rank"] - best <= r.cd)


def test_ties_share_the_average_rank_and_lower_is_better_for_nll():
    t = table()
    t.loc[t["config"] == "laplace", "nll"] = t.loc[t["config"] == "blr", "nll"].to_numpy()
    r = rank(blocks(t, "nll", "lower"))
    assert r.ranks["laplace"].tolist() == r.ranks["blr"].tolist()
    assert set(np.unique(r.ranks[["laplace", "blr"]] % 1)) == {0.5}
    assert r.summary.index[0] == "nn_ensemble"  # nll = -eu: the best EU is the best NLL


def test_win_rates_count_presets():
    b = blocks(table(), "spearman_eu", "higher")
    w = win_rates(b)
    x = b.means
    assert w.at["laplace", "blr"] == pytest.approx((x["laplace"] > x["blr"]).mean())
    off = ~np.eye(len(w), dtype=bool)
    np.testing.assert_allclose((w + w.T).to_numpy()[off], 1.0)


def test_the_bootstrap_over_presets_has_the_plug_in_mean_and_variance():
    t = table(n_presets=10, seeds=(0,))  # one seed: only presets are resampled
    b = blocks(t, "spearman_eu", "higher")
    boot = bootstrap_mean_ranks(b, n_boot=20000, seed=3)
    ranks = (-b.means).rank(axis=1)
    mean, var = ranks.mean().to_numpy(), ranks.var(ddof=0).to_numpy() / len(ranks)
    se = np.sqrt(var / boot.shape[0])
    assert np.all(np.abs(boot.mean(axis=0) - mean) <= 4 * se + 1e-12)
    np.testing.assert_allclose(boot.var(axis=0), var, rtol=0.05)  # 20000 draws: ~1 % sd
    again = bootstrap_mean_ranks(b, n_boot=20000, seed=3)
    np.testing.assert_array_equal(boot, again)  # one integer seed, no global state


def test_the_seed_level_matches_its_enumerated_distribution():
    """Six copies of one preset: the preset level adds nothing, and each drawn copy
    resamples its 3 seeds on its own, so the mean rank over the 6 slots has the mean of
    the rank over the 27 equally likely seed draws and a sixth of its variance."""
    t = table(n_presets=1)
    t = pd.concat([t.assign(preset=f"p{i}") for i in range(6)], ignore_index=True)
    b = blocks(t, "spearman_eu", "higher")
    grid = b.seeds["p0"]  # (3, C)
    draws = np.array([(-grid[list(rows)].mean(axis=0)) for rows in product(range(3), repeat=3)])
    ranks = stats.rankdata(draws, axis=1)  # (27, C)
    boot = bootstrap_mean_ranks(b, n_boot=20000, seed=2)
    se = np.sqrt(ranks.var(axis=0) / 6 / boot.shape[0])
    assert np.all(np.abs(boot.mean(axis=0) - ranks.mean(axis=0)) <= 4 * se + 1e-12)
    np.testing.assert_allclose(boot.var(axis=0), ranks.var(axis=0) / 6, rtol=0.06)


def test_holm_adjusts_the_secondary_metrics_only():
    found, _ = rankings(table())
    raw = {m: rank(blocks(table(), m, "higher" if m != "nll" else "lower")) for m in found}
    assert found["spearman_eu"].p_adjusted == raw["spearman_eu"].p_friedman
    sec = ["spearman_au", "nll"]
    p = np.array([raw[m].p_friedman for m in sec])
    order = np.argsort(p)
    step = np.maximum.accumulate(np.minimum(1.0, p[order] * (len(p) - np.arange(len(p)))))
    expected = np.empty_like(step)
    expected[order] = step
    np.testing.assert_allclose([found[m].p_adjusted for m in sec], expected, rtol=1e-12)
    assert (
        holm({"spearman_eu": raw["spearman_eu"]}, "spearman_eu")["spearman_eu"]
        is raw["spearman_eu"]
    )


def test_no_difference_ties_everyone_with_the_best():
    rng = np.random.default_rng(5)
    t = table(shift=(0, 0, 0, 0, 0))
    t["spearman_eu"] = rng.normal(size=len(t))
    r = rank(blocks(t, "spearman_eu", "higher"))
    assert r.p_friedman > 0.05 and r.summary["tied_best"].all()


def test_too_few_presets_are_not_ranked_and_the_section_says_so(tmp_path):
    t = table(n_presets=4)
    assert rank(blocks(t, "spearman_eu", "higher")) is None
    lines = write(ReportContext(tmp_path, tmp_path, t, {}))
    assert "a ranking needs 5 presets" in "\n".join(lines)
    assert tied_with_best(t) == {}


def test_the_section_lists_the_marks_and_draws_the_diagram(tmp_path):
    t = table()
    text = "\n".join(write(ReportContext(tmp_path, tmp_path, t, {})))
    r = rank(blocks(t, "spearman_eu", "higher"))
    tied = ", ".join(r.summary.index[r.summary["tied_best"]])
    assert "| EU Spearman | 8 | 4 | friedman |" in text and f"| {tied} |" in text
    assert "`gp_oracle` (a GP reference)" in text and "`blr` (no finite spearman_au" in text
    assert (tmp_path / "rank_cd_spearman_eu.png").stat().st_size > 1000
    marks = tied_with_best(t)
    assert set(marks) == set(r.summary.index) and marks["nn_ensemble"]["tied_best"]
    assert marks["nn_ensemble"]["presets"] == 8


def test_the_leaderboard_carries_the_mark_of_every_ranked_config():
    from udora.experiments.report.site import leaderboard_data

    t = table()
    rows = {r["config"]: r["rank"] for r in leaderboard_data(t)["rows"]}
    marks = tied_with_best(t)
    assert rows["gp_oracle"] is None  # the reference is not ranked
    assert {c: v for c, v in rows.items() if v is not None} == marks


def test_two_configs_use_scipys_two_sided_wilcoxon():
    t = table()
    t = t[t["config"].isin(["nn_ensemble", "blr"])]
    r = rank(blocks(t, "spearman_eu", "higher"))
    m = t.groupby(["preset", "config"])["spearman_eu"].mean().unstack()
    expected = stats.wilcoxon(m["blr"] - m["nn_ensemble"]).pvalue  # two-sided by default
    assert r.test == "wilcoxon" and r.p_friedman == pytest.approx(expected, rel=1e-12)
    assert r.summary["tied_best"].tolist() == [True, False]  # 8 of 8 presets: p = 2/256


def test_one_preset_that_one_config_has_does_not_push_the_others_out():
    t = table()
    extra = t[(t["config"] == "nn_ensemble") & (t["preset"] == "p0")].assign(preset="p99")
    b = blocks(pd.concat([t, extra]), "spearman_eu", "higher")
    assert "p99" not in b.means.index and b.means.shape == (8, 4)


def test_method_seed_variants_are_not_ranked():
    t = table().assign(config_base=lambda f: f["config"])
    variant = t[t["config"] == "blr"].assign(config="blr[method_seed=3]", config_base="blr")
    b = blocks(pd.concat([t, variant]), "spearman_eu", "higher")
    assert b.left_out["blr[method_seed=3]"] == "a method_seed variant (noise floor)"
    assert "blr[method_seed=3]" not in b.means.columns and "blr" in b.means.columns
